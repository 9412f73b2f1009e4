"""The session's temp check (``tests.temp_check``) fails a session for its own leaks only.

Each case runs a small pytest session in a subprocess with the plugin loaded, as the suite
loads it, and reads its exit status and report.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_benchmarks.isolation.scratch import ROOT_MAX
from tests.support import REPO
from tests.temp_check import SYSTEM_TEMP

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def system_temp() -> Iterator[Path]:
    """The inner sessions' system temp folder: a folder of this test's, so what they leave
    (on purpose) never reaches this session's own check. Short, as a system temp folder
    is: an inner session's own folder in it must leave the harness room for its browsers'
    socket paths, or the harness would put its attempts' folders in /tmp instead."""
    folder = Path(tempfile.mkdtemp(prefix="", dir=SYSTEM_TEMP))
    assert len(str(folder / "abt-12345678")) <= ROOT_MAX
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _session(tmp_path: Path, system_temp: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(
        "import os, subprocess, sys, tempfile\nfrom pathlib import Path\n\n" + body
    )
    env = {
        **os.environ,
        "TMPDIR": str(system_temp),
        "PYTHONPATH": str(REPO),
        "SYSTEM_TEMP": str(system_temp),
    }
    env.pop("PYTEST_DEBUG_TEMPROOT", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.temp_check", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )


def test_another_programs_file_in_the_system_temp_folder_does_not_fail_it(
    tmp_path: Path, system_temp: Path
) -> None:
    """Another program on the machine (it does not inherit the session's TMPDIR) writes
    into the system temp folder while the session runs."""
    proc = _session(
        tmp_path,
        system_temp,
        "def test_machine_busy():\n"
        "    env = {'PATH': os.environ['PATH']}\n"
        '    code = \'open(sys.argv[1] + "/imp.prof", "w").write("x")\'\n'
        "    subprocess.run([sys.executable, '-c', 'import sys; ' + code,"
        " os.environ['SYSTEM_TEMP']], env=env, check=True)\n",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (system_temp / "imp.prof").exists()  # written, and not the session's concern
    assert not [p for p in system_temp.iterdir() if p.name.startswith("abt-")]


def test_a_file_the_harness_leaves_in_its_temp_folder_fails_it(
    tmp_path: Path, system_temp: Path
) -> None:
    """The harness's own code, as a test drives it: an attempt's temp folder taken and
    never given back."""
    proc = _session(
        tmp_path,
        system_temp,
        "from agent_benchmarks.isolation.scratch import AttemptTempFolders\n\n"
        "def test_attempt_folder_leaked(tmp_path):\n"
        "    AttemptTempFolders(tmp_path / 'run').take()\n",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "TEMP FOLDER CHECK FAILED" in proc.stdout
    assert "agent-benchmarks-" in proc.stdout
    # The session's folder is kept for inspection, with the leak in it, and nothing of
    # the leak went to the system temp folder.
    (kept,) = [p for p in system_temp.iterdir() if p.name.startswith("abt-")]
    assert [p.name[:17] for p in kept.iterdir()] == ["agent-benchmarks-"]


def test_a_program_that_ignores_tmpdir_and_uses_a_project_name_fails_it(
    tmp_path: Path, system_temp: Path
) -> None:
    """A program the tests start that writes into the system temp folder itself, under a
    name this project's programs use."""
    name = f"org.chromium.Chromium.{uuid.uuid4().hex[:6]}"
    proc = _session(
        tmp_path,
        system_temp,
        "def test_chromium_profile_in_system_temp():\n"
        f"    (Path(os.environ['SYSTEM_TEMP']) / {name!r}).mkdir()\n",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert name in proc.stdout


def test_a_clean_session_removes_its_own_temp_folder(tmp_path: Path, system_temp: Path) -> None:
    proc = _session(
        tmp_path,
        system_temp,
        "def test_uses_temp():\n"
        "    with tempfile.TemporaryDirectory() as d:\n"
        "        assert d.startswith(os.environ['SYSTEM_TEMP'] + '/abt-')\n"
        "        subprocess.run(['sh', '-c', 'test \"$TMPDIR\" = \"' + tempfile.gettempdir()"
        " + '\"'], check=True)\n",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(system_temp.iterdir()) == []


def test_this_session_runs_in_a_temp_folder_of_its_own() -> None:
    here = Path(tempfile.gettempdir())
    assert here.name.startswith("abt-") and os.environ["TMPDIR"] == str(here)


def test_a_killed_sessions_folder_is_removed_by_the_next_and_a_live_ones_kept(
    tmp_path: Path, system_temp: Path
) -> None:
    """A session killed outright keeps its folder; the next session removes it, but never
    the folder of a session still running (it holds a lock on it), nor one just made."""
    hour_ago = time.time() - 3700
    dead, live, new = (system_temp / f"abt-{name}" for name in ("dead0000", "live0000", "new00000"))
    for folder in (dead, live, new):
        folder.mkdir()
        (folder / "left-by-a-test").write_text("x")
    for folder in (dead, live):
        os.utime(folder, (hour_ago, hour_ago))
    holder = os.open(live, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        proc = _session(tmp_path, system_temp, "def test_nothing():\n    pass\n")
    finally:
        os.close(holder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in system_temp.iterdir()) == ["abt-live0000", "abt-new00000"]

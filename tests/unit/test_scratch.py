"""Each attempt's private temp folder: given to its programs empty, emptied when the attempt
ends (also when a detached process outlives it) and reused by the run's next attempt,
removed when the run ends (at once, for an attempt run on its own), and swept by the next
session of a run whose harness was killed."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psutil

from agent_benchmarks.isolation.scratch import (
    PREFIX,
    ROOT_MAX,
    new_attempt_tmpdir,
    run_key,
    run_tmpdir_prefix,
    sweep_attempt_tmpdirs,
    temp_root,
)
from agent_benchmarks.runner.engine import execute
from agent_benchmarks.runner.executor import LocalPool
from agent_benchmarks.runner.plan import AttemptKey
from tests.unit.test_runner import PythonBackend, _runner

# The agent reports the TMPDIR it was given and fills it: a file, a nested folder, a socket
# folder, as a browser and agent-browser would.
FILL_TMP = (
    "import os, pathlib; t = pathlib.Path(os.environ['TMPDIR']); "
    "(t / 'profile' / 'Default').mkdir(parents=True); "
    "(t / 'profile' / 'Default' / 'x').write_text('1'); "
    "(t / 'sockets').mkdir(); print(t); print('<ANSWER>7</ANSWER>')"
)


def _this_run(run_dir: Path) -> list[Path]:
    return sorted(Path(tempfile.gettempdir()).glob(f"{PREFIX}{run_key(run_dir)}-*"))


def test_the_attempt_gets_its_own_temp_folder_and_it_is_removed(tmp_path: Path) -> None:
    runner = _runner(tmp_path, PythonBackend(FILL_TMP))
    row = runner(AttemptKey("g1-plain", 1, 1), threading.Event())
    assert row.status == "ok", row.error
    assert (tmp_path / "attempts" / "g1-plain.1.1").is_dir()  # the attempt folder stays
    assert _this_run(tmp_path) == []  # its temp folder, which the agent filled, does not


def test_the_temp_folder_is_named_after_the_run_and_passed_to_the_backend(
    tmp_path: Path,
) -> None:
    seen: list[Path] = []

    class Recording(PythonBackend):
        def command(self, prepared):  # type: ignore[no-untyped-def]
            seen.append(prepared.tmpdir)
            assert prepared.tmpdir.is_dir()  # made before the backend builds its command
            return super().command(prepared)

    runner = _runner(tmp_path, Recording("import os; print(os.environ['TMPDIR'])"))
    runner(AttemptKey("g1-plain", 1, 1), threading.Event())
    runner(AttemptKey("g1-plain", 2, 1), threading.Event())
    assert len(seen) == 2 and seen[0] != seen[1]
    for folder in seen:
        assert folder.parent == Path(tempfile.gettempdir())
        assert folder.name.startswith(f"{PREFIX}{run_key(tmp_path)}-")
        assert not folder.exists()


def test_the_folder_goes_even_when_the_agent_is_killed_at_the_deadline(tmp_path: Path) -> None:
    code = FILL_TMP.replace("print('<ANSWER>7</ANSWER>')", "import time; time.sleep(60)")
    runner = _runner(tmp_path, PythonBackend(code))
    runner.timeout_s = 1.5
    row = runner(AttemptKey("g1-plain", 1, 1), threading.Event())
    assert row.timed_out
    assert _this_run(tmp_path) == []


def test_a_backend_that_raises_leaves_no_folder(tmp_path: Path) -> None:
    runner = _runner(tmp_path, PythonBackend(fail=RuntimeError("boom")))
    row = runner(AttemptKey("g1-plain", 1, 1), threading.Event())
    assert row.error_class == "harness"
    assert _this_run(tmp_path) == []


def _reports(run_dir: Path, attempts: int) -> list[str]:
    """What each attempt's agent wrote to report.txt in its attempt folder (its cwd)."""
    return [
        (run_dir / "attempts" / f"g1-plain.{n}.1" / "report.txt").read_text()
        for n in range(1, attempts + 1)
    ]


def test_within_a_run_a_folder_is_emptied_and_given_to_the_next_attempt(tmp_path: Path) -> None:
    """The agent reports what its TMPDIR held when it started, then fills it and opens it to
    others: the next attempt gets the same folder back empty and private, and the run's end
    removes it."""
    code = (
        "import os; t = os.environ['TMPDIR']; open('report.txt', 'w').write("
        "f'{t} {sorted(os.listdir(t))} {oct(os.stat(t).st_mode & 0o777)}'); "
        "os.chmod(t, 0o777)\n" + FILL_TMP
    )
    runner = _runner(tmp_path, PythonBackend(code))
    keys = [AttemptKey("g1-plain", n, 1) for n in (1, 2, 3, 4)]
    outcome = execute(keys, runner, LocalPool(1), tmp_path / "predictions.jsonl", "t")
    assert outcome.written == 4 and outcome.counts["ok"] == 4
    reports = _reports(tmp_path, 4)
    # One worker has two attempt threads (one sets up while the other's agent runs): at
    # most two folders for four attempts.
    assert len({report.split()[0] for report in reports}) <= 2, reports
    assert all(report.endswith("[] 0o700") for report in reports), reports  # empty, private
    assert _this_run(tmp_path) == []


def test_a_folder_its_agent_removed_is_not_reused(tmp_path: Path) -> None:
    code = (
        "import os, shutil; open('report.txt', 'w').write(os.environ['TMPDIR']); "
        "shutil.rmtree(os.environ['TMPDIR']); print('<ANSWER>7</ANSWER>')"
    )
    runner = _runner(tmp_path, PythonBackend(code))
    keys = [AttemptKey("g1-plain", n, 1) for n in (1, 2)]
    outcome = execute(keys, runner, LocalPool(1), tmp_path / "predictions.jsonl", "t")
    assert outcome.counts["ok"] == 2
    first, second = _reports(tmp_path, 2)
    assert first != second  # the second attempt got a new folder
    assert _this_run(tmp_path) == []


def test_a_folder_its_agent_replaced_by_a_link_is_emptied_without_following_it(
    tmp_path: Path,
) -> None:
    """An agent (root, here) that removes its TMPDIR and leaves a link to another folder in
    its place: emptying for the next attempt removes the link, never what it points to."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the attempt's")
    code = (
        "import os, shutil; t = os.environ['TMPDIR']; open('report.txt', 'w').write(t); "
        f"shutil.rmtree(t); os.symlink({str(elsewhere)!r}, t); print('<ANSWER>7</ANSWER>')"
    )
    runner = _runner(tmp_path / "run", PythonBackend(code))
    keys = [AttemptKey("g1-plain", n, 1) for n in (1, 2)]
    outcome = execute(keys, runner, LocalPool(1), tmp_path / "run" / "predictions.jsonl", "t")
    assert outcome.counts["ok"] == 2
    assert (elsewhere / "keep.txt").read_text() == "not the attempt's"
    first, second = _reports(tmp_path / "run", 2)
    assert first != second  # the link was not given out as a folder
    assert _this_run(tmp_path / "run") == []


def test_sweep_removes_only_this_runs_leftovers(tmp_path: Path) -> None:
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    left_a = [new_attempt_tmpdir(run_a) for _ in range(2)]
    (left_a[0] / "profile").mkdir()
    (left_a[0] / "profile" / "lock").write_text("x")
    other = new_attempt_tmpdir(run_b)
    try:
        assert sorted(sweep_attempt_tmpdirs(run_a)) == sorted(left_a)
        assert not any(p.exists() for p in left_a)
        assert other.is_dir()  # another run's live folder is never touched
        assert sweep_attempt_tmpdirs(run_a) == []
    finally:
        sweep_attempt_tmpdirs(run_b)
    assert not other.exists()


def test_a_killed_harness_leftovers_are_swept_by_the_next_session(tmp_path: Path) -> None:
    """A harness killed with SIGKILL mid-attempt leaves its attempt's temp folder; the next
    session of the same run (what --resume runs) removes it before starting."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from tests.unit.test_runner import PythonBackend, _runner\n"
        "from agent_benchmarks.runner.plan import AttemptKey\n"
        f"r = _runner(Path({str(run_dir)!r}), PythonBackend({FILL_TMP!r}.replace("
        "\"print('<ANSWER>7</ANSWER>')\", 'import time; time.sleep(60)')))\n"
        "threading.Thread(target=r, args=(AttemptKey('g1-plain', 1, 1), threading.Event()),"
        " daemon=True).start()\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    harness = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert harness.stdout is not None and harness.stdout.readline().strip() == "started"
        for _ in range(200):  # until the agent has filled its folder
            left = _this_run(run_dir)
            if left and (left[0] / "profile" / "Default" / "x").exists():
                break
            threading.Event().wait(0.05)
        assert len(left) == 1 and (left[0] / "profile" / "Default" / "x").exists()
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        if harness.stdout is not None:
            harness.stdout.close()
    # The agent ran in its own session and outlived the harness: end it (the folder stays).
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("TMPDIR") == str(left[0]):
                proc.kill()
    assert _this_run(run_dir) == left  # the kill left it behind
    runner = _runner(run_dir, PythonBackend())
    outcome = execute(
        [AttemptKey("g1-plain", 1, 2)],
        runner,
        LocalPool(1),
        run_dir / "predictions.jsonl",
        "t",
    )
    assert outcome.written == 1
    assert _this_run(run_dir) == []


def test_a_temp_root_too_long_for_the_sockets_below_it_gives_way_to_tmp(monkeypatch) -> None:
    """A 23-character TMPDIR leaves an attempt's Chromium socket its 107 bytes, not a Ray
    session's plasma store socket, which is deeper; the run's leftovers are looked for where
    its folders went."""
    root = Path(tempfile.mkdtemp(prefix="s" * 10, dir="/tmp"))  # /tmp/ssssssssssXXXXXXXX
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(root))
        assert len(str(root)) == 23 <= ROOT_MAX
        assert temp_root() == root
        assert temp_root(longest_below=100) == Path("/tmp")
        assert run_tmpdir_prefix(Path("run")).startswith(f"{root}/{PREFIX}")
        monkeypatch.setattr(tempfile, "tempdir", str(root / ("d" * 40)))
        assert temp_root() == Path("/tmp")
        assert run_tmpdir_prefix(Path("run")).startswith(f"/tmp/{PREFIX}")
    finally:
        root.rmdir()

"""A pytest plugin: the session fails if it leaves anything in a temp folder.

What the suite's programs leave in temp (browser profiles, agent-browser sockets,
browser-use downloads, attempt folders) is a leak a user would have too. The machine is
shared, though: other programs write into the system temp folder while the suite runs, and
they must never fail it. So the session gets a temp folder of its own: ``TMPDIR`` points
there for pytest and for every program a test starts (the harness, its agents, browsers,
servers), and whatever is left in it at the end is this session's leak. In the system temp
folder itself only the names this project's programs make are looked at (a program that
ignored ``TMPDIR`` would leave them there), and only those that appeared during the session.

pytest's own folder (``pytest-of-<user>``: ``tmp_path``, kept for the last three runs so
failures can be inspected) stays in the system temp folder, as before, and is not checked.
"""

from __future__ import annotations

import fcntl
import fnmatch
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

# What this project's programs name their temp entries: the attempts' folders, Chromium's
# profiles and crash files, agent-browser's, browser-use's and Playwright's, Ray's staging,
# the engine benchmark's scratch.
PROJECT_NAMES = (
    "agent-benchmarks-*",
    "org.chromium.Chromium.*",
    ".org.chromium.Chromium.*",
    "agent-browser-*",
    "browser-use-*",
    "playwright*",
    "lightpanda*",
    "ab-ray-*",
    "ab-engine-*",
)
_DEAD_AFTER_S = 3600
SESSION_PREFIX = "abt-"  # a test session's own temp folder (short: socket paths live in it)
# The system temp folder, as it was before the session took a folder of its own: for a
# test that needs a folder whose path is shorter than one inside the session's.
SYSTEM_TEMP = Path(tempfile.gettempdir())


def _remove_dead_sessions_folders(system: Path) -> None:
    """A session killed outright (SIGKILL, a CI job's timeout) never reaches its end and
    keeps its folder. A live session holds a lock on its folder; a later session removes
    the unlocked ones older than an hour (a session that has only just made its folder has
    not locked it yet)."""
    for folder in system.glob(f"{SESSION_PREFIX}*"):
        try:
            if time.time() - folder.stat().st_mtime < _DEAD_AFTER_S:
                continue
            fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # gone meanwhile, or not ours to read
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(folder, ignore_errors=True)
        except BlockingIOError:
            pass  # a live session's
        finally:
            os.close(fd)


class TempCheck:
    def __init__(self) -> None:
        self.system = SYSTEM_TEMP
        _remove_dead_sessions_folders(self.system)
        self.own = Path(tempfile.mkdtemp(prefix=SESSION_PREFIX, dir=self.system))
        # Held until this process ends: the folder is a live session's while it is locked.
        self._alive = os.open(self.own, os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(self._alive, fcntl.LOCK_EX)
        self.system_before = set(os.listdir(self.system))
        # pytest's tmp_path stays where it was; everything else goes to the session's folder.
        os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", str(self.system))
        os.environ["TMPDIR"] = str(self.own)
        tempfile.tempdir = None  # tempfile reads TMPDIR again

    def left(self) -> list[str]:
        """What the session left: everything in its own folder, and the project's names
        that appeared in the system temp folder."""
        own = [str(self.own / name) for name in sorted(os.listdir(self.own))]
        new = set(os.listdir(self.system)) - self.system_before
        ours = sorted(n for n in new if any(fnmatch.fnmatch(n, p) for p in PROJECT_NAMES))
        return own + [str(self.system / name) for name in ours]


_check: TempCheck | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _check
    if _check is None:
        _check = TempCheck()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _check is None:
        return
    left = [] if session.config.option.collectonly else _check.left()
    if not left:
        shutil.rmtree(_check.own, ignore_errors=True)
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        f"the suite left {len(left)} temp entr{'y' if len(left) == 1 else 'ies'}: "
        f"{', '.join(left[:20])} (the session's own temp folder {_check.own} is kept)"
    )
    if reporter is not None:
        reporter.write_line(f"TEMP FOLDER CHECK FAILED: {message}", red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED

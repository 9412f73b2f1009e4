"""Each attempt's private temp folder, in the system temp folder, named after its run.

An attempt's programs write to temp: browser profiles, agent-browser's sockets,
browser-use's downloads, Chromium's crash-handler files. They all get this folder as their
``TMPDIR`` (and their socket folder inside it). It lives in the system temp folder rather
than the run folder because socket paths must stay under 104 bytes however deep the run
folder is.

While a run executes, an attempt's folder is emptied when the attempt ends (its processes
all gone) and kept for a later attempt; the run removes its folders when it ends. A folder
made and removed per attempt was the costliest file work of an attempt: on ext4 without a
journal every new inode is allocated past those deleted in the last one to six minutes,
so each removal made the following attempts' folders slower to create.

The name carries a digest of the run folder, so a harness that was killed outright (its
folders never removed) is cleaned up by the next ``--resume`` of that run, and by nothing
else: another run's live folders are never touched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "agent-benchmarks-"
# Chromium makes its singleton socket at $TMPDIR/.org.chromium.Chromium.XXXXXX/
# SingletonSocket, and a socket's path holds at most 107 bytes; an attempt folder's name
# (PREFIX, the run's key, mkdtemp's 8 characters) takes 35 of them. A longer temp root
# (a deep TMPDIR) leaves Chromium unable to start, each of its tool calls failing.
_CHROMIUM_SOCKET_TAIL = len("/.org.chromium.Chromium.XXXXXX/SingletonSocket")
_ATTEMPT_FOLDER = len(f"/{PREFIX}12345678-12345678")
ROOT_MAX = 107 - _CHROMIUM_SOCKET_TAIL - _ATTEMPT_FOLDER
SHORT_ROOT = Path("/tmp")


def temp_root(longest_below: int = 107 - ROOT_MAX) -> Path:
    """Where attempt folders go: the temp folder (``TMPDIR``), or ``/tmp`` when that path is
    too long for the sockets made in it, whose paths below it take up to ``longest_below``
    bytes (by default an attempt folder's Chromium socket)."""
    root = Path(tempfile.gettempdir())
    if len(str(root)) + longest_below <= 107 or not SHORT_ROOT.is_dir():
        return root
    return SHORT_ROOT


def temp_root_warning() -> str | None:
    """What a run says when its attempt folders cannot go in ``TMPDIR``."""
    root = Path(tempfile.gettempdir())
    if temp_root() == root:
        return None
    return (
        f"TMPDIR {root} is {len(str(root))} characters, too long for the socket paths of "
        f"the attempts' browsers (at most {ROOT_MAX}): their temp folders go in {SHORT_ROOT}"
    )


def run_key(run_dir: Path) -> str:
    return hashlib.sha256(str(run_dir.absolute()).encode()).hexdigest()[:8]


def run_tmpdir_prefix(run_dir: Path) -> str:
    """The path every attempt temp folder of the run starts with."""
    return str(temp_root() / f"{PREFIX}{run_key(run_dir)}-")


def new_attempt_tmpdir(run_dir: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{run_key(run_dir)}-", dir=temp_root()))


class AttemptTempFolders:
    """A run's attempt temp folders. :meth:`take` gives an empty one; :meth:`give_back`
    removes it, or, inside :meth:`reused` (while the run executes), empties it for the next
    attempt; the end of :meth:`reused` removes the kept ones. Thread-safe."""

    def __init__(self, run_dir: Path):
        self._run_dir = run_dir
        self._free: list[Path] = []
        self._reusing = False
        self._lock = threading.Lock()

    def take(self) -> Path:
        with self._lock:
            if self._free:
                return self._free.pop()
        return new_attempt_tmpdir(self._run_dir)

    def give_back(self, folder: Path) -> None:
        """Call once nothing of the attempt can write there any more (its processes are
        gone). A folder that cannot be emptied is removed instead."""
        with self._lock:
            reusing = self._reusing
        if reusing and _emptied(folder):
            with self._lock:
                if self._reusing:
                    self._free.append(folder)
                    return
        _remove(folder)

    @contextmanager
    def reused(self) -> Iterator[None]:
        with self._lock:
            self._reusing = True
        try:
            yield
        finally:
            with self._lock:
                self._reusing = False
                free, self._free = self._free, []
            for folder in free:
                _remove(folder)


def _emptied(folder: Path) -> bool:
    """Remove what is in ``folder`` and restore its mode; whether it is now an empty
    folder of ours, as :func:`tempfile.mkdtemp` made it. Everything goes through a handle
    on the folder opened without following links: an agent (root, here) that put a link to
    elsewhere in its place gets it removed, never what it points to."""
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        with os.scandir(handle) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.name, dir_fd=handle)
                else:
                    os.unlink(entry.name, dir_fd=handle)
        os.chmod(handle, 0o700)  # an agent may have opened it to others
        return not os.listdir(handle)
    except OSError:
        return False
    finally:
        os.close(handle)


def _remove(folder: Path) -> None:
    if folder.is_symlink():
        folder.unlink(missing_ok=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_attempt_tmpdirs(run_dir: Path) -> list[Path]:
    """Remove the temp folders earlier sessions of this run left behind; the removed ones."""
    pattern = f"{PREFIX}{run_key(run_dir)}-*"
    removed = []
    for folder in sorted(temp_root().glob(pattern)):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed

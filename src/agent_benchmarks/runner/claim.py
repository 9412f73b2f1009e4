"""One run per folder: a new run's folder is claimed by creating it, and a run holds a lock
on its folder for as long as it writes there.

Two runs started in the same second get the same stamped folder name. Checking for a run
and then creating the folder races, so the creation itself is the claim: ``mkdir`` without
``exist_ok``, and a name already taken gets a suffix (``<stamp>-2``, ``-3``, ...). A folder
named by the user (``--out-dir``, a sweep's cell) or resumed already exists, so there the
claim is an exclusive ``flock`` on a lock file inside it, taken before anything in the
folder is read or written and held until the run ends. The kernel drops the lock when its
holder dies (a SIGKILL included), so a crashed run never leaves its folder locked; the file
itself says who holds it, for the message another command gets.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import weakref
from pathlib import Path

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.common.redact import redact_argv
from agent_benchmarks.spec.provenance import utc_now

LOCK_NAME = ".run.lock"
HOLDER_WAIT_S = 2.0


class FolderBusy(InputError):
    """Another process holds the folder's lock."""


class FolderLock:
    """An exclusive lock on a run folder, held until :meth:`release` (or the process ends).

    Releasing removes the lock file, so a finished run's folder holds none; a process that
    opened the file just before that locks an unlinked file, which :func:`lock_folder`
    detects by its inode and retries."""

    def __init__(self, folder: Path, fd: int, made: bool = False):
        self.folder = folder
        self.made = made  # this run created the folder
        self._fd: int | None = fd
        # A lock dropped without release (an exception between prepare and the run) must
        # not stay held by a forgotten descriptor while the process goes on.
        self._closer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        """Unlock; a folder this run made and never wrote in (it stopped before its
        manifest) is removed, with the empty folders made in it (a sweep's cells' parents),
        so a refused or failed start leaves nothing."""
        if self._fd is None:
            return
        try:
            (self.folder / LOCK_NAME).unlink(missing_ok=True)
            if self.made:
                _remove_if_empty(self.folder)
        except OSError:
            pass  # a read-only folder: the lock still goes with the descriptor
        self._closer()
        self._fd = None


def _remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` if it holds no file, however deep its empty folders go."""
    for below, _, files in os.walk(folder, topdown=False):
        if files:
            return
        try:
            os.rmdir(below)
        except OSError:
            return  # a folder that held another: not empty


def lock_folder(folder: Path, argv: list[str], made: bool = False) -> FolderLock:
    """Lock ``folder`` (it exists) for this process, or raise :class:`FolderBusy` naming
    the process that holds it."""
    folder = folder.absolute()
    path = folder / LOCK_NAME
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise InputError(f"{folder}: cannot lock the run folder ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise FolderBusy(
                f"{folder} is in use by another run ({holder}); two runs never write into "
                "one folder: wait for it to end, or choose another folder"
            ) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # its holder removed it on release: lock the file there now
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "argv": redact_argv(argv),
        "since": utc_now(),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
    return FolderLock(folder, fd, made)


def claim_new_folder(base: Path, argv: list[str]) -> tuple[Path, FolderLock]:
    """Create and lock a new run folder at ``base``, or at ``base-2``, ``base-3``, ... when
    another run created that name first; the folder made and its lock."""
    base.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        folder = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            n += 1
            continue
        try:
            return folder, lock_folder(folder, argv, made=True)
        except FolderBusy:
            n += 1  # created by us, locked by a run that took it over by name: not ours


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says: the holder writes it just after locking, so
    an empty or half-written file is read again for a moment."""
    deadline = time.monotonic() + HOLDER_WAIT_S
    while True:
        try:
            record = json.loads(os.pread(fd, 65536, 0))
        except (OSError, ValueError):
            record = {}
        if record.get("pid") or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if not record.get("pid"):
        return "its process did not say which it is"
    argv = " ".join(record.get("argv") or [])
    return f"process {record['pid']} on {record.get('host')}: {argv}, since {record.get('since')}"

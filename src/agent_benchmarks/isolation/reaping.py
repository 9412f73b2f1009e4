"""Leaving nothing behind a browser daemon: adopt, kill and reap a process's descendants.

agent-browser detaches its daemon, and the daemon's Chromium helpers outlive it; unreaped,
they end as ``<defunct>`` entries of PID 1, which in a container need not reap them. The
processes that start agent-browser (our MCP wrapper, the chat-loop attempt driver) make
themselves child subreapers, so those orphans become their children and are collected here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import time
from pathlib import Path

import psutil

_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# agent-browser's throwaway Chromium profiles, deleted only when the daemon shuts down itself
_TEMP_PROFILE_PREFIX = "agent-browser-chrome-"


def become_subreaper() -> None:
    """Adopt orphaned descendants (they become our children once their parent exits)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(errno)}")


def reap_exited_children() -> None:
    """Collect every exited child. Call it only while no Popen of ours is running: a Popen
    must reap its own child, or its returncode is lost."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def wait_descendants_gone(grace_s: float) -> int:
    """Reap until no descendant is left or ``grace_s`` passes; how many are left. A zombie
    further down is its live parent's to reap (once that parent exits, it is ours)."""
    me = psutil.Process()
    deadline = time.monotonic() + grace_s
    while True:
        reap_exited_children()
        left = me.children(recursive=True)
        if not left or time.monotonic() > deadline:
            return len(left)
        time.sleep(0.05)


def kill_descendants(grace_s: float) -> int:
    """SIGKILL every descendant, reap them, and remove the Chromium profiles a killed
    daemon could not delete; how many were killed."""
    survivors = psutil.Process().children(recursive=True)
    profiles = {p for p in map(_temp_profile, survivors) if p}
    for proc in survivors:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    wait_descendants_gone(grace_s)
    for profile in profiles:
        shutil.rmtree(profile, ignore_errors=True)
    return len(survivors)


def _temp_profile(proc: psutil.Process) -> str | None:
    try:
        cmdline = proc.cmdline()
    except psutil.Error:
        return None
    for arg in cmdline:
        if arg.startswith("--user-data-dir="):
            path = arg.partition("=")[2]
            if Path(path).name.startswith(_TEMP_PROFILE_PREFIX):
                return path
    return None

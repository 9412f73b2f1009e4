"""A process made ready before a timer starts, so that the timer covers its program and
nothing of the harness's set-up (:class:`Prepared`).

Where the meter has a cgroup to join, the process is spawned at once as a shell that joins
it and stops itself, and :meth:`Prepared.go` lets it go: the timer then starts at the exec
of the program, after the cgroup's RCU wait. Without a cgroup there is nothing to wait
for, and :meth:`Prepared.go` spawns it. Its output goes to files in its folder (a pipe
could fill while nobody reads it).
"""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from agent_benchmarks.enginebench.measure import Meter, let_go


class GateFailed(RuntimeError):
    """The process's shell exited at its gate (it could not join the cgroup)."""


@dataclass(frozen=True)
class Finished:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str


def _exits_within(pid: int, timeout_s: float) -> bool:
    """Whether our child ``pid`` exits within ``timeout_s``, seen at the moment it does: its
    pidfd becomes readable then. (``Popen.wait(timeout)`` polls, its sleeps doubling up to
    50 ms: an execution's end was seen up to 50 ms late, its time rounded up in 50 ms steps
    past the first 64 ms.)"""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(math.ceil(timeout_s * 1000)))
    finally:
        os.close(pidfd)


class Prepared:
    def __init__(self, argv: list[str], env: dict[str, str], meter: Meter, folder: Path, name: str):
        folder.mkdir(parents=True, exist_ok=True)
        self.argv = argv
        self.env = {**env, **meter.env()}
        self.meter = meter
        self.stdout = folder / f"{name}.stdout"
        self.stderr = folder / f"{name}.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self.gated = meter.joins
        if self.gated:
            self.proc = self._spawn(meter.argv(argv, gate=True))
            info = os.waitid(os.P_PID, self.proc.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
            if info is not None and info.si_code != os.CLD_STOPPED:
                self.proc.wait()
                raise GateFailed(f"{argv[0]}: its shell could not join the cgroup")

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            proc = subprocess.Popen(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.meter.adopt(proc.pid)
        return proc

    def go(self) -> None:
        """Start the program (the timer has started)."""
        if self.proc is None:
            self.proc = self._spawn(self.meter.argv(self.argv, gate=False))
        else:
            let_go(self.proc.pid)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout_s: float) -> Finished:
        """Its end, or its kill at ``timeout_s`` (returncode None)."""
        assert self.proc is not None, "go() first"
        returncode: int | None = None
        if _exits_within(self.proc.pid, timeout_s):
            returncode = self.proc.wait()
        else:
            self.kill()
        return Finished(
            returncode,
            self.stdout.read_text(errors="replace"),
            self.stderr.read_text(errors="replace"),
        )

    def kill(self) -> None:
        """Its process group killed (the meter kills whatever left the group)."""
        if self.proc is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

"""What an execution costs beyond its time: the CPU seconds and the peak memory of its whole
process tree (driver, engine, MCP server, and every process they start).

The processes an execution measures are put in a cgroup of their own (a :class:`Meter`)
where this machine lets one be made (cgroup v2, or v1's memory and cpuacct hierarchies):
the kernel then counts the CPU time and the peak memory of every member, whatever it forks
or daemonises, and lists the members. Joining a cgroup costs a process an RCU grace period
(5-12 ms here), so a process whose start is timed is spawned before the timer as a shell
that joins the cgroup and stops itself; the timer starts when it is let go, at the exec of
the program (the gate isolation/process.py's memory cap uses, for the same reason).

Memory is measured two ways. The peak of PSS summed over the members, sampled every
``sample_ms`` (:class:`PssSampler`): upstream's measure, which counts a page shared by
several processes once. And with a cgroup, the kernel's own peak of it
(``memory.max_usage_in_bytes`` on v1, ``memory.peak`` on v2), exact but counting the page
cache its members caused too. Without a cgroup the members are the descendants of the
execution's processes (one that daemonises escapes them), and CPU time is not measured.
The agent runners' sampler (isolation/resources.py) is not used here: to stay cheap over
a whole attempt it reads a process's PSS again only when its resident size moved by 10%,
where a benchmark of a second or less wants every sample exact, and the CPU comes here
from the cgroup's own counter rather than from the processes' sampled counters.

Every process also carries :data:`agent_benchmarks.isolation.process.MARKER_ENV`, so that
what escaped both the cgroup and the tree is still killed when the meter closes.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agent_benchmarks.isolation.process import MARKER_ENV, kill_strays, leftover_cgroups, reap
from agent_benchmarks.isolation.resources import proc_stat

MARKER_PREFIX = "engine-"
_GROUP_PREFIX = f"agent-benchmarks-{MARKER_PREFIX}"  # + its owner: a meter's cgroup
_STALE = re.compile(rf"^{_GROUP_PREFIX}(\d+-\d+)-[0-9a-f]{{16}}$")
CGROUP_V1 = "cgroup-v1"
CGROUP_V2 = "cgroup-v2"
TREE = "process-tree"  # no cgroup: the descendants of the execution's processes


@dataclass(frozen=True)
class Usage:
    """One execution's resources; None where the method could not measure it."""

    cpu_s: float | None
    peak_pss_mb: float | None
    cgroup_peak_mb: float | None


@dataclass(frozen=True)
class _Hierarchies:
    method: str
    memory: Path  # where cgroups with a memory counter are made
    cpu: Path  # where cgroups with a CPU counter are made (the same folder on v2)


@cache
def _hierarchies() -> _Hierarchies | None:
    """Where this process may make cgroups, probed once; None when it may not."""
    mounts: dict[str, Path] = {}
    with suppress(OSError), open("/proc/self/mounts") as lines:
        for line in lines:
            _, point, fs_type, options, *_ = line.split()
            if fs_type == "cgroup2":
                mounts.setdefault("unified", Path(point))
            elif fs_type == "cgroup":
                for controller in ("memory", "cpuacct"):
                    if controller in options.split(","):
                        mounts.setdefault(controller, Path(point))
    ours: dict[str, str] = {}
    with suppress(OSError), open("/proc/self/cgroup") as lines:
        for line in lines:
            hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
            if hierarchy == "0" and not controllers:
                ours["unified"] = path
            for controller in controllers.split(","):
                if controller in ("memory", "cpuacct"):
                    ours[controller] = path
    candidates = []
    if "memory" in mounts and "cpuacct" in mounts and "memory" in ours and "cpuacct" in ours:
        candidates.append(
            _Hierarchies(
                CGROUP_V1,
                mounts["memory"] / ours["memory"].lstrip("/"),
                mounts["cpuacct"] / ours["cpuacct"].lstrip("/"),
            )
        )
    if "unified" in mounts and "unified" in ours:
        folder = mounts["unified"] / ours["unified"].lstrip("/")
        candidates.append(_Hierarchies(CGROUP_V2, folder, folder))
    for candidate in candidates:
        probe = f"agent-benchmarks-engine-probe-{uuid.uuid4().hex[:12]}"
        try:
            made = [candidate.memory / probe, candidate.cpu / probe]
            for folder in dict.fromkeys(made):
                folder.mkdir()
        except OSError:
            continue
        finally:
            for folder in dict.fromkeys([candidate.memory / probe, candidate.cpu / probe]):
                with suppress(OSError):
                    folder.rmdir()
        return candidate
    return None


def measuring_method() -> str:
    """How this machine's executions are measured: a cgroup (v1 or v2), or the tree."""
    found = _hierarchies()
    return found.method if found else TREE


class Meter:
    """The processes of one execution, or of one held engine and the executions on it."""

    def __init__(self) -> None:
        # Its owner in it: a later run sweeps what a killed one left (sweep_stale).
        self.marker = f"{MARKER_PREFIX}{OWNER}-{uuid.uuid4().hex[:16]}"
        self.roots: list[int] = []  # without a cgroup: the processes whose trees we measure
        self._folders: list[Path] = []
        self._peak_fd: int | None = None
        found = _hierarchies()
        self.method = TREE
        if found is not None:
            name = f"agent-benchmarks-{self.marker}"  # _GROUP_PREFIX + owner
            try:
                for folder in dict.fromkeys([found.memory / name, found.cpu / name]):
                    folder.mkdir()
                    self._folders.append(folder)
                self.method = found.method
                self._memory, self._cpu = found.memory / name, found.cpu / name
            except OSError:
                self._remove_folders()
        if self.method == CGROUP_V2:
            with suppress(OSError):
                self._peak_fd = os.open(self._memory / "memory.peak", os.O_RDWR)

    # --- spawning into it ----------------------------------------------------------------
    def env(self) -> dict[str, str]:
        return {MARKER_ENV: self.marker}

    def argv(self, argv: list[str], gate: bool) -> list[str]:
        """``argv`` run as a member; with ``gate``, stopped before its exec until
        :func:`let_go` (so that joining costs the timed process nothing)."""
        joins = [
            f"echo $$ > {shlex.quote(str(folder / 'cgroup.procs'))}" for folder in self._folders
        ]
        steps = [*joins, "kill -STOP $$"] if gate else joins
        if not steps:
            return argv
        return ["/bin/sh", "-c", " && ".join([*steps, 'exec "$@"']), "engine-bench", *argv]

    @property
    def joins(self) -> bool:
        """Whether its processes join a cgroup (and so can be gated)."""
        return bool(self._folders)

    def adopt(self, pid: int) -> None:
        """Count ``pid``'s tree (only needed without a cgroup)."""
        self.roots.append(pid)

    # --- reading it ----------------------------------------------------------------------
    def members(self) -> set[int]:
        if self.method != TREE:
            return set(_procs(self._memory))
        import psutil  # the fallback alone needs it

        pids: set[int] = set()
        for root in self.roots:
            with suppress(psutil.Error):
                process = psutil.Process(root)
                pids |= {root, *(c.pid for c in process.children(recursive=True))}
        return pids

    def cpu_ns(self) -> int | None:
        try:
            if self.method == CGROUP_V1:
                return int((self._cpu / "cpuacct.usage").read_text())
            if self.method == CGROUP_V2:
                for line in (self._cpu / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
        except (OSError, ValueError):
            pass
        return None

    def reset_peak(self) -> bool:
        """Start the kernel's peak afresh (for an execution on a held engine); False where
        the kernel cannot (v2 before 6.12), and the peak then covers the meter's life."""
        try:
            if self.method == CGROUP_V1:
                (self._memory / "memory.max_usage_in_bytes").write_text("0")
                return True
            if self._peak_fd is not None:
                os.write(self._peak_fd, b"reset\n")
                return True
        except OSError:
            pass
        return False

    def peak_bytes(self) -> int | None:
        try:
            if self.method == CGROUP_V1:
                return int((self._memory / "memory.max_usage_in_bytes").read_text())
            if self._peak_fd is not None:
                return int(os.pread(self._peak_fd, 64, 0).split()[0])
        except (OSError, ValueError, IndexError):
            pass
        return None

    # --- ending it -----------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL every member (and every process carrying the marker), and wait until
        the cgroup is empty."""
        deadline = time.monotonic() + 5
        while (pids := self.members()) and time.monotonic() < deadline:
            for pid in pids:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                # A child of ours stays a member until it is reaped (an interrupted
                # execution's driver was never waited for).
                with suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(0.01)
        kill_strays(self.marker)

    def close(self) -> None:
        self.kill()
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        self._remove_folders()

    def _remove_folders(self) -> None:
        for folder in self._folders:
            deadline = time.monotonic() + 2
            while folder.exists():
                try:
                    folder.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
        self._folders = []


def _started(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (None: no such process)."""
    stat = proc_stat(pid)
    return None if stat is None else stat.started


# This process, as the names of what it makes carry it: its pid and its start, so that a
# pid taken again by another process is not mistaken for it.
OWNER = f"{os.getpid()}-{_started(os.getpid())}"


def owner_alive(owner: str) -> bool:
    """Whether the process ``owner`` (``PID-START``) still runs."""
    pid, _, started = owner.partition("-")
    return pid.isdigit() and str(_started(int(pid))) == started


def sweep_stale() -> int:
    """Kill and remove what runs that were killed left (SIGKILL gives them no chance to):
    their meters' cgroups with every member, wherever in the hierarchy (a run started from
    another shell made them in another cgroup), and processes carrying their marker. The
    number of cgroups and processes swept."""
    found = _hierarchies()
    cpu_groups = {}  # v1's CPU counters live in a hierarchy of their own, beside memory's
    if found is not None and found.cpu != found.memory:
        cpu_groups = {entry.name: entry for entry in found.cpu.iterdir() if entry.is_dir()}
    names = [path.name for path in leftover_cgroups(_GROUP_PREFIX)] + list(cpu_groups)
    owners = {owned.group(1) for name in names if (owned := _STALE.match(name))}
    owners |= _marked_owners()
    swept = 0
    for owner in sorted(o for o in owners if not owner_alive(o)):
        reaped = reap(f"{MARKER_PREFIX}{owner}-")
        swept += reaped.processes + reaped.cgroups
        for name, group in cpu_groups.items():
            if name.startswith(f"{_GROUP_PREFIX}{owner}-"):
                with suppress(OSError):
                    group.rmdir()  # its members were killed with the memory group's
                    swept += 1
    return swept


def _marked_owners() -> set[str]:
    """The owners named by the markers of running processes."""
    prefix = f"{MARKER_ENV}={MARKER_PREFIX}".encode()
    owners = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            continue
        for variable in environ.split(b"\0"):
            if variable.startswith(prefix):
                marker = variable[len(prefix) :].decode(errors="replace")
                owners.add("-".join(marker.split("-")[:2]))
    return owners


def _procs(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def wait_stopped(pid: int, timeout_s: float = 30.0) -> None:
    """Wait until the gated shell ``pid`` (not necessarily our child) has stopped itself."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return  # gone: it failed to join, which its exit status says
        if state == "T":
            return
        time.sleep(0.001)
    raise TimeoutError(f"process {pid} did not reach its gate in {timeout_s:.0f} s")


def let_go(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


def pss_kb(pids: set[int]) -> int:
    """PSS of ``pids`` summed (those gone meanwhile count nothing)."""
    total = 0
    for pid in pids:
        with suppress(OSError), open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    total += int(line.split()[1])
                    break
    return total


class PssSampler:
    """The peak of the members' summed PSS, sampled every ``interval_s`` on a thread of its
    own from :meth:`start` to :meth:`stop` (which takes one last sample)."""

    def __init__(self, meter: Meter, interval_s: float):
        self.meter = meter
        self.interval_s = interval_s
        self.peak_kb = 0
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pss-sampler", daemon=True)

    def _sample(self) -> None:
        self.peak_kb = max(self.peak_kb, pss_kb(self.meter.members()))

    def _run(self) -> None:
        while not self._halt.is_set():
            self._sample()
            self._halt.wait(self.interval_s)

    def start(self) -> PssSampler:
        self._thread.start()
        return self

    def stop(self) -> float:
        """The peak in MB."""
        self._halt.set()
        self._thread.join()
        self._sample()
        return self.peak_kb / 1024


class Measurement:
    """What ``meter``'s processes use from its making to :meth:`stop`."""

    def __init__(self, meter: Meter, sample_ms: int):
        self.meter = meter
        self._reset = meter.reset_peak()
        self._cpu_before = meter.cpu_ns()
        self._sampler = PssSampler(meter, sample_ms / 1000).start() if sample_ms > 0 else None

    def stop(self) -> Usage:
        peak_pss = self._sampler.stop() if self._sampler is not None else None
        cpu_after = self.meter.cpu_ns()
        cpu_s = None
        if self._cpu_before is not None and cpu_after is not None:
            cpu_s = (cpu_after - self._cpu_before) / 1e9
        peak = self.meter.peak_bytes() if self._reset else None
        return Usage(
            cpu_s=cpu_s,
            peak_pss_mb=peak_pss,
            cgroup_peak_mb=None if peak is None else peak / 2**20,
        )

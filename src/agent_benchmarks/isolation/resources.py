"""What an attempt's processes cost the machine: memory and CPU, by role, sampled.

A :class:`ResourceSampler` runs beside one attempt (a thread of the process that
supervises it) from its agent's start to its exit. Every ``interval_s`` (more often in
the attempt's first moments: 10 ms after its start, then twice as long each time) it lists the
attempt's processes (its memory cgroup's members, or else those carrying its marker or
naming its temp folder: the sweep's own finders, :mod:`.process`), and reads each one's
proportional set size (PSS, ``/proc/PID/smaps_rollup``: shared pages split between the
processes sharing them, so a sum over processes counts each page once) and its CPU
counters (``/proc/PID/stat``), through psutil.

Each process has a role, given by the backend as :class:`RoleRule` s matched against its
executable's name and its command line: the browser ``engine`` (Chromium and all its
helpers; Lightpanda), the ``agent`` (Claude Code, Codex, agent-browser's chat loop), the
``mcp_server`` with its runtime (node, python). Where one process is two roles at once
(``lightpanda agent`` is its agent loop and its engine; ``lightpanda mcp`` its MCP server
and its engine), the role says so (``engine+agent``) and carries a note. A process no rule
names has its parent's role (at the time it was first seen), or ``other``.

Figures, per role and in total:

* peak memory: the largest sum of the role's PSS over one sample. The attempt's own peak
  is its cgroup's counter where it has a cgroup (``memory.max_usage_in_bytes`` on v1,
  ``memory.peak`` on v2: the kernel's, of every page charged to the attempt, page cache
  included), else the largest PSS sum of all its processes (sampled);
* CPU time, user and system: each process's own time at its last sample, plus what the
  children it reaped used beyond what their samples show (its ``cutime``/``cstime`` less
  the sampled children's own trees): children no sample saw, and what sampled ones used
  after their last sample, counted in the reaper's role. A process reaped by one the
  attempt does not hold (an orphan adopted by init) keeps the figures of its last sample:
  what it used after that, up to one interval, is lost.

The last sample is taken when the agent has exited, before its leftovers are killed, so a
timed-out or cancelled attempt has its figures up to its end. The sampler's own CPU time
is measured too (its thread's), so what the measuring costs is on record.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_benchmarks.records import Machine, ResourceUse, RoleUse

if TYPE_CHECKING:  # imported where used: a process that samples nothing does not load it
    import psutil

# Chromium under any of its names (and Debian's /usr/bin/chromium, a shell script that
# execs it), its crash handler, and Lightpanda serving CDP to another program: the engine.
ENGINE = "engine"
AGENT = "agent"
MCP_SERVER = "mcp_server"
OTHER = "other"
PSS_SAMPLED = "pss-sampled"
# The first sample's delay after the agent starts; each next waits twice as long, up to
# the interval (10, 20, 40, 80, 160 ms, then every 200 ms by default).
_FIRST_WAIT_S = 0.01
# How far up an unread parent's own parents are read to name a new process's role.
_MAX_UNREAD_PARENTS = 4
# When a process's PSS is read again rather than carried forward by its RSS (_pss).
_PSS_REREAD_SHARE = 0.05
_PSS_REREAD_BYTES = 4 << 20
_PSS_REREAD_S = 2.0


@dataclass(frozen=True)
class RoleRule:
    """Processes of ``role``: those whose executable's name matches ``exe`` and whose
    command line (its arguments joined by spaces) matches ``args`` (``re.search``; a rule
    without one of them does not look at it). ``note`` says what a shared role holds."""

    role: str
    exe: str | None = None
    args: str | None = None
    note: str | None = None

    def matches(self, exe_name: str, cmdline: str) -> bool:
        if self.exe is not None and re.search(self.exe, exe_name) is None:
            return False
        return self.args is None or re.search(self.args, cmdline) is not None


CHROMIUM_RULES = (
    RoleRule(ENGINE, exe=r"^(chromium|chrome|chrome_crashpad_handler|(chrome-)?headless_shell)$"),
    RoleRule(ENGINE, args=r"^(\S*/)?(sh|bash|dash)?\s*\S*/(chromium|chrome)(\s|$)"),
)


@dataclass
class _Seen:
    """One process of the attempt, as its last sample found it."""

    handle: psutil.Process
    exe: str = ""
    cmdline: str = ""
    role: str = OTHER
    ppid: int = 0
    last_sample: int = 0
    user: float = 0.0
    system: float = 0.0
    children_user: float = 0.0
    children_system: float = 0.0
    # Its PSS as last read, with its RSS and the time then (see ResourceSampler._pss).
    pss: int = 0
    pss_rss: int = 0
    pss_at: float = -math.inf


@dataclass
class _RolePeak:
    peak_pss: int = 0
    pids: set[int] = field(default_factory=set)
    programs: set[str] = field(default_factory=set)


class ResourceSampler:
    """Samples one attempt's processes in a thread of its own (see the module).

    ``members(known)`` lists the attempt's processes; ``known`` holds those a sample found
    alive last time, which a finder that reads each process to tell (the marker in its
    environment) need not read again."""

    def __init__(
        self,
        leader: int,
        members: Callable[[set[int]], Iterable[int]],
        rules: Iterable[RoleRule],
        interval_s: float,
    ):
        self._leader = leader
        self._members = members
        self._rules = tuple(rules)
        self._notes = {r.role: r.note for r in self._rules if r.note}
        self.interval_s = interval_s
        self._seen: dict[int, _Seen] = {}  # by pid: the attempt's processes, alive or not
        self._new: dict[int, _Seen] = {}  # found by this sample, not read yet
        self._alive: set[int] = set()
        self._roles: dict[str, _RolePeak] = defaultdict(_RolePeak)
        self._pss_peak = 0
        self._samples = 0
        self._own_cpu_s = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="resources", daemon=True)

    def start(self) -> ResourceSampler:
        self._thread.start()
        return self

    def finish(self) -> ResourceUse:
        """Stop sampling, take the last sample now (the agent has exited, its leftovers not
        yet killed) and return the attempt's figures."""
        self.stop()
        self._timed_sample()
        return self._figures()

    def stop(self) -> None:
        """Stop the sampling thread (again: nothing)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        # Often at first, then every interval: an attempt's programs start (exec, load,
        # open their first page) within its first moments, and many attempts are short.
        wait = min(_FIRST_WAIT_S, self.interval_s)
        while not self._stop.wait(wait):
            self._timed_sample()
            wait = min(wait * 2, self.interval_s)

    def _timed_sample(self) -> None:
        began = time.thread_time()
        with self._lock:
            self._sample()
            self._own_cpu_s += time.thread_time() - began

    def _sample(self) -> None:
        self._samples += 1
        number = self._samples
        pids = set(self._members(set(self._alive)))
        pids.add(self._leader)
        # Older processes first: a new child takes the role of its parent, read before it.
        found = [
            seen for pid in sorted(pids, key=self._started) if (seen := self._read(pid, number))
        ]
        self._alive = {seen.handle.pid for seen, _ in found}
        total = 0
        by_role: dict[str, int] = defaultdict(int)
        for seen, pss in found:
            total += pss
            by_role[seen.role] += pss
            peak = self._roles[seen.role]
            peak.pids.add(seen.handle.pid)
            if seen.exe:  # none for one that exited before its program could be read
                peak.programs.add(seen.exe)
        self._pss_peak = max(self._pss_peak, total)
        for role, pss in by_role.items():
            self._roles[role].peak_pss = max(self._roles[role].peak_pss, pss)

    def _started(self, pid: int) -> float:
        """When ``pid`` started (0 when it is gone: it is skipped anyway)."""
        import psutil  # here: a process that never samples does not load it

        seen = self._seen.get(pid)
        if seen is None:
            try:
                seen = self._new[pid] = _Seen(psutil.Process(pid))
            except psutil.Error:
                return 0.0
        return seen.handle.create_time()

    def _read(self, pid: int, number: int) -> tuple[_Seen, int] | None:
        """Read one process (its CPU counters, parent, program and memory); None if gone.
        A pid is taken to stay one process for the attempt's life: the kernel hands out
        millions before reusing one."""
        import psutil  # here: a process that never samples does not load it

        seen = self._seen.get(pid) or self._new.pop(pid, None)
        try:
            if seen is None:
                seen = _Seen(psutil.Process(pid))
            handle = seen.handle
            with handle.oneshot():
                times = handle.cpu_times()
                ppid = handle.ppid()
                rss = handle.memory_info().rss
            exe = _exe_name(pid)
            if pid not in self._seen or (exe and exe != seen.exe):
                # New, or it exec'd another program (an exited one names none: it keeps
                # its role). Parents are read before children only by chance: a child's
                # parent is looked up as it is now when it is not known yet.
                seen.exe, seen.ppid = exe, ppid
                seen.cmdline = " ".join(handle.cmdline())
                seen.role = self._role_of(seen)
                self._seen[pid] = seen
            pss = self._pss(seen, rss)
        except psutil.Error:  # gone meanwhile
            return None
        seen.ppid = ppid
        seen.last_sample = number
        seen.user, seen.system = times.user, times.system
        seen.children_user, seen.children_system = times.children_user, times.children_system
        return seen, pss

    def _pss(self, seen: _Seen, rss: int) -> int:
        """The process's PSS now. Reading it makes the kernel walk the whole address space
        (1.4 ms for one Chromium process here), so it is read afresh only when the RSS
        moved by more than :data:`_PSS_REREAD_SHARE` (or :data:`_PSS_REREAD_BYTES`) since,
        or :data:`_PSS_REREAD_S` passed; in between it moves with the RSS (a private page
        counts whole in both)."""
        import psutil

        now = time.monotonic()
        moved = abs(rss - seen.pss_rss)
        if (
            moved > max(_PSS_REREAD_BYTES, seen.pss_rss * _PSS_REREAD_SHARE)
            or now - seen.pss_at > _PSS_REREAD_S
        ):
            try:
                seen.pss = seen.handle.memory_full_info().pss
            except (psutil.ZombieProcess, AttributeError):  # a zombie maps nothing
                seen.pss = 0
            seen.pss_rss, seen.pss_at = rss, now
            return seen.pss
        return max(0, seen.pss + rss - seen.pss_rss)

    def _role_of(self, seen: _Seen, depth: int = 0) -> str:
        """The first rule's role that names the process, else its parent's (a parent no
        sample read, started and still alive between two samples, is read now), else
        ``agent`` for the attempt's leader and ``other`` for the rest."""
        import psutil

        for rule in self._rules:
            if rule.matches(seen.exe, seen.cmdline):
                return rule.role
        parent = self._seen.get(seen.ppid)
        if parent is not None:
            return parent.role
        if seen.ppid > 1 and depth < _MAX_UNREAD_PARENTS:
            try:
                handle = psutil.Process(seen.ppid)
                unread = _Seen(
                    handle,
                    exe=_exe_name(seen.ppid),
                    cmdline=" ".join(handle.cmdline()),
                    ppid=handle.ppid(),
                )
            except psutil.Error:
                unread = None
            if unread is not None:
                role = self._role_of(unread, depth + 1)
                if role != OTHER:
                    return role
        return AGENT if seen.handle.pid == self._leader else OTHER

    def _figures(self) -> ResourceUse:
        cpu: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        reaped: dict[int, list[_Seen]] = defaultdict(list)  # by the pid of their reaper
        for proc in self._seen.values():
            parent = self._seen.get(proc.ppid)
            if parent is not None and parent is not proc and proc.last_sample < parent.last_sample:
                reaped[proc.ppid].append(proc)
        trees: dict[int, tuple[float, float]] = {}

        def tree(proc: _Seen) -> tuple[float, float]:
            """(user, system) of ``proc`` and every child it reaped, as far as known: its
            children's counters at its last sample, or its sampled children's trees when
            those came to more (they were reaped after its last sample)."""
            pid = proc.handle.pid
            if pid not in trees:
                trees[pid] = (proc.user, proc.system)  # cut a cycle (never expected)
                kids = [tree(child) for child in reaped[pid]]
                trees[pid] = (
                    proc.user + max(proc.children_user, sum(u for u, _ in kids)),
                    proc.system + max(proc.children_system, sum(s for _, s in kids)),
                )
            return trees[pid]

        for proc in self._seen.values():
            # What its reaped children used beyond the sampled ones' trees: children no
            # sample saw, and what sampled ones used after their last sample.
            kids = [tree(child) for child in reaped[proc.handle.pid]]
            unseen_user = proc.children_user - sum(u for u, _ in kids)
            unseen_system = proc.children_system - sum(s for _, s in kids)
            cpu[proc.role][0] += proc.user + max(0.0, unseen_user)
            cpu[proc.role][1] += proc.system + max(0.0, unseen_system)
        roles = {
            role: RoleUse(
                peak_pss_bytes=peak.peak_pss,
                cpu_user_s=round(cpu[role][0], 3),
                cpu_system_s=round(cpu[role][1], 3),
                processes=len(peak.pids),
                programs=sorted(peak.programs),
                note=self._notes.get(role),
            )
            for role, peak in sorted(self._roles.items())
        }
        return ResourceUse(
            peak_bytes=self._pss_peak,
            peak_source=PSS_SAMPLED,
            pss_peak_bytes=self._pss_peak,
            cpu_user_s=round(sum(user for user, _ in cpu.values()), 3),
            cpu_system_s=round(sum(system for _, system in cpu.values()), 3),
            roles=roles,
            samples=self._samples,
            interval_s=self.interval_s,
            sampler_cpu_s=round(self._own_cpu_s, 4),
            machine=this_machine().kind_id,
        )


@functools.cache
def this_machine() -> Machine:
    """This machine's record (:class:`~agent_benchmarks.records.Machine`)."""
    import psutil

    model = ""
    try:
        with open("/proc/cpuinfo") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "Processor") and value.strip():
                    model = value.strip()
                    break
    except OSError:
        pass
    return Machine(
        cpu_model=model or platform.machine() or "unknown",
        cores=psutil.cpu_count(logical=True) or 1,
        memory_bytes=psutil.virtual_memory().total,
        kernel=platform.release(),
    )


def _exe_name(pid: int) -> str:
    """The name of the program ``pid`` runs (its executable's file name): what a process
    calls itself (``/proc/self/exe --type=renderer``) does not matter."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).removesuffix(" (deleted)")
    except OSError:
        return ""


def measurement(interval_s: float | None, cap_method: str | None) -> dict[str, Any]:
    """How a run's resource figures are measured, for its manifest (``settings.resources``):
    the attempts' ``cap_method`` (their memory cap: a cgroup counts their peak itself)."""
    if interval_s is None:
        return {"sampled": False, "why": "--resource-sample-ms 0: memory and CPU not measured"}
    if cap_method in ("cgroup-v1", "cgroup-v2"):
        counter = "memory.max_usage_in_bytes" if cap_method == "cgroup-v1" else "memory.peak"
        peak = (
            f"the attempt's own cgroup's peak, {cap_method} {counter}: every page the kernel "
            "charged to its processes, page cache (files they read first or wrote) included"
        )
    else:
        peak = f"the largest PSS sum of its processes in one sample (no cgroup: {cap_method})"
    return {
        "sampled": True,
        "interval_s": interval_s,
        "processes": "the attempt's cgroup's members, or without a cgroup those carrying its "
        "marker or naming its temp folder; each given a role (engine, agent, mcp_server, ...) "
        "by its backend's rules on its executable and command line, a process no rule names "
        "taking its parent's",
        "attempt_peak": peak,
        "role_peak": "per role, the largest sum of its processes' PSS (/proc/PID/smaps_rollup) "
        f"in one sample, every {interval_s:g} s",
        "cpu": "user and system seconds per process (/proc/PID/stat) at its last sample, "
        "plus its reaped children's never sampled; a process that exited between samples "
        "loses what it used after its last one",
        "sampler_cpu": "the sampling thread's own CPU time, per attempt (sampler_cpu_s)",
    }

"""What an attempt's processes cost the machine: memory and CPU, by role, sampled.

A :class:`ResourceSampler` runs beside one attempt (a thread of the process that
supervises it) from its agent's start to its exit. Every ``interval_s`` (more often in the
attempt's first moments: 10 ms after its start, then twice as long each time) it lists the
attempt's processes (its memory cgroup's members, or else those carrying its marker or
naming its temp folder, and their descendants: the sweep's own finders, :mod:`.process`),
and reads each one's CPU counters, parent and resident size (``/proc/PID/stat``) and its
proportional set size (PSS, ``/proc/PID/smaps_rollup`` through psutil: shared pages split
between the processes sharing them, so a sum over processes counts each page once). PSS
costs the kernel a walk of the whole address space (1.4 ms for one Chromium process
here), so it is read again only when the resident size moved by 10% (or 16 MB; at most
every 0.5 s) or 10 s passed; in between it moves with the resident size (a private page
counts whole in both: what an engine allocates shows at once).

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
from typing import Any

from agent_benchmarks.records.schema import Machine, ResourceUse, RoleUse

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
_PSS_REREAD_SHARE = 0.1
_PSS_REREAD_BYTES = 16 << 20
_PSS_REREAD_S = 10.0
_PSS_MIN_GAP_S = 0.5


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

    pid: int
    started: int  # clock ticks since boot: with the pid, the process's identity
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


@dataclass(frozen=True)
class ProcStat:
    """What one read of /proc/PID/stat says of a process."""

    ppid: int
    user: float
    system: float
    children_user: float
    children_system: float
    started: int
    rss: int  # bytes


_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def proc_stat(pid: int) -> ProcStat | None:
    """``pid``'s /proc/PID/stat, read once (None if it is gone). Read here rather than
    through psutil: its ``ppid()`` checks the pid was not reused by reading /proc/stat
    again, 0.3 ms a call on this machine, more than all the rest of a sample; the sweep
    reads start times by the thousand (isolation/process.py)."""
    try:
        with open(f"/proc/{pid}/stat", "rb", buffering=0) as fh:
            raw = fh.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are
    # counted after the last ")"; see proc(5) for their order.
    f = raw[raw.rfind(b")") + 2 :].split()
    try:
        return ProcStat(
            ppid=int(f[1]),
            user=int(f[11]) * _TICK_S,
            system=int(f[12]) * _TICK_S,
            children_user=int(f[13]) * _TICK_S,
            children_system=int(f[14]) * _TICK_S,
            started=int(f[19]),
            rss=int(f[21]) * _PAGE,
        )
    except (IndexError, ValueError):
        return None


@dataclass
class _RolePeak:
    peak_pss: int = 0
    pids: set[int] = field(default_factory=set)
    programs: set[str] = field(default_factory=set)


class ResourceSampler:
    """Samples one attempt's processes in a thread of its own (see the module);
    ``members()`` lists them (the leader, ``leader``, is always one)."""

    def __init__(
        self,
        leader: int,
        members: Callable[[], Iterable[int]],
        rules: Iterable[RoleRule],
        interval_s: float,
    ):
        self._leader = leader
        self._members = members
        self._rules = tuple(rules)
        self._notes = {r.role: r.note for r in self._rules if r.note}
        self.interval_s = interval_s
        self._seen: dict[int, _Seen] = {}  # by pid: the attempt's processes, alive or not
        self._stats: dict[int, ProcStat] = {}  # this sample's, not read yet
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
        pids = set(self._members())
        pids.add(self._leader)
        # Older processes first: a new child takes the role of its parent, read before it.
        self._stats = {pid: stat for pid in pids if (stat := proc_stat(pid)) is not None}
        ordered = sorted(self._stats, key=lambda pid: self._stats[pid].started)
        found = [seen for pid in ordered if (seen := self._read(pid, number))]
        total = 0
        by_role: dict[str, int] = defaultdict(int)
        for seen, pss in found:
            total += pss
            by_role[seen.role] += pss
            peak = self._roles[seen.role]
            peak.pids.add(seen.pid)
            if seen.exe:  # none for one that exited before its program could be read
                peak.programs.add(seen.exe)
        self._pss_peak = max(self._pss_peak, total)
        for role, pss in by_role.items():
            self._roles[role].peak_pss = max(self._roles[role].peak_pss, pss)

    def _read(self, pid: int, number: int) -> tuple[_Seen, int] | None:
        """Read one process (its CPU counters, parent, program and memory); None if gone."""
        stat = self._stats.pop(pid, None) or proc_stat(pid)
        if stat is None:
            return None
        seen = self._seen.get(pid)
        cmdline = _cmdline(pid)
        # New (a pid the kernel gave again is a new process too), or it exec'd (a forked
        # child runs its parent's command line until then); an exited one has no command
        # line left and keeps its role.
        if seen is None or seen.started != stat.started or (cmdline and cmdline != seen.cmdline):
            if seen is None or seen.started != stat.started:
                seen = _Seen(pid, stat.started)
            seen.exe, seen.cmdline, seen.ppid = _exe_name(pid), cmdline, stat.ppid
            seen.role = self._role_of(seen)
            self._seen[pid] = seen
        seen.ppid = stat.ppid
        seen.last_sample = number
        seen.user, seen.system = stat.user, stat.system
        seen.children_user, seen.children_system = stat.children_user, stat.children_system
        return seen, self._pss(seen, stat.rss)

    def _pss(self, seen: _Seen, rss: int) -> int:
        """The process's PSS now. Reading it makes the kernel walk the whole address space
        (1.4 ms for one Chromium process here), so it is read afresh only when the RSS
        moved by more than :data:`_PSS_REREAD_SHARE` (or :data:`_PSS_REREAD_BYTES`) since
        (at most every :data:`_PSS_MIN_GAP_S`: a starting program grows at every sample),
        or :data:`_PSS_REREAD_S` passed; in between it moves with the RSS (a private page
        counts whole in both)."""
        import psutil

        now = time.monotonic()
        since = now - seen.pss_at
        moved = abs(rss - seen.pss_rss) > max(_PSS_REREAD_BYTES, seen.pss_rss * _PSS_REREAD_SHARE)
        if (moved and since >= _PSS_MIN_GAP_S) or since > _PSS_REREAD_S:
            try:
                seen.pss = psutil.Process(seen.pid).memory_full_info().pss
            except (psutil.Error, AttributeError):  # gone, or a zombie: it maps nothing
                seen.pss = 0
            seen.pss_rss, seen.pss_at = rss, now
            return seen.pss
        return max(0, seen.pss + rss - seen.pss_rss)

    def _role_of(self, seen: _Seen, depth: int = 0) -> str:
        """The first rule's role that names the process, else its parent's (a parent no
        sample read, started and still alive between two samples, is read now), else
        ``agent`` for the attempt's leader and ``other`` for the rest."""
        for rule in self._rules:
            if rule.matches(seen.exe, seen.cmdline):
                return rule.role
        parent = self._seen.get(seen.ppid)
        if parent is not None:
            return parent.role
        stat = proc_stat(seen.ppid) if seen.ppid > 1 and depth < _MAX_UNREAD_PARENTS else None
        if stat is not None:
            unread = _Seen(
                seen.ppid,
                stat.started,
                exe=_exe_name(seen.ppid),
                cmdline=_cmdline(seen.ppid),
                ppid=stat.ppid,
            )
            role = self._role_of(unread, depth + 1)
            if role != OTHER:
                return role
        return AGENT if seen.pid == self._leader else OTHER

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
            pid = proc.pid
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
            kids = [tree(child) for child in reaped[proc.pid]]
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
    """This machine's record (:class:`~agent_benchmarks.records.schema.Machine`)."""
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


def _cmdline(pid: int) -> str:
    """The process's arguments joined by spaces ("" once it has exited). Read every sample
    (an exec shows only here: a forked child may exec the same program), so read raw."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb", buffering=0) as fh:
            raw = fh.read()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")


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
        f"in one sample, every {interval_s:g} s (each process's PSS read again when its "
        "resident size moved by 10% or 16 MB, and every 10 s; carried by its resident size "
        "in between)",
        "cpu": "user and system seconds per process (/proc/PID/stat) at its last sample, "
        "plus its reaped children's never sampled; a process that exited between samples "
        "loses what it used after its last one",
        "sampler_cpu": "the sampling thread's own CPU time, per attempt (sampler_cpu_s)",
    }

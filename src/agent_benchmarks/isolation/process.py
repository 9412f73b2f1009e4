"""Run one agent subprocess for one task attempt, and leave nothing of it behind.

The child gets its own session (so its whole process group can be signalled), a wall-clock
deadline, optional cancellation and an optional memory cap. Its pipes are pumped with
poll() from the calling thread, so any amount of output in either direction cannot
deadlock, and the leader is watched through a pidfd so that it stays an unreaped zombie
until everything else is killed: its pid, which is also the process group id, cannot be
reused by an unrelated process while we still signal the group.

Browsers and daemons escape process groups (setsid, double fork), so every attempt also
gets a unique value in ``MARKER_ENV``. Children inherit it, and once the leader has exited
every process still carrying it is killed. When the memory cap is a cgroup, its members
are killed as well, which also catches processes that scrubbed their environment. Each
attempt also gets its own ``TMPDIR`` (the engine's, emptied when the attempt ends, or one
made here and removed), so what a killed program left in temp (a browser profile) goes too.
The sweep reads only processes started since the attempt's leader: an older one cannot
descend from it.

Linux only (5.4 or later, for pidfd_open and waitid on a pidfd): pidfds, cgroups and /proc.
"""

from __future__ import annotations

import errno
import functools
import heapq
import itertools
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Collection, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_benchmarks.isolation.resources import ResourceSampler, RoleRule, proc_stat
from agent_benchmarks.isolation.scratch import temp_root
from agent_benchmarks.records.schema import ResourceUse

MARKER_ENV = "AGENT_BENCHMARKS_ATTEMPT"

CGROUP_V2 = "cgroup-v2"
CGROUP_V1 = "cgroup-v1"
RLIMIT = "rlimit"

# SIGTERM first (at the deadline, or on cancel) so that agents which handle it can flush
# what they have and reap their children; short, because the attempt is over either way.
_TERM_GRACE_S = 0.5
# How often a running attempt looks at its cancel event (threading.Event cannot be polled).
_CANCEL_POLL_S = 0.05
# Once every process of the attempt is dead the pipes reach EOF at once; this only bounds
# the wait when an unknown process (no marker, outside the group and cgroup) still holds one.
_DRAIN_S = 1.0
# Killed processes need a moment to exit, and a cgroup can only be removed once empty.
_GONE_WAIT_S = 1.0
# A pipe's default capacity, more than a read of one usually returns. A larger size costs
# each read a buffer that big (os.read allocates it, then shrinks it): 17 µs per read at
# 1 MB against 0.8 µs at 64 KB, and an agent's stderr comes in many small writes.
_READ_CHUNK = 1 << 16
# How far back before a read a give_up_on match may start.
_GIVE_UP_LOOKBACK = 4096

# The rlimit OOM heuristic (an rlimit makes allocations fail instead of reporting anything):
# with a cap set, an attempt that was neither timed out nor cancelled counts as out of
# memory when it died of SIGKILL (the kernel OOM killer), SIGSEGV or SIGABRT (unchecked or
# aborting allocation failures), or exited non-zero with one of these messages on stderr
# (Python's MemoryError, V8's "Fatal process out of memory", glibc/C++ allocation errors).
# It can mistake an unrelated crash for an OOM; the cgroup methods report the kernel's count.
_OOM_SIGNALS = frozenset({signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT})
_OOM_MESSAGE = re.compile(
    # SystemResources: Zig's allocation failure, as Lightpanda reports it at start-up.
    r"MemoryError|out of memory|OutOfMemory|Cannot allocate memory|std::bad_alloc|"
    r"err=SystemResources",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ProcessSpec:
    argv: list[str]
    env: dict[str, str]  # the full environment for the child
    cwd: Path
    timeout_s: float | None  # wall clock; None = no limit
    memory_max_mb: int | None = None
    stdin_text: str | None = None  # None -> stdin is /dev/null
    # The attempt's private TMPDIR when its owner made it (the engine: isolation/scratch.py)
    # and removes it; None -> run_process makes one and removes it itself.
    tmpdir: Path | None = None
    # The attempt's folder (what it is given and what it leaves): a remote executor ships it
    # to the node and back. None: the process has none of its own.
    workdir: Path | None = None
    # The value of MARKER_ENV its processes carry; None -> a fresh one. A remote executor
    # picks it, so that a guard outliving a lost worker can find them.
    marker: str | None = None
    # What its processes cost (isolation/resources.py): sampled every this many seconds
    # (None: not measured), each process given its role by the first of ``roles`` it
    # matches (the backend's).
    sample_interval_s: float | None = None
    roles: tuple[RoleRule, ...] = ()
    # A regular expression: once a line of the agent's stdout shows it (an agent that would
    # wait without end, such as Codex reconnecting to a model nothing answers for), its
    # processes are killed and the result's ``gave_up`` holds what it said.
    give_up_on: str | None = None


@dataclass
class ProcessResult:
    returncode: int | None  # None if it never started
    stdout: str  # utf-8, errors replaced; what was produced before a kill is kept
    stderr: str
    duration_s: float  # everything run_process did: spawn, supervision, cleanup
    # The agent's own time: from the call that starts its program to its exit (what the
    # time around a subprocess.run measures), without the harness's set-up and clean-up
    # around it (what benchmarks/overhead.py subtracts).
    ran_s: float = 0.0
    timed_out: bool = False
    interrupted: bool = False  # killed because the cancel event was set
    oom: bool = False  # over memory_max_mb (or the kernel OOM-killed in its cgroup)
    signal: int | None = None  # the signal that ended it, if any
    memory_method: str | None = None  # "cgroup-v2" | "cgroup-v1" | "rlimit" | None
    start_error: str | None = None  # the OSError at spawn, e.g. a missing binary
    stray_killed: int = 0  # processes of this attempt found alive after it ended, killed
    # Time it waited for a free slot before its spawn (a pipelined pool, see run_process):
    # in neither duration_s nor ran_s, and not the agent's time.
    queued_s: float = 0.0
    node: str | None = None  # the cluster node it ran on (a remote executor's attempts)
    # Why it has no outcome of its own: the node or worker running it was lost (its
    # row is an infrastructure failure, error_class node_lost, retried on resume).
    lost: str | None = None
    # Its processes' memory and CPU by role, up to its end (None: not sampled).
    resources: ResourceUse | None = None
    gave_up: str | None = None  # what the agent printed that matched give_up_on


class AttemptNotBegun(Exception):
    """The pool stopped (or was cancelled) while this attempt waited for its first slot:
    its agent never ran, so it has no row, and a resume runs it."""


class Slots:
    """At most ``n`` attempts at once hold a slot: from their agent's spawn until its
    processes are gone (:class:`Slot`). Their set-up before (the attempt folder, the
    command) and their clean-up after (parsing what the agent left, their row) hold none,
    so both overlap other attempts' agents instead of leaving a worker idle; the agents
    running at once stay ``n``. Once ``stop`` is set no attempt gets one to begin, but a
    begun attempt's second launch (an empty answer's retry) does.

    Attempts begin in the order they were created (their :class:`Slot`, made as an
    attempt is taken from the queue), whichever thread finished its set-up first: with one
    worker, rows come in the order of the tasks."""

    def __init__(self, n: int, stop: threading.Event):
        self._free = n
        self._stop = stop
        self._lock = threading.Lock()
        self._tickets = itertools.count()
        self._unbegun: list[int] = []  # tickets of attempts not begun yet, a heap
        # The attempts waiting in take(), each on its own condition of the one lock: a
        # change wakes only those it lets go, not every waiter (with twice as many attempt
        # threads as slots, waking all of them on every release was most of the harness's
        # thread switches).
        self._waiting: dict[int, threading.Condition] = {}

    def ticket(self) -> int:
        """A new attempt's place in the order attempts begin."""
        with self._lock:
            ticket = next(self._tickets)
            heapq.heappush(self._unbegun, ticket)
            return ticket

    def take(self, cancel: threading.Event | None, ticket: int) -> bool:
        """Wait for a free slot (and, for an attempt's first launch, for every attempt
        created before it to have begun or ended); False, holding none, if ``cancel`` is
        set first. A first launch refused (``cancel``, or the pool stopped) raises
        :class:`AttemptNotBegun`."""
        with self._lock:
            beginning = ticket in self._unbegun

            def refused() -> bool:
                if beginning and self._stop.is_set():
                    return True
                return cancel is not None and cancel.is_set()

            try:
                if not self._may_go(ticket, beginning):
                    turn = self._waiting[ticket] = threading.Condition(self._lock)
                    # Polled, not only woken: cancel and stop are events of their own.
                    while not (refused() or self._may_go(ticket, beginning)):
                        turn.wait(_CANCEL_POLL_S)
                if refused():
                    if beginning:
                        raise AttemptNotBegun
                    return False
                self._free -= 1
                return True
            finally:
                self._waiting.pop(ticket, None)
                if beginning:
                    self._forget(ticket)

    def forget(self, ticket: int) -> None:
        """The attempt ``ticket`` begun, or ended before its agent: later ones may begin."""
        with self._lock:
            self._forget(ticket)

    def release(self) -> None:
        with self._lock:
            self._free += 1
            self._wake()

    def _may_go(self, ticket: int, beginning: bool) -> bool:
        return self._free > 0 and (not beginning or self._unbegun[0] == ticket)

    def _forget(self, ticket: int) -> None:
        if ticket in self._unbegun:
            self._unbegun.remove(ticket)
            heapq.heapify(self._unbegun)
            self._wake()

    def _wake(self) -> None:
        """Wake the waiters that may now go: second launches, then the next to begin (at
        most as many as there are free slots)."""
        if not self._free or not self._waiting:
            return
        head = self._unbegun[0] if self._unbegun else None
        going = [t for t in self._waiting if t not in self._unbegun]
        if head in self._waiting:
            going.append(head)
        for ticket in going[: self._free]:
            self._waiting[ticket].notify()


class Slot:
    """One attempt's hold on a slot of :class:`Slots`: taken when its agent is spawned,
    released once its agent's processes are gone, taken again for a second launch."""

    def __init__(self, slots: Slots):
        self._slots = slots
        self._ticket = slots.ticket()
        self._held = False

    def take(self, cancel: threading.Event | None) -> bool:
        """Hold the slot; False if ``cancel`` came first (:meth:`Slots.take`)."""
        if not self._held:
            self._held = self._slots.take(cancel, self._ticket)
        return self._held

    def release(self) -> None:
        """Give the slot back (if held); an attempt that never launched gives up its turn."""
        if self._held:
            self._held = False
            self._slots.release()
        else:
            self._slots.forget(self._ticket)  # nothing if it has begun


def run_process(
    spec: ProcessSpec,
    cancel: threading.Event | None = None,
    slot: Slot | None = None,
) -> ProcessResult:
    """Run ``spec`` to its end, deadline or cancellation; never raises for a spawn failure.

    With a ``slot``, the process runs holding it (taken here unless held already) and
    releases it once its leftovers are killed (see :class:`Slots`)."""
    prepared_at = time.monotonic()
    launch = _Launch.prepare(spec)
    proc: subprocess.Popen[bytes] | None = None
    if launch.gated:
        try:
            proc = launch.spawn()
        except (OSError, subprocess.SubprocessError) as exc:
            return launch.never_started(
                duration_s=time.monotonic() - prepared_at,
                start_error=_describe_spawn_error(exc),
            )

    waiting_since = time.monotonic()
    if not _take_slot(launch, proc, slot, cancel):
        # A second launch cancelled before it could start: nothing ran, and it says so.
        return launch.never_started(
            duration_s=0.0,
            interrupted=True,
            memory_method=launch.method,
            queued_s=time.monotonic() - waiting_since,
        )
    # The agent's time starts at its spawn, or its shell's release: as upstream times its
    # subprocess.run, an exec is the agent's.
    started = time.monotonic()
    queued_s = started - waiting_since
    if proc is None:
        try:
            proc = launch.spawn()
        except (OSError, subprocess.SubprocessError) as exc:
            if slot is not None:
                slot.release()
            return launch.never_started(
                duration_s=time.monotonic() - prepared_at - queued_s,
                start_error=_describe_spawn_error(exc),
            )
    ended = _run_to_end(launch, proc, started, cancel, slot)
    return _result(launch, ended, prepared_at, queued_s)


@dataclass(frozen=True)
class _Launch:
    """One attempt's set-up before its agent runs: its marker, private TMPDIR, environment
    and memory cap, and the command that starts the agent under that cap."""

    spec: ProcessSpec
    marker: str
    tmpdir: str
    own_tmpdir: bool  # made here (spec.tmpdir None), so removed here
    env: dict[str, str]
    method: str | None  # the memory cap's method; None: no cap asked for
    cgroup: _AttemptCgroup | None
    rlimit_bytes: int | None
    argv: list[str]
    stdin_bytes: bytes | None  # None -> stdin is /dev/null

    @classmethod
    def prepare(cls, spec: ProcessSpec) -> _Launch:
        marker = spec.marker or uuid.uuid4().hex
        # A private TMPDIR, removed when the attempt ends: what its programs leave in temp
        # (a killed agent-browser daemon's Chromium profile, ...) goes with it. Short,
        # because Chromium puts its singleton socket there (scratch.temp_root).
        own_tmpdir = spec.tmpdir is None
        tmpdir = (
            tempfile.mkdtemp(prefix="agent-benchmarks-attempt-", dir=temp_root())
            if own_tmpdir
            else str(spec.tmpdir)
        )
        method, cgroup, rlimit_bytes = _memory_cap_for(spec.memory_max_mb, marker)
        return cls(
            spec=spec,
            marker=marker,
            tmpdir=tmpdir,
            own_tmpdir=own_tmpdir,
            env={**spec.env, MARKER_ENV: marker, "TMPDIR": tmpdir},
            method=method,
            cgroup=cgroup,
            rlimit_bytes=rlimit_bytes,
            argv=_capped_argv(spec.argv, cgroup, rlimit_bytes, gated=True),
            stdin_bytes=None if spec.stdin_text is None else spec.stdin_text.encode(),
        )

    @property
    def gated(self) -> bool:
        """A capped agent starts as a shell that puts itself under the cap and stops until
        the attempt has its slot: it is spawned before the slot, because joining a cgroup
        waits for an RCU grace period (5-12 ms here, half of an instant agent's run) and
        that wait is better spent while other attempts' agents run."""
        return self.argv is not self.spec.argv

    def spawn(self) -> subprocess.Popen[bytes]:
        if self.gated:
            # The shell would report a missing program as its own exit 127: say it as
            # Popen does, before anything starts.
            _check_executable(self.spec.argv[0], self.env, self.spec.cwd)
        return subprocess.Popen(
            self.argv,
            env=self.env,
            cwd=self.spec.cwd,
            stdin=subprocess.DEVNULL if self.stdin_bytes is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def undo(self) -> None:
        """Remove what the set-up made: the cgroup and a TMPDIR made here."""
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.own_tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def never_started(self, **why: Any) -> ProcessResult:
        """Undo the set-up of a process that did not start, and say why."""
        self.undo()
        return ProcessResult(returncode=None, stdout="", stderr="", **why)


def _memory_cap_for(
    memory_max_mb: int | None, marker: str
) -> tuple[str | None, _AttemptCgroup | None, int | None]:
    """(method, the attempt's cgroup, its rlimit in bytes) for a cap of ``memory_max_mb``."""
    if memory_max_mb is None:
        return None, None, None
    method = memory_cap_method()
    cgroup: _AttemptCgroup | None = None
    if method in (CGROUP_V2, CGROUP_V1):
        try:
            parent = _memory_cap()[1]
            assert parent is not None
            cgroup = _AttemptCgroup.create(method, parent, marker, memory_max_mb << 20)
        except OSError:
            # The probe passed but this cgroup could not be made (e.g. our cgroup moved):
            # a cap that is an rlimit beats running this attempt without one.
            method = RLIMIT
    return method, cgroup, (memory_max_mb << 20 if method == RLIMIT else None)


def _take_slot(
    launch: _Launch,
    proc: subprocess.Popen[bytes] | None,
    slot: Slot | None,
    cancel: threading.Event | None,
) -> bool:
    """Wait for the attempt's slot (when it has one); False, its gated shell discarded, if
    ``cancel`` came first. A first launch the pool refuses undoes the set-up and raises
    :class:`AttemptNotBegun`."""
    try:
        refused = slot is not None and not slot.take(cancel)
    except AttemptNotBegun:
        _discard_gated(proc)
        launch.undo()
        raise
    if refused:
        _discard_gated(proc)
    return not refused


@dataclass(frozen=True)
class _Ended:
    """How a started agent ended, once everything its attempt started is gone."""

    returncode: int
    stdout: bytes
    stderr: bytes
    gave_up: str | None
    timed_out: bool
    interrupted: bool
    ran_s: float
    stray_killed: int
    resources: ResourceUse | None
    cgroup_oom: bool  # the kernel OOM-killed in the attempt's cgroup


def _run_to_end(
    launch: _Launch,
    proc: subprocess.Popen[bytes],
    started: float,
    cancel: threading.Event | None,
    slot: Slot | None,
) -> _Ended:
    """Supervise the spawned agent to its end, then kill what it left, reap it, give the
    slot back and remove the set-up."""
    spec = launch.spec
    pidfd = os.pidfd_open(proc.pid)
    if launch.gated:
        _let_go(pidfd)
    pipes = _Pipes(proc, launch.stdin_bytes, pidfd, spec.give_up_on)
    leader = str(proc.pid)
    _LEADERS.add(leader)
    sampler = _sampler(spec, proc.pid, launch.marker, launch.tmpdir, launch.cgroup)
    resources: ResourceUse | None = None
    try:
        timed_out, interrupted = _supervise(proc.pid, pipes, spec.timeout_s, started, cancel)
        ran_s = time.monotonic() - started
        if sampler is not None:  # its last sample: the agent exited, its leftovers not killed
            resources = sampler.finish()
    finally:
        if sampler is not None:
            sampler.stop()
        # Also on KeyboardInterrupt or a bug above: nothing this attempt started outlives it.
        try:
            try:
                stray_killed = _kill_leftovers(
                    launch.marker, launch.tmpdir, proc.pid, launch.cgroup
                )
            finally:
                if slot is not None:
                    slot.release()
            pipes.drain(_DRAIN_S)
            returncode = proc.wait()
        finally:
            # Reaped (or given up on): its pid may now be another process's.
            _LEADERS.discard(leader)
        os.close(pidfd)
        pipes.close()
        cgroup = launch.cgroup
        cgroup_oom = cgroup is not None and cgroup.oom_kills() > 0
        if cgroup is not None and resources is not None:
            resources = cgroup.with_peak(resources)
        launch.undo()
    return _Ended(
        returncode=returncode,
        stdout=pipes.stdout,
        stderr=pipes.stderr,
        gave_up=pipes.gave_up,
        timed_out=timed_out,
        interrupted=interrupted,
        ran_s=ran_s,
        stray_killed=stray_killed,
        resources=resources,
        cgroup_oom=cgroup_oom,
    )


def _result(launch: _Launch, ended: _Ended, prepared_at: float, queued_s: float) -> ProcessResult:
    """The attempt's result: a cap the gated shell could not apply is a start error."""
    stderr = ended.stderr.decode("utf-8", errors="replace")
    if launch.gated and ended.returncode == 126 and stderr.startswith(_CAP_FAILED):
        return ProcessResult(
            returncode=None,
            stdout="",
            stderr="",
            duration_s=time.monotonic() - prepared_at - queued_s,
            memory_method=launch.method,
            start_error=f"{_CAP_FAILED} ({launch.method}, {launch.spec.memory_max_mb} MB)",
        )
    ended_by = -ended.returncode if ended.returncode < 0 else None
    return ProcessResult(
        returncode=ended.returncode,
        stdout=ended.stdout.decode("utf-8", errors="replace"),
        stderr=stderr,
        duration_s=time.monotonic() - prepared_at - queued_s,
        ran_s=ended.ran_s,
        timed_out=ended.timed_out,
        interrupted=ended.interrupted,
        oom=_out_of_memory(launch, ended, ended_by, stderr),
        signal=ended_by,
        memory_method=launch.method,
        stray_killed=ended.stray_killed,
        queued_s=queued_s,
        resources=ended.resources,
        gave_up=ended.gave_up,
    )


def _out_of_memory(launch: _Launch, ended: _Ended, ended_by: int | None, stderr: str) -> bool:
    """The cgroup's OOM count, or under an rlimit the heuristic of ``_OOM_SIGNALS``."""
    if launch.cgroup is not None:
        return ended.cgroup_oom
    return (
        launch.rlimit_bytes is not None
        and not (ended.timed_out or ended.interrupted)
        and (
            ended_by in _OOM_SIGNALS
            or (ended.returncode != 0 and _OOM_MESSAGE.search(stderr) is not None)
        )
    )


def _sampler(
    spec: ProcessSpec, leader: int, marker: str, tmpdir: str, cgroup: _AttemptCgroup | None
) -> ResourceSampler | None:
    """The attempt's resource sampler, started (None when the spec asks for none). Its
    processes are its cgroup's members, or else as :class:`_UncappedMembers` finds them."""
    if spec.sample_interval_s is None:
        return None
    members = cgroup.members if cgroup is not None else _UncappedMembers(leader, marker, tmpdir)
    return ResourceSampler(leader, members, spec.roles, spec.sample_interval_s).start()


def kill_strays(marker_value: str) -> int:
    """SIGKILL every process whose environment has ``MARKER_ENV=marker_value``, wait until
    they are gone (reaping those that are our children) and return how many were killed."""
    return len(_kill_marked(marker_value, None, exclude=None))


def attempt_pids(marker_value: str, tmpdir: str | None = None) -> list[int]:
    """The live processes of one attempt (while it runs): those carrying its marker, and
    those whose arguments name its temp folder (Chromium's renderers, which start with a
    cleared environment). An episode's fault picks the engine it kills among them."""
    return _marked_pids(marker_value, tmpdir)


def attempt_marker(owner: str) -> str:
    """A new attempt's marker (the ``marker`` of its :class:`ProcessSpec`), starting with
    ``owner`` (its run's key), so that whatever of the attempt outlives its harness is
    found again by the owner's next session (:func:`reap`)."""
    return f"{owner}-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Reaped:
    processes: int  # processes killed
    cgroups: int  # memory cgroups removed


def reap(prefix: str, folder_prefix: str | None = None) -> Reaped:
    """Kill every process whose marker starts with ``prefix`` (and, with ``folder_prefix``,
    every process whose arguments name a path starting with it: Chromium's helpers clear
    their environment but name their profile in the attempt's temp folder), then remove the
    memory cgroups made for such markers, wherever in the hierarchy they are. What it found.

    For what a harness killed outright (SIGKILL, a lost machine, a Ray worker gone) left:
    nothing watches its attempts any more, so their agents run on, a capped agent's shell
    that was waiting for its slot stays stopped forever (state T: its process group was
    orphaned from the start, so the kernel never continues it), and their cgroups stay."""
    variable = f"{MARKER_ENV}={prefix}".encode()
    folder = folder_prefix.encode() if folder_prefix is not None else None
    ours = _ancestors()  # this process and those it runs in: never the run's leftovers
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in ours:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb", buffering=0) as fh:
                environ = fh.read()
            if environ.startswith(variable) or b"\0" + variable in environ:
                found.add(int(entry.name))
            elif folder is not None:
                with open(f"/proc/{entry.name}/cmdline", "rb", buffering=0) as fh:
                    if folder in fh.read():
                        found.add(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    killed = _kill_pids(found)
    removed = 0
    for cgroup in _leftover_cgroups(f"agent-benchmarks-{prefix}"):
        killed |= cgroup.kill_members(exclude=0)
        cgroup.remove()
        removed += not cgroup.path.exists()
    return Reaped(processes=len(killed), cgroups=removed)


def leftover_cgroups(name_prefix: str) -> list[Path]:
    """The memory cgroups named ``name_prefix``... anywhere in the hierarchy (those that
    :func:`reap` looks for), for a caller that first reads their names."""
    return [cgroup.path for cgroup in _leftover_cgroups(name_prefix)]


def _ancestors() -> set[int]:
    """This process and its ancestors, up to the first."""
    found, pid = set(), os.getpid()
    while pid > 0 and pid not in found:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb", buffering=0) as fh:
                stat = fh.read()
        except OSError:
            break
        pid = int(stat[stat.rfind(b")") + 2 :].split()[1])  # the ppid, after the state
    return found


def _leftover_cgroups(name_prefix: str) -> list[_AttemptCgroup]:
    """The attempts' cgroups whose name starts with ``name_prefix``, anywhere in the memory
    hierarchy: a harness started from another shell or service lives in another cgroup than
    the one that made them."""
    found = []
    for method, mount in _cgroup_mounts().items():
        for root, folders, _ in os.walk(mount):
            for name in folders:
                if name.startswith(name_prefix):
                    found.append(_AttemptCgroup(method, Path(root, name)))
            folders[:] = [f for f in folders if not f.startswith(name_prefix)]
    return found


@functools.cache
def memory_cap_method() -> str | None:
    """The memory cap this machine offers: "cgroup-v2", "cgroup-v1" or "rlimit"."""
    return _memory_cap()[0]


# --- supervision -------------------------------------------------------------------------


def _supervise(
    pgid: int,
    pipes: _Pipes,
    timeout_s: float | None,
    started: float,
    cancel: threading.Event | None,
) -> tuple[bool, bool]:
    """Pump the pipes until the leader exits, killing the group at the deadline or on
    cancel. Returns (timed_out, interrupted)."""
    deadline = None if timeout_s is None else started + timeout_s
    timed_out = interrupted = killed = False
    kill_at: float | None = None
    while not pipes.leader_exited:
        now = time.monotonic()
        if cancel is not None and cancel.is_set() and kill_at is None:
            interrupted = True
            _signal_group(pgid, signal.SIGTERM)
            kill_at = now + _TERM_GRACE_S
        if pipes.gave_up is not None and kill_at is None:
            _signal_group(pgid, signal.SIGTERM)
            kill_at = now + _TERM_GRACE_S
        if deadline is not None and now >= deadline and kill_at is None:
            timed_out = True
            _signal_group(pgid, signal.SIGTERM)
            kill_at = now + _TERM_GRACE_S
        if kill_at is not None and now >= kill_at and not killed:
            _signal_group(pgid, signal.SIGKILL)
            killed = True
        wake_ups = []
        if cancel is not None and not killed:
            wake_ups.append(now + _CANCEL_POLL_S)
        if deadline is not None and not timed_out:
            wake_ups.append(deadline)
        if kill_at is not None and not killed:
            wake_ups.append(kill_at)
        pipes.pump(min(wake_ups) - now if wake_ups else None)
    return timed_out, interrupted


class _Pipes:
    """The child's pipes and its pidfd, served by one poll() loop in the calling thread."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stdin_bytes: bytes | None,
        pidfd: int,
        give_up_on: str | None = None,
    ):
        self._proc = proc
        self._give_up_on = re.compile(give_up_on.encode()) if give_up_on else None
        self.gave_up: str | None = None
        self._poller = select.poll()
        self._pidfd = pidfd
        self._poller.register(pidfd, select.POLLIN)
        assert proc.stdout is not None and proc.stderr is not None
        self._out_fd, self._err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        self._buffers = {self._out_fd: bytearray(), self._err_fd: bytearray()}
        self._open = {self._out_fd, self._err_fd}
        for fd in self._open:
            self._poller.register(fd, select.POLLIN)
        self._stdin_fd: int | None = None
        self._pending = memoryview(stdin_bytes or b"")
        if proc.stdin is not None:
            self._stdin_fd = proc.stdin.fileno()
            # A non-blocking write takes what the pipe has room for; poll says when to go on.
            os.set_blocking(self._stdin_fd, False)
            self._poller.register(self._stdin_fd, select.POLLOUT)
        self.leader_exited = False

    @property
    def stdout(self) -> bytes:
        return bytes(self._buffers[self._out_fd])

    @property
    def stderr(self) -> bytes:
        return bytes(self._buffers[self._err_fd])

    def pump(self, timeout_s: float | None) -> None:
        """Wait up to ``timeout_s`` (None: until something happens) and serve what is ready."""
        timeout_ms = None if timeout_s is None else max(0, math.ceil(timeout_s * 1000))
        for fd, events in self._poller.poll(timeout_ms):
            if fd == self._pidfd:
                self.leader_exited = True
                self._poller.unregister(fd)
            elif fd == self._stdin_fd:
                self._feed(events)
            else:
                self._read(fd)

    def drain(self, timeout_s: float) -> None:
        """Read what is left until both output pipes reach EOF or ``timeout_s`` passes."""
        self._stop_feeding()
        deadline = time.monotonic() + timeout_s
        while self._open and (remaining := deadline - time.monotonic()) > 0:
            self.pump(remaining)

    def close(self) -> None:
        self._stop_feeding()
        for stream in (self._proc.stdout, self._proc.stderr):
            assert stream is not None
            stream.close()

    def _read(self, fd: int) -> None:
        data = os.read(fd, _READ_CHUNK)
        if data:
            self._buffers[fd] += data
            if self._give_up_on is not None and fd == self._out_fd and self.gave_up is None:
                # The lines this read completed (a line may span two reads).
                tail = self._buffers[fd][-(len(data) + _GIVE_UP_LOOKBACK) :]
                lines = tail[: tail.rfind(b"\n") + 1]
                if (match := self._give_up_on.search(lines)) is not None:
                    self.gave_up = match.group().decode("utf-8", errors="replace").strip()
        else:
            self._open.discard(fd)
            self._poller.unregister(fd)

    def _feed(self, events: int) -> None:
        fd = self._stdin_fd
        assert fd is not None
        if not events & select.POLLOUT:  # POLLERR/POLLHUP: the reader has gone
            self._stop_feeding()
            return
        try:
            written = os.write(fd, self._pending)
        except BlockingIOError:
            return
        except BrokenPipeError:
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            self._stop_feeding()

    def _stop_feeding(self) -> None:
        if self._stdin_fd is not None:
            self._poller.unregister(self._stdin_fd)
            self._stdin_fd = None
            assert self._proc.stdin is not None
            with suppress(BrokenPipeError):
                self._proc.stdin.close()


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError):  # the group has no members left
        os.killpg(pgid, sig)


# The cap is applied by /bin/sh between fork and exec of the agent: it joins the cgroup
# (writing its own pid, which the agent keeps across exec) or sets RLIMIT_DATA, then execs
# the agent. A preexec_fn would do the same in Python, but subprocess then forks the whole
# harness instead of using vfork: 25-40 ms per attempt for a harness of this size (all
# inside Popen, measured by benchmarks/overhead.py), where the shell costs about 1 ms.
# Everything the agent ever forks is inside the cgroup or under the limit, as before.
_CAP_FAILED = "agent-benchmarks: could not put the attempt under its memory cap"
_JOIN_CGROUP = f'{{ echo $$ >"$0"; }} 2>/dev/null || {{ echo "{_CAP_FAILED}" >&2; exit 126; }}; '
# RLIMIT_DATA, not RLIMIT_AS: V8-based programs (lightpanda, Chromium, node) reserve
# gigabytes of address space they never touch. lightpanda dies at startup under RLIMIT_AS
# even at 4096 MB ("Fatal process out of memory: Failed to reserve virtual memory"), and
# needs RLIMIT_DATA above ~512 MB. dash's and bash's `ulimit -d` take KiB and set both the
# soft and the hard limit.
_LIMIT_DATA = f'ulimit -d "$0" 2>/dev/null || {{ echo "{_CAP_FAILED}" >&2; exit 126; }}; '
# Under the cap, a gated shell stops itself until run_process lets it go (_let_go).
_STOP = "kill -STOP $$; "
_EXEC = 'exec "$@"'


def _capped_argv(
    argv: list[str], cgroup: _AttemptCgroup | None, rlimit_bytes: int | None, gated: bool
) -> list[str]:
    """``argv`` run under the memory cap; ``argv`` itself when there is no cap. A gated
    one stops once under the cap, before it runs ``argv``."""
    then = (_STOP if gated else "") + _EXEC
    if cgroup is not None:
        return ["/bin/sh", "-c", _JOIN_CGROUP + then, str(cgroup.path / "cgroup.procs"), *argv]
    if rlimit_bytes is not None:
        return ["/bin/sh", "-c", _LIMIT_DATA + then, str(rlimit_bytes >> 10), *argv]
    return argv


def _let_go(pidfd: int) -> None:
    """Continue a gated shell once it has stopped itself (by now, normally: it was spawned
    before its attempt waited for a slot). One that exited instead (the cap failed) is
    left to be reaped as it is."""
    info = os.waitid(os.P_PIDFD, pidfd, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
    if info is not None and info.si_code == os.CLD_STOPPED:
        signal.pidfd_send_signal(pidfd, signal.SIGCONT)


def _discard_gated(proc: subprocess.Popen[bytes] | None) -> None:
    """Kill and reap a gated shell that will not be let go (it runs nothing yet)."""
    if proc is None:
        return
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # unreaped, so its group id is still its own
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _check_executable(program: str, env: dict[str, str], cwd: Path) -> None:
    """Raise the OSError Popen would raise for ``program`` (not found, not executable, not
    a program), looking it up as exec does: relative to ``cwd`` when it names a folder,
    else on the child's PATH."""
    if os.path.dirname(program):
        candidates = [Path(cwd, program)]
    else:
        candidates = [Path(cwd, folder, program) for folder in os.get_exec_path(env)]
    found_one = False
    for path in candidates:
        if not path.is_file():
            continue
        found_one = True
        if not os.access(path, os.X_OK):
            continue
        with open(path, "rb") as fh:
            magic = fh.read(4)
        if magic != b"\x7fELF" and not magic.startswith(b"#!"):
            # The shell would run it as a shell script; exec refuses it.
            raise OSError(errno.ENOEXEC, os.strerror(errno.ENOEXEC), program)
        return
    code = errno.EACCES if found_one else errno.ENOENT
    raise OSError(code, os.strerror(code), program)


def _describe_spawn_error(exc: OSError | subprocess.SubprocessError) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename!r}"
    return str(exc) or type(exc).__name__


# --- leftovers ---------------------------------------------------------------------------


def _kill_leftovers(marker: str, tmpdir: str, leader: int, cgroup: _AttemptCgroup | None) -> int:
    """Kill every process of the attempt but its leader (which the caller reaps) and
    return how many were found alive. Under a cgroup, its members are the attempt's
    processes whatever they did to their environment, session or arguments (only a
    privileged process can move itself out); without one, they are found by the marker and
    by the temp folder in their arguments. The group kill catches members that dropped
    both."""
    if cgroup is not None:
        killed = cgroup.kill_members(exclude=leader)
    else:
        # Other attempts' agents, alive or not yet reaped (so their pids are still theirs):
        # not ours, and most of the processes started since our leader, so left unread.
        others = _LEADERS - {str(leader)}
        killed = _kill_marked(
            marker, tmpdir, exclude=leader, born_since=_start_ticks(leader), others=others
        )
    _signal_group(leader, signal.SIGKILL)
    return len(killed)


def _kill_marked(
    marker: str,
    tmpdir: str | None,
    exclude: int | None,
    born_since: int | None = None,
    others: Collection[str] = frozenset(),
) -> set[int]:
    """Kill the processes carrying the marker, scanning again while a scan finds new ones:
    a process not yet killed can fork while the scan walks past its child's pid. With
    ``born_since`` (the leader's start, in clock ticks since boot), only processes started
    at or after it are looked at: one started earlier cannot descend from the leader. The
    pids in ``others`` are not looked at."""
    attempted: set[int] = set()
    killed: set[int] = set()
    while True:
        marked = _marked_pids(marker, tmpdir, born_since, others)
        found = {pid for pid in marked if pid != exclude} - attempted
        if not found:
            return killed
        attempted |= found
        killed |= _kill_pids(found)


def _marked_pids(
    marker: str,
    tmpdir: str | None,
    born_since: int | None = None,
    others: Collection[str] = frozenset(),
) -> list[int]:
    """The attempt's processes: those with its marker in their environment, and those whose
    arguments name its private temp folder. Chromium starts its zygote, renderers and
    utility processes with a cleared environment but with ``--user-data-dir`` in their
    arguments (a profile in TMPDIR); left alone they outlive the browser for a moment and
    write into the profile after the folder was removed. With ``born_since``, processes
    started before it are skipped unread (see :func:`_kill_marked`), as are the pids in
    ``others``."""
    # Run after every attempt over every process of the machine, so /proc is read raw: a
    # third of the time psutil takes to parse each environment into a dict. Kernel threads
    # and zombies have an empty environment; processes we may not read are not ours.
    marks = _Marks(marker, tmpdir)
    pids = []
    for entry in os.scandir("/proc"):
        name = entry.name
        if name in others:
            continue
        started = _STARTS.ticks(name, entry.inode())
        if started is _NOT_A_PROCESS or (
            born_since is not None and started is not None and started < born_since
        ):
            continue
        if marks.on(name):
            pids.append(int(name))
    return pids


class _Marks:
    """What makes a process the attempt's: its marker in the environment, or (for one with
    no marker at all) its private temp folder in the arguments."""

    def __init__(self, marker: str, tmpdir: str | None):
        self.variable = f"{MARKER_ENV}={marker}\0".encode()
        self.any_marker = f"{MARKER_ENV}=".encode()
        self.folder = tmpdir.encode() if tmpdir is not None else None

    def on(self, name: str) -> bool:
        """Whether the process /proc/``name`` carries them (False: gone, or not ours to
        read)."""
        try:
            with open(f"/proc/{name}/environ", "rb", buffering=0) as fh:
                environ = fh.read()
            if environ.startswith(self.variable) or b"\0" + self.variable in environ:
                return True
            if self.folder is not None and not (
                # Another attempt's process: its arguments cannot name our private folder.
                environ.startswith(self.any_marker) or b"\0" + self.any_marker in environ
            ):
                with open(f"/proc/{name}/cmdline", "rb", buffering=0) as fh:
                    return self.folder in fh.read()  # the arguments, NUL-separated
        except OSError:
            pass
        return False


class _UncappedMembers:
    """An uncapped attempt's processes, sample after sample, for its resource sampler:
    those carrying its marks (:class:`_Marks`, as the sweep finds them), and those
    descending from them (a program may start its children with an environment of its
    own: Codex its MCP servers). Of the processes started since its leader, each is read
    once, its marks and its parent then (descent runs from parent to child at its birth):
    later samples only read the new ones."""

    def __init__(self, leader: int, marker: str, tmpdir: str):
        self._leader = leader
        self._born_since = _start_ticks(leader)
        self._marks = _Marks(marker, tmpdir)
        # By /proc name: (start ticks, marked, parent pid) of each process read.
        self._read: dict[str, tuple[int, bool, int]] = {}

    def __call__(self) -> set[int]:
        others = _LEADERS - {str(self._leader)}
        current: dict[str, tuple[int, bool, int]] = {}
        for entry in os.scandir("/proc"):
            name = entry.name
            if name in others:
                continue
            started = _STARTS.ticks(name, entry.inode())
            if not isinstance(started, int) or (
                self._born_since is not None and started < self._born_since
            ):
                continue
            known = self._read.get(name)
            if known is None or known[0] != started:  # new, or a pid given again
                parent = _parent_of(name)
                if parent is None:
                    continue
                known = (started, self._marks.on(name), parent)
            current[name] = known
        self._read = current  # the gone forgotten
        children: dict[int, list[int]] = {}
        for name, (_, _, parent) in current.items():
            children.setdefault(parent, []).append(int(name))
        found = {int(name) for name, (_, marked, _) in current.items() if marked}
        frontier = [*found, self._leader]
        while frontier:
            pid = frontier.pop()
            for child in children.get(pid, ()):
                if child not in found:
                    found.add(child)
                    frontier.append(child)
        return found


def _parent_of(name: str) -> int | None:
    """The parent of the process /proc/``name``; None if it is gone."""
    stat = proc_stat(int(name))
    return stat.ppid if stat is not None else None


class _StartTimes:
    """Processes' start times (clock ticks since boot, /proc/PID/stat), each read once.

    An entry is keyed by the /proc entry's name and inode: the kernel gives a new process a
    new inode even where it reuses a pid, so a cached time is never another process's.
    Without this, every attempt's sweep read the environment of every process of the
    machine (about 70 here, 0.35 ms); with it, only of those started since its leader:
    mostly the other attempts' agents. /proc's other entries are remembered as not being
    processes, so the sweep's loop is one lookup per entry."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, int | object]] = {}  # name -> (inode, ticks)

    def ticks(self, name: str, inode: int) -> int | object | None:
        """The start of the process /proc/``name``, :data:`_NOT_A_PROCESS` for an entry
        that is no process, None if it is gone."""
        known = self._known.get(name)
        if known is not None and known[0] == inode:
            return known[1]
        started = _start_ticks(int(name)) if name.isdigit() else _NOT_A_PROCESS
        if started is not None:
            if len(self._known) > _STARTS_KEPT:
                self._known = {}  # dead pids' entries: cheaper to read the living again
            self._known[name] = (inode, started)
        return started


_NOT_A_PROCESS = object()
# The pids (as /proc names) of the agents run_process started and has not reaped yet.
_LEADERS: set[str] = set()
# More entries than the processes a machine keeps alive: only dead pids fill it past that.
_STARTS_KEPT = 65536
_STARTS = _StartTimes()


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot; None if it is gone."""
    stat = proc_stat(pid)
    return stat.started if stat is not None else None


def _kill_pids(pids: Iterable[int]) -> set[int]:
    """SIGKILL these processes, wait until they are gone and return those that were killed.

    Each is signalled through a pidfd, which names the process itself rather than a pid
    that could meanwhile be given to another one, and which becomes readable when it has
    exited: the wait is one poll() on all of them, not a loop that sleeps."""
    pidfds: dict[int, int] = {}
    try:
        for pid in pids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:  # gone already
                continue
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:  # gone meanwhile, or not ours to kill
                os.close(pidfd)
                continue
            pidfds[pid] = pidfd
        poller = select.poll()
        for pidfd in pidfds.values():
            poller.register(pidfd, select.POLLIN)
        pending = set(pidfds.values())
        deadline = time.monotonic() + _GONE_WAIT_S
        while pending and (remaining := deadline - time.monotonic()) > 0:
            for pidfd, _ in poller.poll(math.ceil(remaining * 1000)):
                poller.unregister(pidfd)
                pending.discard(pidfd)
        for pid in pidfds:
            with suppress(ChildProcessError):  # only our own children can be reaped here
                os.waitpid(pid, os.WNOHANG)
    finally:
        for pidfd in pidfds.values():
            os.close(pidfd)
    return set(pidfds)


# --- memory caps -------------------------------------------------------------------------


@functools.cache
def _memory_cap() -> tuple[str | None, Path | None]:
    """(method, the cgroup directory attempts' cgroups are made in), probed once.

    A cgroup is tried for real: make a child of our own cgroup, set a limit, have a process
    join it the way attempts do, remove it. Containers and sandboxes often mount cgroups
    that are read-only, lack the memory controller or refuse some of these steps."""
    for method, parent in _cgroup_candidates():
        if _cgroup_works(method, parent):
            return method, parent
    return RLIMIT, None


def _cgroup_mounts() -> dict[str, Path]:
    """Where the cgroup v2 hierarchy and the v1 memory hierarchy are mounted."""
    mounts: dict[str, Path] = {}
    with suppress(OSError), open("/proc/self/mounts") as lines:
        for line in lines:
            _, mount_point, fs_type, options, *_ = line.split()
            if fs_type == "cgroup2":
                mounts.setdefault(CGROUP_V2, Path(mount_point))
            elif fs_type == "cgroup" and "memory" in options.split(","):
                mounts.setdefault(CGROUP_V1, Path(mount_point))
    return mounts


def _cgroup_candidates() -> list[tuple[str, Path]]:
    mounts = _cgroup_mounts()
    ours: dict[str, str] = {}
    with suppress(OSError), open("/proc/self/cgroup") as lines:
        for line in lines:
            hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
            if hierarchy == "0" and not controllers:
                ours[CGROUP_V2] = path
            elif "memory" in controllers.split(","):
                ours[CGROUP_V1] = path
    return [
        (method, mounts[method] / ours[method].lstrip("/"))
        for method in (CGROUP_V2, CGROUP_V1)
        if method in mounts and method in ours
    ]


def _cgroup_works(method: str, parent: Path) -> bool:
    if method == CGROUP_V2 and not _enable_v2_memory(parent):
        return False
    try:
        cgroup = _AttemptCgroup.create(method, parent, f"probe-{uuid.uuid4().hex}", 64 << 20)
    except OSError:
        return False
    try:
        check = subprocess.run(
            _capped_argv(
                [sys.executable, "-S", "-c", "print(open('/proc/self/cgroup').read())"],
                cgroup,
                None,
                gated=False,
            ),
            capture_output=True,
            text=True,
            timeout=30,
        )
        return cgroup.path.name in check.stdout
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        cgroup.remove()


def _enable_v2_memory(parent: Path) -> bool:
    """cgroup v2 gives a child the memory controller only if its parent delegates it."""
    try:
        if "memory" not in (parent / "cgroup.controllers").read_text().split():
            return False
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            # Refused (EBUSY) for a non-root cgroup that has processes of its own.
            (parent / "cgroup.subtree_control").write_text("+memory")
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class _AttemptCgroup:
    """One attempt's memory cgroup, a child of the harness's own cgroup."""

    method: str
    path: Path

    @classmethod
    def create(cls, method: str, parent: Path, name: str, limit_bytes: int) -> _AttemptCgroup:
        path = parent / f"agent-benchmarks-{name}"
        path.mkdir()
        cgroup = cls(method, path)
        try:
            # The swap limit too where there is one, or the cap only bounds RAM and the
            # attempt swaps past it. v1 counts memory+swap and needs it >= the memory limit.
            if method == CGROUP_V2:
                (path / "memory.max").write_text(str(limit_bytes))
                cgroup._write_if_present("memory.swap.max", "0")
            else:
                (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                cgroup._write_if_present("memory.memsw.limit_in_bytes", str(limit_bytes))
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    def members(self) -> list[int]:
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill_members(self, exclude: int) -> set[int]:
        """SIGKILL every member but ``exclude``, reading the members again while that finds
        new ones (a member may fork while it is being killed); those killed."""
        attempted: set[int] = {exclude}
        killed: set[int] = set()
        while found := set(self.members()) - attempted:
            attempted |= found
            killed |= _kill_pids(found)
        return killed

    def with_peak(self, resources: ResourceUse) -> ResourceUse:
        """``resources`` with the attempt's peak the kernel counted in this cgroup (every
        page charged to it, page cache included), where the cgroup has that counter."""
        counter = "memory.peak" if self.method == CGROUP_V2 else "memory.max_usage_in_bytes"
        try:
            peak = int((self.path / counter).read_text())
        except (OSError, ValueError):
            return resources
        return resources.model_copy(
            update={"peak_bytes": peak, "peak_source": f"{self.method} {counter}"}
        )

    def oom_kills(self) -> int:
        """How many processes the kernel OOM-killed in this cgroup."""
        counters = "memory.events" if self.method == CGROUP_V2 else "memory.oom_control"
        try:
            lines = (self.path / counters).read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self) -> None:
        # rmdir fails (EBUSY) until the last killed member has exited. Giving up leaves an
        # empty cgroup directory behind, which is better than losing the attempt's result.
        deadline = time.monotonic() + _GONE_WAIT_S
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                    return
                time.sleep(0.005)

    def _write_if_present(self, name: str, value: str) -> None:
        if (self.path / name).exists():
            (self.path / name).write_text(value)

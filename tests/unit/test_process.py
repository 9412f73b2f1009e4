"""run_process against real child processes: output, deadlines, cancellation, escaped
daemons, memory caps and spawn failures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from agent_benchmarks.isolation import process
from agent_benchmarks.isolation.process import (
    MARKER_ENV,
    ProcessResult,
    ProcessSpec,
    kill_strays,
    memory_cap_method,
    run_process,
)

# Forks a daemon that escapes the process group with setsid() (as browsers do), waits
# until it has written its pid, says so, then runs the tail given as argv[2].
DAEMON_PARENT = r"""
import os, sys, time
pidfile = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(60)
    os._exit(0)
while not os.path.exists(pidfile):
    time.sleep(0.01)
print("daemon started", flush=True)
exec(sys.argv[2])
"""

# Touches every page so the memory is really used, not just reserved.
ALLOCATE = (
    "b = bytearray({mb} << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('allocated')"
)


def python(code: str, *args: str, tmp: Path, timeout_s: float | None = 10, **kw) -> ProcessSpec:
    return ProcessSpec(
        argv=[sys.executable, "-c", code, *args],
        env=dict(os.environ),
        cwd=tmp,
        timeout_s=timeout_s,
        **kw,
    )


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def read_pid(path: Path) -> int:
    return int(path.read_text())


def test_normal_exit_captures_both_streams_and_returncode(tmp_path: Path) -> None:
    code = "import sys; print('out line'); print('err line', file=sys.stderr); sys.exit(3)"
    result = run_process(python(code, tmp=tmp_path))
    assert result.returncode == 3
    assert result.stdout == "out line\n"
    assert result.stderr == "err line\n"
    assert 0 < result.duration_s < 5
    assert result.signal is None
    assert not (result.timed_out or result.interrupted or result.oom)
    assert result.start_error is None
    assert result.stray_killed == 0
    assert result.memory_method is None


def test_child_sees_cwd_env_and_marker(tmp_path: Path) -> None:
    code = "import os; print(os.getcwd()); print(os.environ['GREETING']); print(os.environ[%r])"
    spec = python(code % MARKER_ENV, tmp=tmp_path)
    spec.env["GREETING"] = "hello"
    cwd, greeting, marker = run_process(spec).stdout.splitlines()
    assert (cwd, greeting) == (str(tmp_path), "hello")
    assert len(marker) == 32


def test_each_attempt_gets_a_private_tmpdir_removed_afterwards(tmp_path: Path) -> None:
    # A detached grandchild writes into TMPDIR and is still running when the leader exits,
    # as a browser daemon's profile would be: the folder goes all the same.
    code = (
        "import os, subprocess, sys, tempfile; d = tempfile.mkdtemp(dir=os.environ['TMPDIR']);"
        "open(os.path.join(d, 'profile'), 'w').write('x');"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],"
        " start_new_session=True); print(os.environ['TMPDIR'])"
    )
    first = run_process(python(code, tmp=tmp_path))
    second = run_process(python(code, tmp=tmp_path))
    used = Path(first.stdout.strip())
    assert used.parent == Path(tempfile.gettempdir())
    assert used != Path(second.stdout.strip())
    assert first.stray_killed == 1
    assert not used.exists() and not Path(second.stdout.strip()).exists()


def test_large_output_on_both_streams_does_not_deadlock(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('o' * 10_000_000); sys.stderr.write('e' * 10_000_000)"
    result = run_process(python(code, tmp=tmp_path))
    assert result.returncode == 0
    assert result.stdout == "o" * 10_000_000
    assert result.stderr == "e" * 10_000_000


def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'ok \\xff end')"
    assert run_process(python(code, tmp=tmp_path)).stdout == "ok \ufffd end"


def test_stdin_text_is_delivered_even_when_larger_than_a_pipe(tmp_path: Path) -> None:
    text = "line\n" * 200_000  # 1 MB: far beyond the 64 KB a pipe buffers
    code = "import sys; data = sys.stdin.read(); print(len(data), data[:5])"
    result = run_process(python(code, tmp=tmp_path, stdin_text=text))
    assert result.stdout == f"{len(text)} line\n\n"


def test_stdin_is_devnull_by_default(tmp_path: Path) -> None:
    result = run_process(python("import sys; print(repr(sys.stdin.read()))", tmp=tmp_path))
    assert result.stdout == "''\n"


def test_timeout_kills_and_keeps_partial_output(tmp_path: Path) -> None:
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(30)"
    result = run_process(python(code, tmp=tmp_path, timeout_s=1.0))
    assert result.timed_out
    assert not result.interrupted
    assert 1.0 <= result.duration_s < 2.0
    assert result.signal is not None
    pid = int(result.stdout.strip())
    assert not alive(pid)


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('stubborn', flush=True); time.sleep(30)"
    )
    result = run_process(python(code, tmp=tmp_path, timeout_s=0.5))
    assert result.timed_out
    assert result.signal == 9
    assert result.stdout == "stubborn\n"
    assert result.duration_s < 2.0


def test_background_child_in_the_group_is_killed_after_normal_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    code = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))"
    )
    result = run_process(python(code, tmp=tmp_path))
    assert result.returncode == 0
    assert not alive(read_pid(pidfile))
    assert result.stray_killed == 1


def test_escaped_daemon_is_killed_after_normal_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    # The daemon keeps our stdout pipe open: run_process must not wait for its EOF.
    result = run_process(python(DAEMON_PARENT, str(pidfile), "pass", tmp=tmp_path))
    assert result.returncode == 0
    assert result.stdout == "daemon started\n"
    assert result.stray_killed >= 1
    assert not alive(read_pid(pidfile))
    assert result.duration_s < 3


def test_escaped_daemon_is_killed_after_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    tail = "time.sleep(30)"
    result = run_process(python(DAEMON_PARENT, str(pidfile), tail, tmp=tmp_path, timeout_s=1.0))
    assert result.timed_out
    assert result.stdout == "daemon started\n"
    assert result.stray_killed >= 1
    assert not alive(read_pid(pidfile))
    assert result.duration_s < 3


def test_cancel_kills_the_whole_tree_promptly(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    tail = (
        "import subprocess; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(os.getpid(), p.pid, flush=True); time.sleep(30)"
    )
    spec = python(DAEMON_PARENT, str(pidfile), tail, tmp=tmp_path, timeout_s=None)
    cancel = threading.Event()
    outcome: list[ProcessResult] = []
    runner = threading.Thread(target=lambda: outcome.append(run_process(spec, cancel)))
    runner.start()
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # let the parent start its own child too
    cancelled_at = time.monotonic()
    cancel.set()
    runner.join(timeout=10)
    returned_after = time.monotonic() - cancelled_at
    (result,) = outcome
    assert result.interrupted
    assert not result.timed_out
    # SIGTERM first, as at a deadline: agents that handle it can reap their children
    assert result.signal == 15
    assert returned_after < 0.5
    parent_pid, child_pid = map(int, result.stdout.splitlines()[1].split())
    for pid in (parent_pid, child_pid, read_pid(pidfile)):
        assert not alive(pid)


def test_cancel_already_set_kills_at_once(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    result = run_process(python("import time; time.sleep(30)", tmp=tmp_path), cancel)
    assert result.interrupted
    assert result.duration_s < 1


def test_memory_cap_records_oom(tmp_path: Path) -> None:
    result = run_process(python(ALLOCATE.format(mb=400), tmp=tmp_path, memory_max_mb=100))
    assert result.oom
    assert result.memory_method == memory_cap_method()
    assert result.memory_method is not None
    assert "allocated" not in result.stdout


def test_memory_cap_leaves_a_small_child_alone(tmp_path: Path) -> None:
    result = run_process(python(ALLOCATE.format(mb=50), tmp=tmp_path, memory_max_mb=200))
    assert result.returncode == 0
    assert result.stdout == "allocated\n"
    assert not result.oom


def test_without_cap_the_allocation_succeeds(tmp_path: Path) -> None:
    result = run_process(python(ALLOCATE.format(mb=50), tmp=tmp_path))
    assert (result.returncode, result.stdout, result.oom) == (0, "allocated\n", False)
    assert result.memory_method is None


def test_rlimit_fallback_records_oom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "memory_cap_method", lambda: "rlimit")
    result = run_process(python(ALLOCATE.format(mb=400), tmp=tmp_path, memory_max_mb=100))
    assert result.memory_method == "rlimit"
    assert result.oom
    assert "MemoryError" in result.stderr


def test_rlimit_heuristic_ignores_ordinary_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "memory_cap_method", lambda: "rlimit")
    code = "import sys; print('bad input', file=sys.stderr); sys.exit(1)"
    result = run_process(python(code, tmp=tmp_path, memory_max_mb=100))
    assert result.returncode == 1
    assert not result.oom


def test_attempt_cgroups_are_removed(tmp_path: Path) -> None:
    method, parent = process._memory_cap()
    if parent is None:
        pytest.skip(f"no cgroup memory cap here ({method})")
    # Other runs on the machine may have attempts of their own in the same parent.
    before = {p.name for p in parent.iterdir()}
    run_process(python("print('x')", tmp=tmp_path, memory_max_mb=100))
    run_process(python(ALLOCATE.format(mb=400), tmp=tmp_path, memory_max_mb=100))
    assert not [
        p
        for p in parent.iterdir()
        if p.name.startswith("agent-benchmarks-") and p.name not in before
    ]


def test_under_a_cgroup_a_process_with_no_trace_of_the_attempt_is_still_killed(
    tmp_path: Path,
) -> None:
    """With its cgroup, an attempt's processes are its members: a detached grandchild that
    cleared its environment (no marker) and names nothing of the attempt in its arguments,
    which no scan of /proc could tell apart, is killed all the same."""
    method, parent = process._memory_cap()
    if parent is None:
        pytest.skip(f"no cgroup memory cap here ({method})")
    pidfile = tmp_path / "pid"
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['env', '-i', sys.executable, '-c',"
        " 'import time; time.sleep(60)'], start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
    )
    result = run_process(python(code, tmp=tmp_path, memory_max_mb=200))
    child = int(pidfile.read_text())
    assert result.returncode == 0 and result.stray_killed == 1
    assert not alive(child)


def test_a_capped_agent_waits_for_its_slot_already_under_its_cap(tmp_path: Path) -> None:
    """A capped agent's shell is spawned before its slot and stops itself once under the
    cap; only when the slot is free does it run the agent, whose time starts then."""
    slots = process.Slots(1, threading.Event())
    holder = process.Slot(slots)
    assert holder.take(None)
    result: dict[str, ProcessResult] = {}
    spec = python("import time; print(time.monotonic())", tmp=tmp_path, memory_max_mb=200)
    waiting = threading.Thread(
        target=lambda: result.update(r=run_process(spec, None, process.Slot(slots)))
    )
    waiting.start()
    time.sleep(0.5)
    stopped = [
        p
        for p in psutil.Process().children()
        if p.status() == psutil.STATUS_STOPPED and p.name() in ("sh", "dash")
    ]
    assert len(stopped) == 1  # the gated shell, spawned and stopped while the slot is taken
    released_at = time.monotonic()
    holder.release()
    waiting.join(10)
    r = result["r"]
    assert r.returncode == 0 and r.queued_s >= 0.4
    assert float(r.stdout) > released_at  # the agent itself ran only once the slot was free
    assert r.memory_method == memory_cap_method()


def test_missing_binary_is_a_start_error(tmp_path: Path) -> None:
    spec = ProcessSpec(argv=["/x/lightpanda"], env={}, cwd=tmp_path, timeout_s=5)
    result = run_process(spec)
    assert result.returncode is None
    assert result.start_error == "No such file or directory: '/x/lightpanda'"
    assert (result.stdout, result.stderr) == ("", "")


def test_not_executable_is_a_start_error(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    spec = ProcessSpec(argv=[str(script)], env={}, cwd=tmp_path, timeout_s=5, memory_max_mb=100)
    result = run_process(spec)
    assert result.returncode is None
    assert result.start_error == f"Permission denied: {str(script)!r}"


def test_kill_strays_kills_only_the_marked_processes(tmp_path: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    marked = subprocess.Popen(sleeper, env={**os.environ, MARKER_ENV: "test-marker"})
    other = subprocess.Popen(sleeper, env={**os.environ, MARKER_ENV: "another-attempt"})
    try:
        assert kill_strays("test-marker") == 1
        assert not alive(marked.pid)
        assert alive(other.pid)
    finally:
        other.kill()
        other.wait()
        marked.kill()
        marked.wait()


def test_the_sweep_looks_only_at_processes_started_since_the_leader(tmp_path: Path) -> None:
    """A process older than the attempt's agent cannot descend from it, so the sweep never
    reads it: here one carrying the attempt's marker (which no real process could) is left
    alone, while the agent's own detached child with the same marker is killed."""
    marker = "sweep-bound-test"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    older = subprocess.Popen(sleeper, env={**os.environ, MARKER_ENV: marker})
    time.sleep(0.05)  # start times are in clock ticks (10 ms): the agent starts later
    pidfile = tmp_path / "daemon.pid"
    try:
        result = run_process(
            python(DAEMON_PARENT, str(pidfile), "pass", tmp=tmp_path, marker=marker)
        )
        assert result.returncode == 0 and result.stray_killed >= 1
        assert not alive(read_pid(pidfile))
        assert alive(older.pid)
    finally:
        older.kill()
        older.wait()


def test_the_sweep_leaves_other_attempts_agents_unread_and_forgets_its_own_once_reaped(
    tmp_path: Path,
) -> None:
    """The agents of attempts still running are skipped unread (they carry their own
    attempts' markers), but not by kill_strays; a pid leaves that list once its attempt
    has reaped it (here after an exit and after a deadline), so a later process given that
    pid is read again."""
    marker = "others-test"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    running = subprocess.Popen(sleeper, env={**os.environ, MARKER_ENV: marker})
    try:
        assert process._marked_pids(marker, None) == [running.pid]
        assert process._marked_pids(marker, None, others={str(running.pid)}) == []
        # kill_strays (a node's clean-up after a lost attempt) skips nothing.
        process._LEADERS.add(str(running.pid))
        assert kill_strays(marker) == 1 and not alive(running.pid)
    finally:
        process._LEADERS.discard(str(running.pid))
        running.kill()
        running.wait()
    assert not process._LEADERS
    for code in ("print('done')", "import time; time.sleep(30)"):
        result = run_process(python(code, tmp=tmp_path, timeout_s=0.5))
        assert result.returncode is not None
        assert not process._LEADERS


def test_a_start_time_is_never_taken_from_another_process_with_the_same_pid() -> None:
    """The cache of start times is keyed by the /proc entry's name and inode, which the
    kernel renews when it gives a pid to a new process: an entry left by an earlier process
    of that pid (here a made-up one) is read again, not trusted; /proc's other entries are
    known as no process."""
    starts = process._StartTimes()
    me = str(os.getpid())
    inode = os.stat(f"/proc/{me}").st_ino
    truth = process._start_ticks(int(me))
    assert isinstance(truth, int) and truth > 0
    starts._known[me] = (inode + 1, 0)
    assert starts.ticks(me, inode) == truth
    assert starts._known[me] == (inode, truth)
    assert starts.ticks(me, inode) == truth  # now from the cache
    assert starts.ticks("meminfo", os.stat("/proc/meminfo").st_ino) is process._NOT_A_PROCESS
    assert process._start_ticks(2**22 + 1) is None  # above any pid_max: no such process


def test_concurrent_attempts_keep_their_own_output_and_caps(tmp_path: Path) -> None:
    # The engine runs attempts in worker threads; each gets its own marker and cgroup.
    codes = [f"print({n})" if n % 2 else ALLOCATE.format(mb=300) for n in range(6)]
    results: dict[int, ProcessResult] = {}

    def attempt(n: int) -> None:
        results[n] = run_process(python(codes[n], tmp=tmp_path, memory_max_mb=100))

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for n, result in sorted(results.items()):
        assert result.oom == (n % 2 == 0)
        if n % 2:
            assert (result.returncode, result.stdout) == (0, f"{n}\n")
    assert len(results) == 6


def test_a_process_with_a_cleared_environment_is_found_by_its_temp_folder(
    tmp_path: Path,
) -> None:
    """Chromium starts its zygote, renderers and network service with an empty environment
    (no marker) in a session of their own, but with the profile in TMPDIR in their argv:
    such a process is the attempt's too, and must not outlive it to write into the profile
    after the folder is gone."""
    pidfile = tmp_path / "pid"
    # The leader starts a detached child with `env -i` whose argv names $TMPDIR, then exits.
    code = (
        "import os, subprocess, sys, time\n"
        "tmp = os.environ['TMPDIR']\n"
        "child = subprocess.Popen(['env', '-i', sys.executable, '-c',"
        " 'import time; time.sleep(60)', '--user-data-dir=' + tmp + '/profile'],"
        " start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
    )
    folder = Path(tempfile.mkdtemp(prefix="agent-benchmarks-test-"))
    try:
        result = run_process(python(code, tmp=tmp_path, tmpdir=folder))
        child = int(pidfile.read_text())
        assert result.returncode == 0 and result.stray_killed >= 1
        assert not alive(child)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- slots: how a pool overlaps one attempt's clean-up with the next one's agent ------------


def test_a_slot_waits_for_a_free_one_and_a_stopped_pool_begins_no_attempt() -> None:
    stop = threading.Event()
    slots = process.Slots(1, stop)
    first, second = process.Slot(slots), process.Slot(slots)
    assert first.take(None)
    assert first.take(None)  # held: taking again is a no-op, not a second slot
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(second.take(None)))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and not got  # the only slot is held
    first.release()
    first.release()  # released once, whatever the callers do
    waiter.join(5)
    assert got == [True]
    second.release()
    # Stopped: no attempt begins, but a begun one's second launch (a retry) still may.
    stop.set()
    with pytest.raises(process.AttemptNotBegun):
        process.Slot(slots).take(None)
    assert second.take(None)
    second.release()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(process.AttemptNotBegun):
        process.Slot(process.Slots(1, threading.Event())).take(cancel)
    assert not second.take(cancel)  # a begun attempt's second launch, cancelled


def test_a_launch_refused_its_slot_starts_nothing(tmp_path: Path) -> None:
    stop = threading.Event()
    slots = process.Slots(1, stop)
    holder = process.Slot(slots)
    assert holder.take(None)
    marker_file = tmp_path / "ran"
    spec = python(f"open({str(marker_file)!r}, 'w').write('x')", tmp=tmp_path, memory_max_mb=512)
    # A first launch refused (the pool stopped while it waited): the attempt never began.
    threading.Timer(0.2, stop.set).start()
    with pytest.raises(process.AttemptNotBegun):
        run_process(spec, None, process.Slot(slots))
    assert not marker_file.exists()
    holder.release()
    # A begun attempt's second launch, cancelled while it waited: an interrupt, nothing run.
    slots = process.Slots(1, threading.Event())
    begun, holder = process.Slot(slots), process.Slot(slots)
    assert begun.take(None)
    begun.release()
    assert holder.take(None)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    result = run_process(spec, cancel, begun)
    assert result.interrupted and result.returncode is None and result.ran_s == 0.0
    assert result.queued_s >= 0.15
    assert not marker_file.exists()
    holder.release()


def test_a_slot_is_released_once_the_agent_is_gone_not_after_its_clean_up(
    tmp_path: Path,
) -> None:
    slots = process.Slots(1, threading.Event())
    slot = process.Slot(slots)
    result = run_process(python("print('done')", tmp=tmp_path), None, slot)
    assert result.returncode == 0 and result.stdout == "done\n" and result.queued_s < 1
    # The clean-up after run_process (reading the output, the row) holds no slot.
    other = process.Slot(slots)
    assert other.take(threading.Event())
    other.release()


def test_attempts_begin_in_the_order_they_were_created_and_one_that_never_launches_yields() -> None:
    slots = process.Slots(1, threading.Event())
    first, second, third = (process.Slot(slots) for _ in range(3))
    order: list[str] = []

    def take(name: str, slot: process.Slot) -> None:
        assert slot.take(None)
        order.append(name)
        slot.release()

    # The third is ready first, but waits for the first (not begun yet) and the second.
    late = threading.Thread(target=take, args=("third", third))
    late.start()
    late.join(0.3)
    assert late.is_alive() and not order
    second.release()  # the second ended before its agent: it gives up its turn
    take("first", first)
    late.join(5)
    assert order == ["first", "third"]


def test_a_freed_slot_wakes_the_attempt_it_lets_go_without_waiting_for_a_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Waiters are woken one by one, each by the change that lets it go (a release, or the
    attempt before it beginning): with the cancel poll made longer than the test, eight
    attempts through two slots still begin in order, never more than two at once."""
    monkeypatch.setattr(process, "_CANCEL_POLL_S", 60.0)
    slots = process.Slots(2, threading.Event())
    attempts = [process.Slot(slots) for _ in range(8)]
    lock = threading.Lock()
    begun: list[int] = []
    holding = [0, 0]  # now, most

    def run(i: int) -> None:
        assert attempts[i].take(None)
        with lock:
            begun.append(i)
            holding[0] += 1
            holding[1] = max(holding)
        time.sleep(0.05)
        with lock:
            holding[0] -= 1
        if i == 3:  # a begun attempt's second launch queues with the first launches
            attempts[i].release()
            assert attempts[i].take(None)
        attempts[i].release()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in reversed(range(8))]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, started + 10 - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads)  # no hand-off waited for a poll
    assert begun == list(range(8)) and holding == [0, 2]


def test_an_agent_that_says_it_will_wait_without_end_is_stopped_there(tmp_path: Path) -> None:
    # Printed in two writes, the line split between them: the match is still found.
    code = (
        "import sys, time\n"
        "sys.stdout.write('working\\nReconnecting... wai'); sys.stdout.flush(); time.sleep(0.2)\n"
        "print('ting for network (refused)', flush=True)\n"
        "time.sleep(60)\n"
    )
    spec = python(code, tmp=tmp_path, timeout_s=30, give_up_on="Reconnecting[^\n]*")
    started = time.monotonic()
    result = run_process(spec)
    assert time.monotonic() - started < 10
    assert result.gave_up == "Reconnecting... waiting for network (refused)"
    assert not result.timed_out and not result.interrupted
    assert result.stdout.startswith("working\n")
    # Without the pattern nothing is watched: the same agent runs to its deadline.
    plain = run_process(python(code, tmp=tmp_path, timeout_s=1))
    assert plain.timed_out and plain.gave_up is None

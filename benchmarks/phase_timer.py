"""Run one of our console scripts with the CPU time of each phase of its attempts counted,
for benchmarks/run_process.py ``--phases`` (a measurement, never a mode of the harness).

    PHASES_OUT=FILE python benchmarks/phase_timer.py /path/to/.venv/bin/webbench-run ARGS...

Each phase's function is wrapped to add the CPU time of the thread running it
(``time.thread_time``, so the time a thread waits, for a slot or for its agent, is not
counted) and its calls to a total, from the moment the engine starts (the start-up's own
folders and its ``lightpanda version`` are no attempt's). At exit FILE gets, as JSON: those
totals, the process's CPU time (all threads) when the engine started (the start-up) and at
exit.

Every phase is the CPU the runner spends in it; what it calls that is listed too (the row's
fsync inside its write) is taken out of the caller's figure, so the phases do not overlap.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import runpy
import subprocess
import sys
import threading
import time
from pathlib import Path

from agent_benchmarks.backends import lightpanda
from agent_benchmarks.isolation import process, scratch
from agent_benchmarks.records import storage
from agent_benchmarks.runner import engine, executor, progress

# (the phase, what it is): "guarantee" and "record" are work upstream's runner does not do
# (it keeps no trace file, kills nothing after an attempt, redacts nothing and does not
# fsync); "common" is work both runners do; "cap" is our memory cap's, which upstream's has
# only where systemd-run works (not on this machine), in the form of a systemd-run per attempt.
PHASES = {
    "the sweep: reading /proc": "guarantee",
    "the sweep: the cgroup's members": "guarantee",
    "the sweep: the rest (the group's kill)": "guarantee",
    "the fsync of each row": "guarantee",
    "the scrub of the attempt folder": "guarantee",
    "the private temp folder (take, empty)": "guarantee",
    "the attempt folder (mkdir)": "record",
    "reading the trace file": "record",
    "the typed, redacted row": "record",
    "spawning the agent (Popen)": "common",
    "watching the agent (pipes, exit)": "common",
    "writing the row (without its fsync)": "common",
    "the slots": "common",
    "the attempt's command (session, backend)": "common",
    "the progress line": "common",
    "the rest of running the process (environment, pidfd, pipes)": "common",
    "the agent's outcome without its trace (stdout, usage)": "common",
    "the answer (session)": "common",
    "the memory cap's cgroup (made, its OOM count read, removed)": "cap",
}

_totals: dict[str, list[float]] = {name: [0.0, 0] for name in PHASES}
_lock = threading.Lock()
_inner = threading.local()  # CPU time counted by nested phases of the running one
_startup_cpu_s: list[float] = []  # set as the engine starts: only then are phases counted


def _timed(name: str, function):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        outer = getattr(_inner, "seconds", 0.0)
        _inner.seconds = 0.0
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent = time.thread_time() - started
            nested = _inner.seconds
            _inner.seconds = outer + spent
            if _startup_cpu_s:  # the start-up's own mkdir and Popen are not an attempt's
                with _lock:
                    total = _totals[name]
                    total[0] += spent - nested
                    total[1] += 1

    return timed


def _patch() -> None:
    process._kill_leftovers = _timed(
        "the sweep: the rest (the group's kill)", process._kill_leftovers
    )
    process._marked_pids = _timed("the sweep: reading /proc", process._marked_pids)
    cgroup = process._AttemptCgroup
    cgroup.kill_members = _timed("the sweep: the cgroup's members", cgroup.kill_members)  # type: ignore[method-assign]
    name = "the memory cap's cgroup (made, its OOM count read, removed)"
    cgroup.create = classmethod(_timed(name, cgroup.create.__func__))  # type: ignore[method-assign]
    cgroup.oom_kills = _timed(name, cgroup.oom_kills)  # type: ignore[method-assign]
    cgroup.remove = _timed(name, cgroup.remove)  # type: ignore[method-assign]
    # storage calls os.fsync through the os module: the one place to wrap it.
    os.fsync = _timed("the fsync of each row", os.fsync)
    engine.scrub_secrets = _timed("the scrub of the attempt folder", engine.scrub_secrets)
    folders = scratch.AttemptTempFolders
    name = "the private temp folder (take, empty)"
    folders.take = _timed(name, folders.take)  # type: ignore[method-assign]
    folders.give_back = _timed(name, folders.give_back)  # type: ignore[method-assign]
    Path.mkdir = _timed("the attempt folder (mkdir)", Path.mkdir)  # type: ignore[method-assign]
    lightpanda.read_trace = _timed("reading the trace file", lightpanda.read_trace)
    runner = engine.AttemptRunner
    runner._row = _timed("the typed, redacted row", runner._row)  # type: ignore[method-assign]
    subprocess.Popen.__init__ = _timed(  # type: ignore[method-assign]
        "spawning the agent (Popen)", subprocess.Popen.__init__
    )
    process._supervise = _timed("watching the agent (pipes, exit)", process._supervise)
    writer = storage.PredictionsWriter
    writer.append = _timed("writing the row (without its fsync)", writer.append)  # type: ignore[method-assign]
    slots = process.Slots
    slots.take = _timed("the slots", slots.take)  # type: ignore[method-assign]
    slots.release = _timed("the slots", slots.release)  # type: ignore[method-assign]
    name = "the attempt's command (session, backend)"
    lightpanda.LightpandaBackend.command = _timed(name, lightpanda.LightpandaBackend.command)  # type: ignore[method-assign]
    session = engine.TaskSession
    session.prepare = _timed(name, session.prepare)  # type: ignore[method-assign]
    run_progress = progress.RunProgress
    run_progress.advance = _timed("the progress line", run_progress.advance)  # type: ignore[method-assign]

    executor.run_process = _timed(
        "the rest of running the process (environment, pidfd, pipes)", executor.run_process
    )
    lightpanda.LightpandaBackend.outcome = _timed(  # type: ignore[method-assign]
        "the agent's outcome without its trace (stdout, usage)",
        lightpanda.LightpandaBackend.outcome,
    )
    session.finish = _timed("the answer (session)", session.finish)  # type: ignore[method-assign]

    execute = engine.execute_lanes

    def execute_lanes(*args, **kwargs):
        _startup_cpu_s.append(time.process_time())
        return execute(*args, **kwargs)

    engine.execute_lanes = execute_lanes


def _write(path: str) -> None:
    report = {
        "phases": {name: {"cpu_s": s, "calls": n} for name, (s, n) in _totals.items()},
        "startup_cpu_s": _startup_cpu_s[0] if _startup_cpu_s else None,
        "process_cpu_s": time.process_time(),
    }
    Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    out = os.environ.get("PHASES_OUT")
    if not out or len(sys.argv) < 2:
        sys.exit("usage: PHASES_OUT=FILE phase_timer.py SCRIPT [ARGS...]")
    _patch()
    atexit.register(_write, out)
    script = sys.argv[1]
    sys.argv = [script, *sys.argv[2:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()

"""Executors: where attempts run. The engine hands them work through one small interface.

An executor takes work, each item an attempt key and the function that runs that attempt
to its row (one run's :class:`~.engine.AttemptRunner`; a sweep hands several runs' work to
one executor), and yields each item with its row as attempts finish, in any order.
:class:`LocalPool` runs them on this machine, N agents at a time, two attempt threads per
worker so that one attempt's clean-up overlaps the next one's agent;
:class:`~.ray_executor.RayExecutor` ships them to a Ray cluster. Suites and backends do not
know which.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from agent_benchmarks.isolation.process import (
    AttemptNotBegun,
    ProcessResult,
    ProcessSpec,
    Slot,
    Slots,
    run_process,
)
from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.runner.plan import AttemptKey

# Runs one attempt's agent process to its end (the event: kill it now).
ProcessLauncher = Callable[[ProcessSpec, threading.Event], ProcessResult]
# Runs one attempt to its final row. The event is set when the attempt must be killed now;
# the launcher is where its agent process runs.
AttemptFunction = Callable[[AttemptKey, threading.Event, ProcessLauncher], PredictionRow]
# One attempt to run, and the function that runs it.
Work = tuple[AttemptFunction, AttemptKey]


class Executor(Protocol):
    """Used as a context manager around a run (a cluster executor connects on entry and
    lets go on exit)."""

    workers: int
    busy_seconds: float  # summed wall time spent inside attempts (utilisation figures)

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def describe(self) -> dict[str, Any]:
        """What the manifest records of where this session's attempts ran."""
        ...

    def check_programs(
        self, expected: dict[str, str], probe: Callable[[], dict[str, str]] | None
    ) -> None:
        """Refuse to start (an InputError naming the node and the program) when a machine
        attempts would run on has other versions of the pinned programs than ``expected``
        (what ``probe`` finds on this machine; None: the backend pins none), and leave out
        a machine that cannot be reached."""
        ...

    def left_out(self) -> list[str]:
        """The machines left out of the run (they could not be reached), each with why."""
        ...

    @property
    def service_host(self) -> str:
        """The address run-scoped services (a suite's site, a scripted model) listen on,
        so that every machine running attempts reaches them."""
        ...

    def run(self, work: Iterable[Work]) -> Iterator[tuple[Work, PredictionRow]]:
        """Start attempts and yield each with its row as the attempt ends."""
        ...

    def stop_starting(self) -> None:
        """Start no more attempts; the running ones go on to their end."""
        ...

    def kill_running(self) -> None:
        """Kill the running attempts now (their rows still come back, marked interrupted)."""
        ...


class LocalPool:
    """``workers`` attempts at once on this machine.

    Twice as many attempt threads as workers share ``workers`` slots (:class:`Slots`): an
    attempt holds one from its agent's spawn until its agent's processes are gone, so its
    set-up and its clean-up (reading what the agent left, its row) overlap the other
    attempts' agents. An attempt the pool stopped before its agent's spawn leaves no row
    and no folder (:class:`AttemptNotBegun`)."""

    threads_per_worker = 2

    def __init__(self, workers: int):
        self.workers = workers
        self._stop = threading.Event()
        self._kill = threading.Event()
        self._slots = Slots(workers, self._stop)
        self.busy_seconds = 0.0  # summed wall time workers spent inside attempts

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "workers": self.workers, "host": socket.gethostname()}

    def check_programs(
        self, expected: dict[str, str], probe: Callable[[], dict[str, str]] | None
    ) -> None:
        pass  # attempts run here, on the programs the backend just checked

    def left_out(self) -> list[str]:
        return []

    @property
    def service_host(self) -> str:
        return "127.0.0.1"

    def _launcher(self, slot: Slot | None, waited: list[float]) -> ProcessLauncher:
        """How an attempt runs its agent process: here, in its slot. The time a second
        launch waited for a slot goes to ``waited``."""

        def launch(spec: ProcessSpec, cancel: threading.Event) -> ProcessResult:
            result = run_process(spec, cancel, slot)
            waited.append(result.queued_s)
            return result

        return launch

    def run(self, work: Iterable[Work]) -> Iterator[tuple[Work, PredictionRow]]:
        todo: queue.SimpleQueue[Work] = queue.SimpleQueue()
        for item in work:
            todo.put(item)
        done: queue.SimpleQueue[tuple[Work, PredictionRow] | BaseException | None] = (
            queue.SimpleQueue()
        )
        lock = threading.Lock()
        taking = threading.Lock()

        def worker() -> None:
            try:
                while not self._stop.is_set():
                    with taking:  # an attempt's place in the order agents start
                        try:
                            item = todo.get_nowait()
                        except queue.Empty:
                            return
                        slot = Slot(self._slots)  # taken at the agent's spawn
                    run_attempt, key = item
                    started = time.monotonic()
                    waited: list[float] = []
                    try:
                        row = run_attempt(key, self._kill, self._launcher(slot, waited))
                    except AttemptNotBegun:
                        return  # the pool stopped before this agent could start
                    finally:
                        slot.release()  # an attempt that ended before its agent ran
                        with lock:
                            self.busy_seconds += time.monotonic() - started - sum(waited)
                    done.put((item, row))
            except BaseException as exc:  # a harness bug: surface it in the main thread
                done.put(exc)
            finally:
                done.put(None)

        threads = [
            threading.Thread(target=worker, name=f"attempt-worker-{i}", daemon=True)
            for i in range(self.workers * self.threads_per_worker)
        ]
        for thread in threads:
            thread.start()
        running = len(threads)
        while running:
            # A short timeout keeps the main thread responsive to Ctrl-C.
            try:
                finished = done.get(timeout=0.2)
            except queue.Empty:
                continue
            if finished is None:
                running -= 1
            elif isinstance(finished, BaseException):
                self._stop.set()
                self._kill.set()
                raise finished
            else:
                yield finished

    def stop_starting(self) -> None:
        self._stop.set()

    def kill_running(self) -> None:
        self._stop.set()
        self._kill.set()

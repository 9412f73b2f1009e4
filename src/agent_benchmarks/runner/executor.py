"""Executors: where attempts run. The engine hands them work through one small interface.

An executor takes attempt keys and a function that runs one attempt to its row, and yields
rows as attempts finish, in any order. :class:`LocalPool` runs them on this machine, N at
a time, each in a worker thread that waits on the attempt's agent process. A distributed
executor would implement the same three methods and ship the keys elsewhere; suites and
backends would not change.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from agent_benchmarks.records import PredictionRow
from agent_benchmarks.runner.plan import AttemptKey

# Runs one attempt to its final row. The event is set when the attempt must be killed now.
AttemptFunction = Callable[[AttemptKey, threading.Event], PredictionRow]


class Executor(Protocol):
    workers: int
    busy_seconds: float  # summed wall time spent inside attempts (utilisation figures)

    def run(
        self, keys: Iterable[AttemptKey], run_attempt: AttemptFunction
    ) -> Iterator[PredictionRow]:
        """Start attempts and yield each row as its attempt ends."""
        ...

    def stop_starting(self) -> None:
        """Start no more attempts; the running ones go on to their end."""
        ...

    def kill_running(self) -> None:
        """Kill the running attempts now (their rows still come back, marked interrupted)."""
        ...


class LocalPool:
    """``workers`` attempts at once on this machine."""

    def __init__(self, workers: int):
        self.workers = workers
        self._stop = threading.Event()
        self._kill = threading.Event()
        self.busy_seconds = 0.0  # summed wall time workers spent inside attempts

    def run(
        self, keys: Iterable[AttemptKey], run_attempt: AttemptFunction
    ) -> Iterator[PredictionRow]:
        todo: queue.SimpleQueue[AttemptKey] = queue.SimpleQueue()
        for key in keys:
            todo.put(key)
        done: queue.SimpleQueue[PredictionRow | BaseException | None] = queue.SimpleQueue()
        lock = threading.Lock()

        def worker() -> None:
            try:
                while not self._stop.is_set():
                    try:
                        key = todo.get_nowait()
                    except queue.Empty:
                        return
                    started = time.monotonic()
                    try:
                        row = run_attempt(key, self._kill)
                    finally:
                        with lock:
                            self.busy_seconds += time.monotonic() - started
                    done.put(row)
            except BaseException as exc:  # a harness bug: surface it in the main thread
                done.put(exc)
            finally:
                done.put(None)

        threads = [
            threading.Thread(target=worker, name=f"attempt-worker-{i}", daemon=True)
            for i in range(self.workers)
        ]
        for thread in threads:
            thread.start()
        running = len(threads)
        while running:
            # A short timeout keeps the main thread responsive to Ctrl-C.
            try:
                item = done.get(timeout=0.2)
            except queue.Empty:
                continue
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                self._stop.set()
                self._kill.set()
                raise item
            else:
                yield item

    def stop_starting(self) -> None:
        self._stop.set()

    def kill_running(self) -> None:
        self._stop.set()
        self._kill.set()

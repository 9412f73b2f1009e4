"""The run engine: attempts out to an executor, rows back into ``predictions.jsonl``.

One attempt is: the suite prepares the task (:class:`~.session.TaskSession`), the backend
names the process (:class:`~agent_benchmarks.backends.base.Backend`), the process runs in
its own process group under the timeout and memory cap
(:mod:`~agent_benchmarks.isolation.process`), the backend reads what it left, and the
engine writes exactly one row. Rows are written by the main thread only, whole and
fsynced, as attempts finish; a row is the attempt's completion mark, so a crash at any
point leaves a run that ``--resume`` completes.

Ctrl-C once: start no more attempts, let the running ones finish. Twice (or SIGTERM): kill
the running ones; their rows say ``interrupted`` and resume retries them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import threading
import time
import traceback
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console

from agent_benchmarks.backends.base import AgentOutcome, Backend, PreparedTask, with_reply_sizes
from agent_benchmarks.common.redact import redact_text
from agent_benchmarks.episode.meter import MeteredAttempt, ModelMeter
from agent_benchmarks.episode.progress import progress_signal
from agent_benchmarks.isolation.process import (
    AttemptNotBegun,
    ProcessResult,
    attempt_marker,
    reap,
    run_process,
)
from agent_benchmarks.isolation.scratch import (
    AttemptTempFolders,
    run_key,
    run_tmpdir_prefix,
    sweep_attempt_tmpdirs,
)
from agent_benchmarks.records.pricing import PriceTable
from agent_benchmarks.records.schema import (
    Fetched,
    PredictionRow,
    ResourceUse,
    Status,
    Task,
    ToolCall,
)
from agent_benchmarks.records.storage import PredictionsWriter
from agent_benchmarks.runner.executor import Executor, ProcessLauncher
from agent_benchmarks.runner.plan import INJECTED_FAULT, AttemptKey
from agent_benchmarks.runner.progress import RunProgress
from agent_benchmarks.runner.session import TaskSession
from agent_benchmarks.web.service import (
    AttemptWeb,
    ProxyFailed,
    WebProxy,
    web_details,
    web_fetched,
)

STDERR_TAIL_CHARS = 4000
# What a row says of the browser's fetching when no proxy or site log saw it.
NOT_SEEN = Fetched(
    not_measured="the live web: no proxy or site log sees the browser's requests "
    "(--web record sees them)"
)
SCRUB_MAX_BYTES = 64 * 1024 * 1024


@dataclass
class AttemptRunner:
    """Runs one attempt to its row. Thread-safe: one instance serves every worker."""

    run_dir: Path
    tasks: dict[str, Task]
    session: TaskSession
    backend: Backend
    timeout_s: float | None
    memory_max_mb: int | None
    prices: PriceTable
    # The model id rows are priced as when the backend did not price them (a backend that
    # knows its run is scripted, as Claude Code's with a stand-in id, prices it itself).
    price_model: str | None
    # The suite's retry_empty_once, where the runner applies it: an attempt that answered
    # nothing, without timing out or a safety refusal, runs once more (--no-empty-retry).
    retry_empty: bool = False
    # --web record|replay: the run's proxy over its web archive (None: the live web).
    web: WebProxy | None = None
    # The model meter every attempt's model traffic goes through, when the run has a budget
    # or an episode fault (None: the agent calls its model directly).
    meter: ModelMeter | None = None
    # --resource-sample-ms: how often each attempt's processes are sampled (None: never).
    sample_interval_s: float | None = None
    # Wall time the agent processes themselves ran, summed (for the overhead benchmark).
    agent_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    temp_folders: AttemptTempFolders = field(init=False)

    def __post_init__(self) -> None:
        self.temp_folders = AttemptTempFolders(self.run_dir)
        # Each attempt's marker starts with it: a later session of the run finds what a
        # harness killed outright left (clean_up_after_earlier_sessions).
        self.key = run_key(self.run_dir)

    def workdir(self, key: AttemptKey) -> Path:
        safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", key.task_id)[:80].lstrip(".") or "_"
        if safe_id != key.task_id:
            # Distinct ids that clean to the same name must not share a folder.
            safe_id += "-" + hashlib.sha256(key.task_id.encode()).hexdigest()[:10]
        # One folder per attempt, flat under attempts/: a folder per task above it cost a
        # second directory inode per attempt, the costliest file work of a short attempt on
        # a disk where many files were deleted lately (ext4 allocates past them for minutes).
        # The name ends in ".ATTEMPT.TRY", so it still names one (task, attempt, try).
        return self.run_dir / "attempts" / f"{safe_id}.{key.attempt}.{key.try_number}"

    def __call__(
        self, key: AttemptKey, cancel: threading.Event, launch: ProcessLauncher = run_process
    ) -> PredictionRow:
        """The attempt's row; ``launch`` runs its agent process (here, or on a cluster node:
        the executor's choice)."""
        task = self.tasks[key.task_id]
        first = self._run_once(task, key, self.workdir(key), cancel, launch)
        if not (self.retry_empty and _retryable_empty(first) and not cancel.is_set()):
            return self._row(task, key, first)
        workdir = self.workdir(key)
        retry_dir = workdir.with_name(workdir.name + "-retry")
        second = self._run_once(task, key, retry_dir, cancel, launch)
        kept, dropped = (second, first) if _answered(second) else (first, second)
        retry = {
            "kept": "retry" if kept is second else "first",
            "dropped": {
                "status": dropped.status,
                "duration_s": round(dropped.seconds, 3),
                "error": redact_text(dropped.outcome.error) if dropped.outcome.error else None,
                "usage": dropped.outcome.usage.model_dump(exclude_none=True),
                "n_tool_calls": len(dropped.outcome.trace),
                # Its machine cost too was spent: the row's resources are the kept run's.
                "resources": _dumped(dropped.resources()),
            },
        }
        return self._row(task, key, kept, extra_seconds=dropped.seconds, retry=retry)

    def _run_once(
        self,
        task: Task,
        key: AttemptKey,
        workdir: Path,
        cancel: threading.Event,
        launch: ProcessLauncher,
    ) -> _Once:
        started = time.monotonic()
        result: ProcessResult | None = None
        fetched: Fetched | None = None
        tmpdir = self.temp_folders.take()
        holds = _AttemptHolds()
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            prepared = self._prepared_task(task, key, workdir, tmpdir, holds)
            result = self._run_agent(prepared, workdir, tmpdir, cancel, launch)
            if result.lost is not None:
                # Nothing of the agent's came back: no outcome to read, no answer to check.
                outcome = AgentOutcome(
                    status="error", output="", error_class="node_lost", error=result.lost
                )
                prediction, answer_details = None, {}
            else:
                outcome, fetched = self._outcome(prepared, result, holds)
                prediction, answer_details = self.session.finish(prepared, outcome)
            scrub_secrets(workdir)
        except AttemptNotBegun:
            # The pool stopped before the agent's spawn: no row, and nothing of the attempt.
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        except ProxyFailed as exc:  # the run's web is gone: infrastructure, retried on resume
            outcome = AgentOutcome(
                status="error", output="", error_class="web_proxy", error=str(exc)
            )
            prediction, answer_details, prepared = None, {}, None
        except Exception as exc:  # a harness fault on one task must not end the run
            outcome = AgentOutcome(
                status="error",
                output="",
                error_class="harness",
                error=f"{type(exc).__name__}: {exc}",
                details={"traceback": redact_text(traceback.format_exc(limit=8))},
            )
            prediction, answer_details, prepared = None, {}, None
        finally:
            self._give_back(holds)
            self.temp_folders.give_back(tmpdir)
        status = outcome.status
        if status == "ok" and not (prediction or "").strip():
            status = "empty"  # e.g. an empty <ANSWER></ANSWER>
        return _Once(
            outcome=outcome,
            prediction=prediction,
            answer_details=answer_details,
            prepared=prepared,
            result=result,
            status=status,
            fetched=fetched,
            # Not the time it waited for a free slot: that was no part of this attempt.
            seconds=time.monotonic() - started - (result.queued_s if result is not None else 0.0),
        )

    def _prepared_task(
        self, task: Task, key: AttemptKey, workdir: Path, tmpdir: Path, holds: _AttemptHolds
    ) -> PreparedTask:
        """The task as the suite's session prepares it, its browser sent through the run's
        web proxy and its model through the run's meter where the run has them."""
        prepared = replace(self.session.prepare(task, key, workdir), tmpdir=tmpdir)
        if self.web is not None:
            holds.web = self.web.attempt()
            prepared = replace(prepared, web=holds.web)
        if self.meter is not None:
            endpoint = self.backend.model_endpoint(prepared)  # type: ignore[attr-defined]
            fault = prepared.fault
            hook = fault.before_model_request if fault is not None else None
            holds.metered = self.meter.attempt(endpoint, workdir, hook)
            prepared = replace(prepared, base_url=holds.metered.url)
        return prepared

    def _run_agent(
        self,
        prepared: PreparedTask,
        workdir: Path,
        tmpdir: Path,
        cancel: threading.Event,
        launch: ProcessLauncher,
    ) -> ProcessResult:
        """The agent's process, run to its end under the run's limits."""
        spec = replace(
            self.backend.command(prepared),
            timeout_s=self.timeout_s,
            memory_max_mb=self.memory_max_mb,
            tmpdir=tmpdir,
            workdir=workdir,
            sample_interval_s=self.sample_interval_s,
            marker=attempt_marker(self.key),
        )
        if prepared.fault is not None:
            # The attempt's marker, known before the spawn: the fault finds the engine by it.
            assert spec.marker is not None
            prepared.fault.bind(spec.marker, tmpdir, workdir)
        result = launch(spec, cancel)
        with self._lock:
            self.agent_seconds += result.ran_s
        return result

    def _outcome(
        self, prepared: PreparedTask, result: ProcessResult, holds: _AttemptHolds
    ) -> tuple[AgentOutcome, Fetched]:
        """What the agent did as the backend reads it, with what the meter, the fault and
        the web proxy saw of it; and what its browser fetched."""
        outcome = self.backend.outcome(prepared, result)
        if self.meter is not None and holds.metered is not None:
            _metered(outcome, self.meter.finish(holds.metered))
            holds.metered = None
        if prepared.fault is not None:
            _faulted(outcome, prepared.fault.record())
        if self.web is not None and holds.web is not None:
            outcome.web_requests, holds.web = self.web.requests_of(holds.web), None
            outcome.details["web"] = web_details(self.web.mode, outcome.web_requests)
            return outcome, web_fetched(outcome.web_requests)
        return outcome, self.session.fetched(prepared) or NOT_SEEN

    def _give_back(self, holds: _AttemptHolds) -> None:
        """What the attempt still holds of the run's services: it ended before its outcome
        read them."""
        if self.web is not None and holds.web is not None:
            self.web.release(holds.web)
        if self.meter is not None and holds.metered is not None:
            self.meter.finish(holds.metered)

    def _row(
        self,
        task: Task,
        key: AttemptKey,
        once: _Once,
        extra_seconds: float = 0.0,
        retry: dict[str, Any] | None = None,
    ) -> PredictionRow:
        outcome, prepared, result, status = once.outcome, once.prepared, once.result, once.status
        prediction, answer_details = once.prediction, once.answer_details
        usage = outcome.usage
        if usage.cost_usd is None:
            usage = usage.model_copy(update={"cost_usd": self.prices.cost(usage, self.price_model)})
        details = {
            **(prepared.details if prepared is not None else {}),
            **outcome.details,
            **answer_details,
            "try": key.try_number,
            "progress": progress_signal(outcome.trace),
        }
        if self.retry_empty:
            details["retried"] = retry is not None  # upstream's `retried`
            if retry is not None:
                details["empty_retry"] = retry
        if result is not None:
            details["process"] = {
                "stray_killed": result.stray_killed,
                "memory_method": result.memory_method,
            }
            if result.node is not None:
                details["node"] = result.node
        return PredictionRow(
            id=task.id,
            suite=task.suite,
            task=task.question,
            gold=task.gold,
            prediction=_recorded_prediction(prediction, status),
            status=status,
            error_class=outcome.error_class,
            error=redact_text(outcome.error) if outcome.error else None,
            # Both attempts' time when the empty answer was retried (upstream bills both).
            duration_s=round(once.seconds + extra_seconds, 3),
            timed_out=bool(result and result.timed_out),
            returncode=result.returncode if result is not None else None,
            attempt=key.attempt,
            backend=self.backend.name,
            trace=[_redact_call(call) for call in with_reply_sizes(outcome.trace)],
            usage=usage,
            resources=once.resources(),
            stderr_tail=redact_text(result.stderr[-STDERR_TAIL_CHARS:]) if result else "",
            # Backends copy the agent's own text into details (refused calls' arguments,
            # search queries, chat replies): it is redacted like the trace.
            details=_redact_value(details),
            **task.suite_fields(),
        )


# Infrastructure failures an injected fault caused (the agent, or the server it needs, went
# with the engine the fault killed): the fault's outcome, recorded as such and not retried
# on resume, which would inject the same fault again.
_FAULTED_CLASSES = frozenset({"crash", "agent_error", "mcp_server"})


def _metered(outcome: AgentOutcome, summary: dict[str, Any]) -> None:
    """The meter's account in the row; an attempt it ended for its budget has status
    ``budget`` and no answer, whatever the agent made of being refused."""
    outcome.details["meter"] = summary
    if summary.get("budget_exhausted"):
        if outcome.error is not None:
            summary["agent_said"] = redact_text(outcome.error)[:300]
        outcome.status, outcome.error_class, outcome.error = "budget", None, None
        outcome.output = ""


def _faulted(outcome: AgentOutcome, record: dict[str, Any]) -> None:
    """The fault's record in the row; an infrastructure failure after it fired is its
    outcome (``injected_fault``)."""
    outcome.details["fault"] = record
    faulted = outcome.status == "error" and outcome.error_class in _FAULTED_CLASSES
    if record.get("fired") and faulted:
        record["error_class"] = outcome.error_class
        outcome.error_class = INJECTED_FAULT


@dataclass
class _AttemptHolds:
    """What one attempt holds of the run's services until its outcome is read: its place on
    the web proxy and its metered model endpoint (None: not held)."""

    web: AttemptWeb | None = None
    metered: MeteredAttempt | None = None


@dataclass
class _Once:
    """One run of the agent on a task, before it becomes a row."""

    outcome: AgentOutcome
    prediction: str | None
    answer_details: dict[str, Any]
    prepared: PreparedTask | None
    result: ProcessResult | None
    status: Status
    seconds: float
    fetched: Fetched | None = None  # what its browser fetched (None: it never ran)

    def resources(self) -> ResourceUse | None:
        """What it cost: its process's figures with what its browser fetched."""
        use = self.result.resources if self.result is not None else None
        if use is None and self.fetched is None:
            return None
        return (use or ResourceUse()).model_copy(update={"fetched": self.fetched})


def _dumped(use: ResourceUse | None) -> dict[str, Any] | None:
    return use.model_dump(exclude_none=True) if use is not None else None


def _answered(once: _Once) -> bool:
    return bool((once.prediction or "").strip())


def _retryable_empty(once: _Once) -> bool:
    """Upstream's rule: no answer, and neither a timeout (retrying one burns the budget) nor a
    safety refusal (the backend says so in ``details.safety_refusal``). Only an attempt that
    ended normally with nothing to say (status ``empty``): an error is an infrastructure
    failure, which ``--resume`` retries (upstream retried it at once, as an empty answer)."""
    if once.status != "empty" or _answered(once):
        return False
    if once.result is not None and once.result.timed_out:
        return False
    return not once.outcome.details.get("safety_refusal")


def scrub_secrets(folder: Path) -> None:
    """Redact secrets in place in what an agent left in its attempt folder (its trace holds
    every URL and typed value); the run folder is meant to be shared. Regular files only: a
    symbolic link is never followed out of the folder, and bytes are kept as they are
    (line endings included) unless a secret is replaced."""
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= SCRUB_MAX_BYTES:
                    continue
                with open(path, "rb") as fh:
                    text = fh.read().decode("utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary files (attachments) are the dataset's, not the agent's
            cleaned = redact_text(text)
            if cleaned != text:
                with open(path, "wb") as fh:
                    fh.write(cleaned.encode("utf-8"))


def _recorded_prediction(prediction: str | None, status: str) -> str | None:
    if prediction:
        return redact_text(prediction)  # an agent may echo a key it found in its env
    return None if status in ("timeout", "error") else prediction


def _redact_call(call: ToolCall) -> ToolCall:
    """A tool call with secrets out of every text field (a URL's query, a typed value)."""
    return call.model_copy(
        update={
            "args": _redact_value(call.args),
            "page_url": _redact_value(call.page_url),
            "error": _redact_value(call.error),
            "output": _redact_value(call.output),
        }
    )


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: _redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(item) for item in value]
    return value


@dataclass
class RunOutcome:
    written: int
    counts: Counter[str]
    contaminated: list[str]  # ids of rows whose agent left its browser (MCP audit)
    interrupted: bool
    wall_seconds: float
    busy_seconds: float  # summed time workers spent inside attempts
    agent_seconds: float  # summed time the agent processes ran

    def then(self, later: RunOutcome) -> RunOutcome:
        """This outcome and a later execution's of the same run (its runner's agent time
        is the whole run's so far), as one."""
        return RunOutcome(
            written=self.written + later.written,
            counts=self.counts + later.counts,
            contaminated=self.contaminated + later.contaminated,
            interrupted=later.interrupted,
            wall_seconds=self.wall_seconds + later.wall_seconds,
            busy_seconds=self.busy_seconds + later.busy_seconds,
            agent_seconds=later.agent_seconds,
        )


class _Interrupts:
    """First Ctrl-C: stop starting. Second, or SIGTERM: kill the running attempts."""

    def __init__(self, executor: Executor, progress: RunProgress):
        self.executor = executor
        self.progress = progress
        self.count = 0
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if signum == signal.SIGINT and self.count == 1:
            self.executor.stop_starting()
            self.progress.note(
                "[yellow]interrupt:[/] starting no more tasks; waiting for the running ones "
                "(Ctrl-C again kills them)"
            )
        else:
            self.executor.kill_running()
            self.progress.note("[yellow]interrupt:[/] killing the running tasks")


def clean_up_after_earlier_sessions(run_dir: Path, console: Console | None) -> None:
    """What a harness killed outright (SIGKILL, a lost machine) left of this run, removed
    by the run's next session before it starts its own: its attempts' processes (agents
    still running, capped agents' shells stopped until a slot that never came), their
    memory cgroups and their temp folders. Another run's are never touched: they carry
    another run's key."""
    key = run_key(run_dir)
    reaped = reap(f"{key}-", folder_prefix=run_tmpdir_prefix(run_dir))
    left = sweep_attempt_tmpdirs(run_dir)
    found = [
        f"{count} {what}"
        for count, what in (
            (reaped.processes, "process(es)"),
            (reaped.cgroups, "memory cgroup(s)"),
            (len(left), "temp folder(s)"),
        )
        if count
    ]
    if found and console is not None:
        console.print(f"removed {', '.join(found)} an earlier session of this run left ({run_dir})")


@dataclass(frozen=True)
class Lane:
    """One run folder's share of an execution: its attempts, the runner that runs them and
    the predictions file their rows go to. A run is one lane; a sweep runs each of its cells
    as a lane of one execution, through one executor and one progress view."""

    keys: list[AttemptKey]
    runner: AttemptRunner
    predictions_path: Path


def execute(
    keys: list[AttemptKey],
    runner: AttemptRunner,
    executor: Executor,
    predictions_path: Path,
    title: str,
    console: Console | None = None,
) -> RunOutcome:
    """One run's attempts through ``executor``, each row written as its attempt ends."""
    return execute_lanes([Lane(keys, runner, predictions_path)], executor, title, console)[0]


def execute_lanes(
    lanes: list[Lane], executor: Executor, title: str, console: Console | None = None
) -> list[RunOutcome]:
    """Every lane's attempts through one executor; each row is written to its own lane's
    predictions file (by this thread only) as its attempt ends. One outcome per lane."""
    started = time.monotonic()
    counts: list[Counter[str]] = [Counter() for _ in lanes]
    contaminated: list[list[str]] = [[] for _ in lanes]
    written = [0] * len(lanes)
    killed = [0] * len(lanes)
    busy = [0.0] * len(lanes)
    for lane in lanes:
        clean_up_after_earlier_sessions(lane.runner.run_dir, console)
    lane_of = {id(lane.runner): i for i, lane in enumerate(lanes)}
    work = [(lane.runner, key) for lane in lanes for key in lane.keys]
    with (
        ExitStack() as writers_open,
        RunProgress(len(work), title, console) as progress,
        _Interrupts(executor, progress) as interrupts,
    ):
        for lane in lanes:  # the attempts' temp folders, reused until the run ends
            writers_open.enter_context(lane.runner.temp_folders.reused())
        writers = [
            writers_open.enter_context(PredictionsWriter(lane.predictions_path)) for lane in lanes
        ]
        for (runner, _), row in executor.run(work):
            i = lane_of[id(runner)]
            writers[i].append(row)
            written[i] += 1
            counts[i][row.status] += 1
            # An injected fault's own outcome (not retried): counted apart for the end.
            counts[i][INJECTED_FAULT] += row.error_class == INJECTED_FAULT
            killed[i] += row.error_class == "interrupted"
            busy[i] += row.duration_s
            if row.details.get("contaminated"):
                contaminated[i].append(row.id)
            progress.advance(row)
    wall = time.monotonic() - started
    return [
        RunOutcome(
            written=written[i],
            counts=counts[i],
            contaminated=contaminated[i],
            # A lane whose every attempt ended on its own before the interrupt is complete.
            interrupted=interrupts.count > 0 and (written[i] < len(lane.keys) or killed[i] > 0),
            wall_seconds=wall,
            # One lane: the executor's own figure (time inside attempts, harness included).
            busy_seconds=executor.busy_seconds if len(lanes) == 1 else busy[i],
            agent_seconds=lane.runner.agent_seconds,
        )
        for i, lane in enumerate(lanes)
    ]

"""A run as an Inspect eval log (``agent-benchmarks export --inspect``), for ``inspect view``.

The log is built from inspect-ai's own records and written by its own writer
(``write_eval_log``, the ``.eval`` format), so any tool that reads Inspect logs reads it. What
maps to what (docs/viewing.md says the same, with what has no place there):

- the run → the log: its suite is the task, its stack the solver (one plan step with the
  manifest's settings), its model the model, its manifest's programs the packages, and the
  rest of the manifest (run folder, mode, argv, dataset, spec) ``eval.metadata``; its state
  the status (graded or complete: ``success``, interrupted: ``cancelled``, running:
  ``started``);
- each attempt (its final row) → a sample: the task id its id, the attempt its epoch, the
  task text its input; its messages the task, then each tool call as an assistant turn
  calling it and the tool's reply (with the call's error), then the answer; the answer its
  output; the grade its score (the suite's official scorer, and upstream's matching where
  scores.json has it), usage its model usage, the duration its time; a timeout its time
  limit, an error (or an infrastructure failure) its error; the row's status, error, suite
  fields, details and resources its metadata;
- the run's success rate over its graded attempts → the results' accuracy.

The target is left empty: gold answers stay in scores.json and do not travel with a log
that may be shared, as with the HTML report. Rows record the model's tool calls, not its
turns, so each call is its own assistant message; the transcript holds a tool event per
call (its latency as its working time) and the scores, every event stamped with the run's
start (rows keep no time per call), and no model events (rows keep no model requests).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import Manifest, PredictionRow, TaskScore
from agent_benchmarks.records.storage import PredictionsStream
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.schema import Stack
from agent_benchmarks.report.stacks import stack_of
from agent_benchmarks.view.runs import RunSummary, summarise

STATUS = {
    "graded": "success",
    "not graded": "success",
    "interrupted": "cancelled",
    "running": "started",
}


def _messages(row: PredictionRow) -> list[Any]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    messages: list[Any] = [ChatMessageUser(content=row.task)]
    for n, call in enumerate(row.trace, start=1):
        call_id = f"call-{n}"
        messages.append(
            ChatMessageAssistant(
                content="",
                tool_calls=[ToolCall(id=call_id, function=call.name, arguments=dict(call.args))],
            )
        )
        messages.append(
            ChatMessageTool(
                content=call.output or "",
                tool_call_id=call_id,
                function=call.name,
                error=ToolCallError("unknown", call.error) if call.error else None,
            )
        )
    messages.append(ChatMessageAssistant(content=row.prediction or ""))
    return messages


def _events(row: PredictionRow, scores: dict[str, Any], at: str | None) -> list[Any]:
    """The transcript: each tool call as a tool event (its reply, error and latency), then
    the scores. Rows record each call's latency, not its time: every event carries the
    run's start as its timestamp."""
    from inspect_ai.event import ScoreEvent, ToolEvent
    from inspect_ai.tool import ToolCallError

    stamp = {"timestamp": at} if at else {}
    events: list[Any] = [
        ToolEvent(
            id=f"call-{n}",
            function=call.name,
            arguments=dict(call.args),
            result=call.output or "",
            error=ToolCallError("unknown", call.error) if call.error else None,
            working_time=call.latency_ms / 1000 if call.latency_ms is not None else None,
            **stamp,
        )
        for n, call in enumerate(row.trace, start=1)
    ]
    return events + [ScoreEvent(score=score, **stamp) for score in scores.values()]


def _scores(entry: TaskScore | None, upstream: dict[str, Any] | None, scorer: str) -> dict:
    from inspect_ai.scorer import Score

    if entry is None:
        return {}
    failed = entry.details.get("failed")
    out = {
        scorer: Score(
            value=entry.score,
            answer=entry.prediction,
            explanation="correct"
            if entry.correct
            else "wrong" + (f": failed clauses {', '.join(map(str, failed))}" if failed else ""),
            metadata={"correct": entry.correct},
        )
    }
    if upstream is not None:
        out["upstream_match"] = Score(
            value=upstream["score"], metadata={"correct": upstream["correct"]}
        )
    return out


def _usage(row: PredictionRow) -> Any:
    from inspect_ai.model import ModelUsage

    u = row.usage
    return ModelUsage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        total_tokens=u.total_tokens,
        input_tokens_cache_read=u.cache_read_tokens,
        input_tokens_cache_write=u.cache_write_tokens,
        total_cost=u.cost_usd,
    )


def _sample(
    row: PredictionRow,
    entry: TaskScore | None,
    upstream: dict[str, Any] | None,
    model: str,
    scorer: str,
    timeout_s: float | None,
    started: str | None,
) -> Any:
    from inspect_ai.log import EvalError, EvalSample, EvalSampleLimit
    from inspect_ai.model import ModelOutput

    error = limit = None
    if row.status == "timeout" and timeout_s:
        limit = EvalSampleLimit(type="time", limit=timeout_s, reason=row.error)
    elif row.status in ("error", "timeout"):
        message = f"{row.error_class or row.status}: {row.error or ''}".strip(": ")
        error = EvalError(message=message, traceback=row.stderr_tail, traceback_ansi="")
    metadata = {
        "status": row.status,
        "error_class": row.error_class,
        "error": row.error,
        "backend": row.backend,
        "usage_estimated": row.usage.estimated,
        **{k: v for k, v in row.suite_fields().items() if v is not None},
        "details": row.details,
        "resources": row.resources.model_dump() if row.resources is not None else None,
    }
    scores = _scores(entry, upstream, scorer)
    return EvalSample(
        id=row.id,
        epoch=row.attempt,
        input=row.task,
        target="",
        messages=_messages(row),
        output=ModelOutput.from_content(model=model, content=row.prediction or ""),
        scores=scores,
        events=_events(row, scores, started),
        metadata=metadata,
        model_usage={model: _usage(row)},
        total_time=row.duration_s,
        working_time=row.duration_s,
        error=error,
        limit=limit,
    )


def _rows(run: LoadedRun) -> Iterator[PredictionRow]:
    """Each attempt's final row, whole (tool outputs included), in the file's order."""
    stream = PredictionsStream(run.run_dir / "predictions.jsonl", run.suite, tool_outputs=True)
    for summary in run.final:
        yield stream.row_at(summary.offset, summary.line_number, (summary.id, summary.attempt))


def eval_log(run_dir: Path) -> tuple[Any, int]:
    """The run as an EvalLog, and its number of samples."""
    from inspect_ai.log import EvalLog, EvalPlan, EvalPlanStep

    summary = summarise(run_dir, run_dir)
    run, manifest = summary.run, summary.manifest
    if run is None:
        raise InputError(f"{run_dir}: {summary.problem or 'no prediction rows yet'}")
    stack = stack_of(run)
    provider = manifest.provider if manifest is not None else None
    model = "/".join(p for p in (provider, stack.model or "unknown") if p)
    scorer = str((run.scores.grader if run.scores else {}).get("name") or f"{run.suite}-grade")
    samples = _samples(run, manifest, model, scorer)
    log = EvalLog(
        status=STATUS[summary.state],
        eval=_spec(summary, run, stack, model),
        plan=EvalPlan(
            name="agent-benchmarks",
            steps=[
                EvalPlanStep(solver=stack.backend, params=manifest.settings if manifest else {})
            ],
        ),
        results=_results(summary, run, scorer, len(samples)),
        stats=_stats(manifest, model, samples),
        samples=samples,
    )
    return log, len(samples)


def _samples(run: LoadedRun, manifest: Manifest | None, model: str, scorer: str) -> list[Any]:
    """A sample per attempt, with its official grade and upstream's where scores.json has it."""
    scores = run.scores
    entries = {(e.id, e.attempt): e for e in run.entries}
    upstream = {
        (str(line["id"]), int(line["attempt"])): line
        for line in ((scores.upstream_view or {}).get("per_task", []) if scores else [])
    }
    timeout_s = manifest.timeout_s if manifest is not None else None
    return [
        _sample(
            row,
            entries.get((row.id, row.attempt)),
            upstream.get((row.id, row.attempt)),
            model,
            scorer,
            timeout_s,
            manifest.started_at if manifest is not None else None,
        )
        for row in _rows(run)
    ]


def _spec(summary: RunSummary, run: LoadedRun, stack: Stack, model: str) -> Any:
    """The log's ``eval``: the run as task, solver and model, the rest of its manifest in
    the metadata."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalRevision, EvalSpec

    run_dir, manifest = summary.run_dir, summary.manifest
    started = manifest.started_at if manifest is not None else ""
    return EvalSpec(
        created=started or "1970-01-01T00:00:00+00:00",
        task=run.suite,
        task_display_name=f"{run.suite} · {stack.label}",
        task_id=hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:22],
        dataset=EvalDataset(
            name=run.suite,
            location=(manifest.dataset.hf_id or manifest.dataset.path) if manifest else None,
            samples=summary.planned,
            sample_ids=run.task_ids,
        ),
        solver=stack.backend,
        model=model,
        config=EvalConfig(epochs=manifest.repeat if manifest is not None else 1),
        revision=EvalRevision(
            type="git", origin="", commit=manifest.git_sha, dirty=manifest.git_dirty
        )
        if manifest is not None and manifest.git_sha
        else None,
        packages=dict(manifest.programs) if manifest is not None else {},
        metadata={
            "agent_benchmarks": {
                "run_dir": str(run_dir),
                "state": summary.state,
                "mode": summary.mode,
                "stack": stack.model_dump(),
                "manifest": manifest.model_dump(mode="json") if manifest is not None else None,
            }
        },
    )


def _results(summary: RunSummary, run: LoadedRun, scorer: str, n_samples: int) -> Any:
    """The run's success rate over its graded attempts, as the scorer's accuracy."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    graded = summary.graded
    metrics = {}
    if graded:
        rate = summary.successes / len(graded)
        metrics = {"accuracy": EvalMetric(name="accuracy", value=rate)}
    return EvalResults(
        total_samples=summary.planned,
        completed_samples=n_samples,
        scores=[EvalScore(name=scorer, scorer=scorer, metrics=metrics)] if run.scores else [],
    )


def _stats(manifest: Manifest | None, model: str, samples: list[Any]) -> Any:
    """When the run started and finished, and the model usage of all its samples."""
    from inspect_ai.log import EvalStats
    from inspect_ai.model import ModelUsage

    totals = ModelUsage()
    for sample in samples:
        totals = totals + sample.model_usage[model]
    return EvalStats(
        started_at=manifest.started_at if manifest is not None else "",
        completed_at=(manifest.finished_at or "") if manifest is not None else "",
        model_usage={model: totals},
    )


def log_name(run_dir: Path, log: Any) -> str:
    """Inspect's own naming: ``<created>_<task>_<id>.eval``."""
    created = re.sub(r"[^0-9T]", "-", log.eval.created[:19])
    return f"{created}_{log.eval.task}_{log.eval.task_id}.eval"


def export_runs(run_dirs: Sequence[Path], out: Path) -> Iterator[tuple[Path, Path, int]]:
    """Write each run's log into ``out``: (run folder, log file, samples) as each is written."""
    from inspect_ai.log import write_eval_log

    for run_dir in run_dirs:
        if not (run_dir / "predictions.jsonl").is_file():
            raise InputError(f"{run_dir}: no predictions.jsonl in it: not a run folder")
    out.mkdir(parents=True, exist_ok=True)
    for run_dir in run_dirs:
        log, n = eval_log(run_dir)
        path = out / log_name(run_dir, log)
        write_eval_log(log, path, format="eval")
        yield run_dir, path, n

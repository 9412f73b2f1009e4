"""From a predictions file to ``scores.json``: the part of grading every suite shares.

A suite supplies a :class:`Grader` (score one attempt, summarise a set of attempts); this
module does the rest the same way for all suites:

- which rows count: for each (task, attempt) the last row is final; earlier rows for the
  same attempt must be infrastructure failures that a resume retried (anything else is a
  duplicate and refused);
- the denominator: every task the run selected (the manifest's ``task_ids`` and
  ``repeat``), so a task without a row counts as wrong (``missing_row``), and timeouts and
  errors count as wrong in ``accuracy_strict`` unless they printed a right answer first,
  while ``accuracy_on_completed`` leaves infrastructure failures out and says so; a run
  imported from upstream's harness has no
  task list, so its denominator is the rows in the file, and scores.json says so in its
  ``provenance`` (with what upstream's manifest said and what upstream does not record);
- answers printed before a failure: an attempt that timed out or exited with an error
  after printing an answer is graded on that answer, as upstream's harness does, and
  counted apart (``failed_with_answer``); it stays a timeout or an error in the status
  counts, and ``--resume`` still retries it;
- the upstream-comparable view (``upstream_view``, :mod:`.upstream_match`): upstream's
  matching, keys and denominator beside the official numbers, for the suites upstream has;
- per-attempt metrics and their mean for repeated runs, breakdowns by group, usage,
  cost and duration, and the readable summary table.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from agent_benchmarks import upstream
from agent_benchmarks.errors import InputError
from agent_benchmarks.records import (
    INFRA_STATUSES,
    FailedWithAnswer,
    Manifest,
    PredictionRow,
    Scores,
    TaskScore,
    Usage,
    UsageSummary,
)
from agent_benchmarks.scoring.upstream_match import UpstreamGrade, upstream_view
from agent_benchmarks.storage import (
    PredictionsFile,
    current_task_id,
    read_predictions,
    write_json_atomic,
)


@dataclass
class Grade:
    """The grade of one attempt, as a suite's grader decides it."""

    score: float
    correct: bool
    details: dict[str, Any] = field(default_factory=dict)
    # The same answer under upstream's matching; None: the official grade stands in (WebBench,
    # whose judge is the same in both views).
    upstream: UpstreamGrade | None = None


class Grader(Protocol):
    """A suite's grader. Optional hooks, looked up by name where they are used:
    ``readiness_problem() -> str | None`` (why grading would fail before it starts, such as
    a judge without its API key: a run that grades at the end refuses to start) and
    ``print_details(scores, console)`` (more tables after the summary)."""

    suite: str
    needs_gold: bool
    # Suite fields to break results down by ("level", "difficulty", "web_name").
    group_fields: tuple[str, ...]

    def info(self) -> dict[str, Any]:
        """What grader this is (scorer, judge model, prompt hash...): goes in scores.json."""
        ...

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        """Grade, in order, rows that completed (status ok or empty) and rows that failed
        (timeout or error) after printing an answer."""
        ...

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        """Suite metrics over one attempt's entries (every selected task present)."""
        ...


# --- choosing the final rows ----------------------------------------------------------------


@dataclass
class FinalRows:
    rows: list[PredictionRow]
    superseded: int  # infrastructure failures a resume retried


def final_rows(rows: Iterable[PredictionRow], path: Path) -> FinalRows:
    by_key: dict[tuple[str, int], list[PredictionRow]] = defaultdict(list)
    for row in rows:
        by_key[(row.id, row.attempt)].append(row)
    final: list[PredictionRow] = []
    superseded = 0
    for (task_id, attempt), group in by_key.items():
        earlier = group[:-1]
        settled = [r for r in earlier if r.status not in INFRA_STATUSES]
        if settled:
            raise InputError(
                f"{path}: duplicate rows for task {task_id!r} attempt {attempt}: a row with "
                f"status {settled[0].status!r} is followed by another; a run writes one final "
                "row per attempt (only timeouts and errors are retried)"
            )
        superseded += len(earlier)
        final.append(group[-1])
    return FinalRows(rows=final, superseded=superseded)


def read_manifest(run_dir: Path) -> Manifest | None:
    """Our manifest beside the predictions; None when there is none, or when it is the
    manifest upstream's harness wrote (:func:`upstream.read_upstream_manifest` reads it)."""
    path = run_dir / "manifest.json"
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
        if upstream.is_upstream_manifest(json.loads(data)):
            return None
    except ValueError:
        pass  # not JSON: the validation below says so, naming the file
    try:
        manifest = Manifest.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(f"{path}: invalid manifest: field {where!r}: {first['msg']}") from None
    manifest.task_ids = [current_task_id(manifest.suite, i) for i in manifest.task_ids]
    return manifest


# --- aggregation ------------------------------------------------------------------------------


def _sum_usage(usages: Iterable[Usage]) -> Usage:
    usages = list(usages)
    costs = [u.cost_usd for u in usages if u.cost_usd is not None]
    return Usage(
        input_tokens=sum(u.input_tokens for u in usages),
        cache_read_tokens=sum(u.cache_read_tokens for u in usages),
        cache_write_tokens=sum(u.cache_write_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        turns=sum(u.turns for u in usages),
        cost_usd=round(sum(costs), 6) if costs else None,
        estimated=any(u.estimated for u in usages),
    )


def _mean_usage(total: Usage, n: int) -> Usage:
    if n == 0:
        return Usage()
    return Usage(
        input_tokens=round(total.input_tokens / n),
        cache_read_tokens=round(total.cache_read_tokens / n),
        cache_write_tokens=round(total.cache_write_tokens / n),
        output_tokens=round(total.output_tokens / n),
        turns=round(total.turns / n),
        cost_usd=None if total.cost_usd is None else round(total.cost_usd / n, 6),
        estimated=total.estimated,
    )


def failed_with_answer(status: str, prediction: str | None) -> bool:
    """A timeout or error that printed an answer first: graded on it, as upstream does."""
    return status in INFRA_STATUSES and bool((prediction or "").strip())


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def strict_accuracy(entries: Sequence[TaskScore]) -> float:
    return mean([1.0 if e.correct else 0.0 for e in entries])


def _mean_of_metrics(per_attempt: list[dict[str, Any]]) -> dict[str, Any]:
    """Average the numeric metrics over attempts (a single attempt is returned as is)."""
    if len(per_attempt) == 1:
        return dict(per_attempt[0])
    keys = [k for k, v in per_attempt[0].items() if isinstance(v, int | float)]
    return {k: mean([float(m[k]) for m in per_attempt]) for k in keys}


def _contamination(entries: list[TaskScore], warnings: list[str]) -> dict[str, Any]:
    """Rows whose agent ran a tool outside its browser (the MCP audit): counted, and
    accuracy shown without them. Calls Claude Code refused reached nothing: they are
    counted beside (rows with any, and calls) and leave the row in. Only backends that
    audit set these details."""
    refused = [e.details.get("n_refused_calls") or 0 for e in entries]
    refused = [n for n in refused if n]
    counts = (
        {"n_rows_with_refused_calls": len(refused), "n_refused_calls": sum(refused)}
        if refused
        else {}
    )
    tainted = [e for e in entries if e.details.get("contaminated")]
    if not tainted:
        return counts
    clean = [e for e in entries if not e.details.get("contaminated")]
    warnings.append(
        f"{len(tainted)} row(s) are contaminated: the agent ran tools outside its browser "
        f"MCP server (e.g. task {tainted[0].id!r}); see each row's details.foreign_calls"
    )
    return {
        "n_contaminated": len(tainted),
        "accuracy_strict_uncontaminated": strict_accuracy(clean) if clean else None,
        **counts,
    }


def import_provenance(loaded: PredictionsFile, run_dir: Path) -> dict[str, Any] | None:
    """scores.json's provenance for a predictions file upstream's harness wrote, else None."""
    if not loaded.imported:
        return None
    return upstream.provenance(upstream.read_upstream_manifest(run_dir))


def import_warning(loaded: PredictionsFile) -> str:
    return (
        f"{loaded.n_imported} of {len(loaded.rows)} row(s) were written by upstream's harness "
        f"({upstream.UPSTREAM_REPO}) and converted on read; denominator: "
        f"{upstream.DENOMINATOR_NOTE}; see provenance.not_recorded for what they lack"
    )


def build_scores(
    predictions_path: Path,
    rows: list[PredictionRow],
    manifest: Manifest | None,
    grader: Grader,
    warnings: list[str],
    progress: Callable[[str], None] | None = None,
    provenance: dict[str, Any] | None = None,
) -> Scores:
    for number, row in enumerate(rows, start=1):
        if row.suite != grader.suite:
            raise InputError(
                f"{predictions_path}: row {number} (task {row.id!r}) is a {row.suite} row; "
                f"this is the {grader.suite} grader"
            )
        if grader.needs_gold and row.gold is None:
            raise InputError(
                f"{predictions_path}: row {number} (task {row.id!r}) has no gold answer; "
                f"{grader.suite} is graded against gold (was it run on a test split?)"
            )
    chosen = final_rows(rows, predictions_path)
    gradable = [
        r
        for r in chosen.rows
        if r.status not in INFRA_STATUSES or failed_with_answer(r.status, r.prediction)
    ]
    if progress:
        n_failed = sum(1 for r in gradable if r.status in INFRA_STATUSES)
        also = f", and {n_failed} that failed after printing an answer" if n_failed else ""
        progress(f"grading {len(gradable) - n_failed} completed attempts{also}")
    grades = dict(zip((id(r) for r in gradable), grader.grade(gradable), strict=True))

    entries: list[TaskScore] = []
    upstream_grades: list[tuple[TaskScore, UpstreamGrade]] = []
    for row in chosen.rows:
        grade = grades.get(id(row))
        if grade is None:  # a timeout or error that printed nothing: nothing to grade
            grade = Grade(0.0, False, {"not_graded": row.status})
        details = grade.details
        if failed_with_answer(row.status, row.prediction):
            details = {**details, "answer_before_failure": row.status}
        if row.details.get("contaminated"):
            details = {**details, "contaminated": True}
        if row.details.get("n_refused_calls"):
            details = {**details, "n_refused_calls": row.details["n_refused_calls"]}
        entry = TaskScore(
            id=row.id,
            attempt=row.attempt,
            score=grade.score,
            correct=grade.correct,
            status=row.status,
            error_class=row.error_class,
            prediction=row.prediction,
            gold=row.gold,
            duration_s=row.duration_s,
            usage=row.usage,
            details=details,
            **row.suite_fields(),
        )
        entries.append(entry)
        stand_in = UpstreamGrade(score=grade.score, correct=grade.correct)
        upstream_grades.append((entry, grade.upstream or stand_in))
    # Upstream's denominator is the rows in the file: taken before missing rows are added.
    comparable = upstream_view(grader.suite, upstream_grades)

    # Every selected task belongs in the denominator, with or without a row.
    if manifest is not None and manifest.task_ids:
        have = {(e.id, e.attempt) for e in entries}
        extra = sorted({e.id for e in entries} - set(manifest.task_ids))
        if extra:
            warnings.append(
                f"{len(extra)} task(s) in the predictions are not in the manifest's selection, "
                f"e.g. {extra[0]!r}"
            )
        for attempt in range(1, manifest.repeat + 1):
            for task_id in manifest.task_ids:
                if (task_id, attempt) not in have:
                    entries.append(
                        TaskScore(
                            id=task_id,
                            attempt=attempt,
                            score=0.0,
                            correct=False,
                            status="error",
                            error_class="missing_row",
                            details={"not_graded": "no row in the predictions file"},
                        )
                    )
        missing = sum(1 for e in entries if e.error_class == "missing_row")
        if missing:
            warnings.append(
                f"{missing} selected attempt(s) have no row (an interrupted run?); counted "
                "wrong: resume the run to complete them"
            )
    entries.sort(key=lambda e: (e.attempt, e.id))

    by_attempt: dict[int, list[TaskScore]] = defaultdict(list)
    for entry in entries:
        by_attempt[entry.attempt].append(entry)
    per_attempt = {
        str(a): {
            "n": len(es),
            "accuracy_strict": strict_accuracy(es),
            **grader.metrics(es),
        }
        for a, es in sorted(by_attempt.items())
    }
    overall = _mean_of_metrics(list(per_attempt.values()))
    overall.pop("n", None)

    by_group: dict[str, dict[str, Any]] = {}
    for group_field in grader.group_fields:
        groups: dict[str, list[TaskScore]] = defaultdict(list)
        for entry in entries:
            value = getattr(entry, group_field)
            if value is not None:
                groups[str(value)].append(entry)
        if groups:
            by_group[group_field] = {
                key: {
                    "n": len(es),
                    "accuracy_strict": strict_accuracy(es),
                    **grader.metrics(es),
                }
                for key, es in sorted(groups.items())
            }

    completed_entries = [e for e in entries if e.status not in INFRA_STATUSES]
    failed = [e for e in entries if failed_with_answer(e.status, e.prediction)]
    durations = [r.duration_s for r in chosen.rows]
    all_usage = _sum_usage(r.usage for r in rows)  # retried attempts cost money too
    n_tasks = len({e.id for e in entries})
    errors = Counter(e.error_class or "unknown" for e in entries if e.status == "error")
    attempts = {
        "n_attempts": len(per_attempt),
        "per_attempt": per_attempt,
        "mean_accuracy_strict": overall["accuracy_strict"],
    }
    return Scores(
        manifest=manifest,
        suite=grader.suite,  # type: ignore[arg-type]
        predictions_path=str(predictions_path),
        predictions_sha256=hashlib.sha256(predictions_path.read_bytes()).hexdigest(),
        grader=grader.info(),
        n_tasks=n_tasks,
        n_rows=len(rows),
        accuracy_strict=overall.pop("accuracy_strict"),
        metrics={
            **overall,
            "n_superseded_rows": chosen.superseded,
            **_contamination(entries, warnings),
        },
        by_group=by_group,
        n_answered=sum(1 for e in entries if e.status == "ok" and (e.prediction or "").strip()),
        n_timeouts=sum(1 for e in entries if e.status == "timeout"),
        n_errors=dict(sorted(errors.items())),
        accuracy_on_completed=(strict_accuracy(completed_entries) if completed_entries else None),
        n_completed=len(completed_entries),
        failed_with_answer=FailedWithAnswer(
            n=len(failed),
            n_correct=sum(1 for e in failed if e.correct),
            ids=[e.id for e in failed],
        ),
        upstream_view=comparable,
        attempts=attempts,
        usage=UsageSummary(
            totals=all_usage,
            per_task_mean=_mean_usage(all_usage, n_tasks),
            n_estimated_rows=sum(1 for r in rows if r.usage.estimated),
        ),
        duration_s={
            "mean": round(mean(durations), 3),
            "median": round(statistics.median(durations), 3) if durations else 0.0,
            "total": round(sum(durations), 3),
        },
        warnings=warnings,
        provenance=provenance,
        per_task=entries,
    )


# --- the grade command ------------------------------------------------------------------------


def grade_file(
    predictions_path: Path,
    grader: Grader,
    out: Path | None = None,
    console: Console | None = None,
) -> tuple[Scores, Path]:
    """Grade a predictions file and write scores.json; the predictions are only read.

    In a folder upstream's harness wrote, its own scores.json is left as it is and ours goes
    beside it (:func:`upstream.scores_path`).
    """
    predictions_path = Path(predictions_path)
    out = Path(out) if out is not None else upstream.scores_path(predictions_path.parent)
    if out.resolve() == predictions_path.resolve():
        raise InputError(f"--out {out}: that is the predictions file; grading never overwrites it")
    console = console or Console(stderr=True, soft_wrap=True)
    loaded = read_predictions(predictions_path, suite=grader.suite)  # type: ignore[arg-type]
    warnings = loaded.warnings()
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    if not loaded.rows:
        raise InputError(f"{predictions_path}: no prediction rows to grade")
    manifest = read_manifest(predictions_path.parent)
    provenance = import_provenance(loaded, predictions_path.parent)
    if provenance is not None:
        warnings.append(import_warning(loaded))
    elif manifest is None:
        warnings.append(
            "no manifest.json beside the predictions: provenance unknown, and tasks without a "
            "row cannot be counted"
        )
    elif manifest.suite != grader.suite:
        raise InputError(
            f"{predictions_path.parent / 'manifest.json'}: a {manifest.suite} run; this is the "
            f"{grader.suite} grader"
        )
    scores = build_scores(
        predictions_path,
        loaded.rows,
        manifest,
        grader,
        warnings,
        progress=lambda msg: console.print(msg),
        provenance=provenance,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, scores.model_dump_json(indent=2) + "\n")
    return scores, out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def print_summary(scores: Scores, out: Path, console: Console | None = None) -> None:
    console = console or Console(soft_wrap=True)
    mode = scores.manifest.mode if scores.manifest else "unknown"
    if scores.provenance is not None:
        mode = f"imported from {scores.provenance.get('imported', 'elsewhere')}"
    title = f"{scores.suite} scores ({scores.n_tasks} tasks, {scores.n_rows} rows, mode {mode})"
    table = Table(title=title, show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("accuracy_strict", _fmt(scores.accuracy_strict))
    for key, value in scores.metrics.items():
        table.add_row(key, _fmt(value))
    table.add_row(
        "accuracy_on_completed (infra failures left out)",
        _fmt(scores.accuracy_on_completed) if scores.accuracy_on_completed is not None else "-",
    )
    table.add_row("answered", str(scores.n_answered))
    if scores.failed_with_answer is not None and scores.failed_with_answer.n:
        failed = scores.failed_with_answer
        table.add_row(
            "failed after answering (graded on it)", f"{failed.n} ({failed.n_correct} right)"
        )
    table.add_row("timeouts", str(scores.n_timeouts))
    table.add_row("errors", ", ".join(f"{k}={v}" for k, v in scores.n_errors.items()) or "0")
    totals = scores.usage.totals
    tokens = f"{totals.total_tokens:,}" + (" (estimated)" if totals.estimated else "")
    table.add_row("tokens (all rows)", tokens)
    table.add_row("cost USD", "-" if totals.cost_usd is None else f"{totals.cost_usd:.4f}")
    table.add_row(
        "duration s (mean / median)",
        f"{scores.duration_s['mean']:.1f} / {scores.duration_s['median']:.1f}",
    )
    if scores.attempts["n_attempts"] > 1:
        for attempt, metrics in scores.attempts["per_attempt"].items():
            table.add_row(f"attempt {attempt} accuracy_strict", _fmt(metrics["accuracy_strict"]))
    console.print(table)
    for group_field, groups in scores.by_group.items():
        if len(groups) > 12:
            console.print(f"by {group_field}: {len(groups)} groups (see scores.json)")
            continue
        group_table = Table(title=f"by {group_field}")
        group_table.add_column(group_field)
        keys = list(next(iter(groups.values())).keys())
        for key in keys:
            group_table.add_column(key, justify="right")
        for name, metrics in groups.items():
            group_table.add_row(name, *(_fmt(metrics[k]) for k in keys))
        console.print(group_table)
    if scores.upstream_view is not None:
        view = scores.upstream_view
        view_table = Table(title=f"{view['label']}: {view['note']}")
        view_table.add_column("upstream's key")
        view_table.add_column("value", justify="right")
        for key, value in view.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                view_table.add_row(key, _fmt(value))
        console.print(view_table)
    for warning in scores.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    console.print(f"wrote {out}")

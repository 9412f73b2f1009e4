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
- the upstream-comparable view (``upstream_view``, :mod:`.upstream_view`): upstream's
  matching, keys and denominator beside the official numbers, for the suites upstream has;
- per-attempt metrics and their mean for repeated runs, breakdowns by group, usage,
  cost and duration, and the readable summary table.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_json
from rich.console import Console
from rich.table import Table

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records import upstream
from agent_benchmarks.records.schema import (
    INFRA_STATUSES,
    FailedWithAnswer,
    Manifest,
    PredictionRow,
    Scores,
    TaskScore,
    Usage,
    UsageSummary,
)
from agent_benchmarks.records.storage import (
    PredictionsFile,
    PredictionsStream,
    current_task_id,
    write_json_atomic,
)
from agent_benchmarks.scoring.grades import Grade, Grader, mean
from agent_benchmarks.scoring.upstream_view import UpstreamGrade, upstream_view
from agent_benchmarks.spec.datasets import sha256_file

# --- choosing the final rows ----------------------------------------------------------------


@dataclass
class FinalRows:
    rows: list[PredictionRow]
    superseded: int  # infrastructure failures a resume retried


def final_rows(rows: Iterable[Any], path: Path) -> FinalRows:
    """The last row of each (task, attempt), in the order attempts first appear; ``rows``
    may be any objects with ``id``, ``attempt`` and ``status`` (reports pass slim rows)."""
    latest: dict[tuple[str, int], Any] = {}
    superseded = 0
    for row in rows:
        key = (row.id, row.attempt)
        earlier = latest.get(key)
        if earlier is not None:
            refuse_duplicate(path, row.id, row.attempt, earlier.status)
            superseded += 1
        latest[key] = row  # a retry keeps the place of the attempt it replaces
    return FinalRows(rows=list(latest.values()), superseded=superseded)


def refuse_duplicate(path: Path, task_id: str, attempt: int, earlier_status: str) -> None:
    """A later row for an attempt replaces an earlier one only if that one was an
    infrastructure failure (a resume retried it); anything else is a duplicate."""
    if earlier_status not in INFRA_STATUSES:
        raise InputError(
            f"{path}: duplicate rows for task {task_id!r} attempt {attempt}: a row with "
            f"status {earlier_status!r} is followed by another; a run writes one final "
            "row per attempt (only timeouts and errors are retried)"
        )


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


def import_provenance(
    loaded: PredictionsFile | PredictionsStream, run_dir: Path
) -> dict[str, Any] | None:
    """scores.json's provenance for a predictions file upstream's harness wrote, else None."""
    if not loaded.imported:
        return None
    return upstream.provenance(upstream.read_upstream_manifest(run_dir))


def import_warning(loaded: PredictionsFile | PredictionsStream) -> str:
    return (
        f"{loaded.n_imported} of {loaded.n_rows} row(s) were written by upstream's harness "
        f"({upstream.UPSTREAM_REPO}) and converted on read; denominator: "
        f"{upstream.DENOMINATOR_NOTE}; see provenance.not_recorded for what they lack"
    )


# Rows graded together: enough for a judge to keep its workers busy, and few enough bytes
# (rows with upstream-size traces run to megabytes) that memory stays bounded.
_BATCH_ROWS = 2000
_BATCH_BYTES = 64 << 20


# Batches handed to the grading process and not yet applied: enough to keep it busy while
# the next batch is read, few enough that memory holds at most this many batches' rows.
_IN_FLIGHT = 2


@dataclass(frozen=True, slots=True)
class _Answer:
    """What an ``answers_only`` grader reads of a row: all the grading process is sent."""

    prediction: str | None
    gold: str | None


_PROCESS_GRADER: Grader | None = None  # the grader, in the grading process


def _keep_grader(grader: Grader) -> None:
    global _PROCESS_GRADER
    _PROCESS_GRADER = grader


# A grade as it crosses between the processes: plain values, which pickle fast in C.
_PlainGrade = tuple[float, bool, dict[str, Any], tuple[float, bool, float | None] | None]


def _grade_answers(predictions: list[str | None], golds: list[str | None]) -> list[_PlainGrade]:
    assert _PROCESS_GRADER is not None
    answers = [_Answer(p, g) for p, g in zip(predictions, golds, strict=True)]
    return [
        (
            grade.score,
            grade.correct,
            grade.details,
            None
            if grade.upstream is None
            else (grade.upstream.score, grade.upstream.correct, grade.upstream.score_soft),
        )
        for grade in _PROCESS_GRADER.grade(answers)  # type: ignore[arg-type]
    ]


def _grade_of(plain: _PlainGrade) -> Grade:
    score, correct, details, upstream = plain
    return Grade(score, correct, details, None if upstream is None else UpstreamGrade(*upstream))


class _GradingProcess:
    """A forked process grading batches of answers while the file goes on being read: an
    official scorer in pure Python takes as long as reading and checking the rows, and a
    machine has a second core. Forked, so it starts with the grader's modules loaded
    (spawning would import them again); only from a process with no other thread, which
    fork would leave holding locks no one releases."""

    def __init__(self, grader: Grader):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_keep_grader,
            initargs=(grader,),
        )

    @staticmethod
    def possible(grader: Grader) -> bool:
        return (
            getattr(grader, "answers_only", False)
            and len(os.sched_getaffinity(0)) > 1
            and threading.active_count() == 1
        )

    def submit(self, rows: list[PredictionRow]) -> Future[list[_PlainGrade]]:
        return self.pool.submit(
            _grade_answers, [r.prediction for r in rows], [r.gold for r in rows]
        )

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


@dataclass(slots=True)
class _Final:
    """The latest row of one (task, attempt) while the file is read, and then its entry."""

    status: str
    entry: TaskScore | None = None
    upstream: UpstreamGrade | None = None
    # A failure that printed an answer: graded once the whole file is read, if no retry
    # came after it (a judge call is not spent on a row a resume replaced). The row itself
    # for rows given in memory, else where to read it again.
    deferred: PredictionRow | tuple[int, int] | None = None

    @property
    def settled(self) -> bool:
        """Completed (ok or empty): a later row for this attempt is a duplicate."""
        return self.status not in INFRA_STATUSES


class WebTotals:
    """A recorded-web run's requests and misses, over every row (retried rows' too: their
    requests went through the proxy as well), from each row's ``details.web``."""

    def __init__(self) -> None:
        self.modes: set[str] = set()
        self.n_rows = 0
        self.n_requests = 0
        self.n_misses = 0
        self.rows_with_misses = 0

    def add(self, web: Any) -> None:
        if not isinstance(web, dict):
            return
        self.modes.add(str(web.get("mode")))
        self.n_rows += 1
        self.n_requests += int(web.get("n_requests") or 0)
        misses = int(web.get("n_misses") or 0)
        self.n_misses += misses
        self.rows_with_misses += misses > 0

    def summary(self, manifest: Manifest | None) -> dict[str, Any] | None:
        """``scores.json``'s ``web``: None for a run on the live web."""
        settings = manifest.settings.get("web") if manifest is not None else None
        mode = settings.get("mode") if isinstance(settings, dict) else None
        if not self.n_rows and mode in (None, "live"):
            return None
        summary: dict[str, Any] = {
            "mode": mode or "/".join(sorted(self.modes)),
            "n_rows": self.n_rows,
            "n_requests": self.n_requests,
        }
        if "replay" in (mode, *self.modes):
            summary |= {
                "n_misses": self.n_misses,
                # Misses over every request the stack made: what the replay could not serve.
                "miss_rate": round(self.n_misses / self.n_requests, 6) if self.n_requests else 0.0,
                "rows_with_misses": self.rows_with_misses,
            }
        if isinstance(settings, dict) and "archive" in settings:
            summary["archive"] = settings["archive"]
        return summary


class _Scorecard:
    """Reads rows once, in file order, keeping per (task, attempt) only its entry."""

    def __init__(self, path: Path, grader: Grader, grading: bool = True):
        self.path = path
        self.grader = grader
        self.grading = grading  # False: only check the rows (see pays_per_row)
        self.finals: dict[tuple[str, int], _Final] = {}
        self.superseded = 0
        self.n_rows = 0
        self.n_estimated = 0
        self.tokens = [0, 0, 0, 0, 0]  # input, cache read, cache write, output, turns
        self.costs: list[float] = []
        self.batch: list[tuple[_Final, PredictionRow]] = []
        self.batch_bytes = 0
        # Batches go to a grading process, when the grader allows it; the rows held, in
        # flight and gathering, are then bounded by _BATCH_BYTES all together.
        self.apart = grading and _GradingProcess.possible(grader)
        self.batch_bytes_max = _BATCH_BYTES // (_IN_FLIGHT + 1) if self.apart else _BATCH_BYTES
        self.process: _GradingProcess | None = None
        self.in_flight: deque[tuple[list[tuple[_Final, PredictionRow]], Future[list[_PlainGrade]]]]
        self.in_flight = deque()
        self.n_graded = 0
        self.n_graded_failed = 0
        self.web = WebTotals()

    def add(self, row: PredictionRow, size: int = 0, where: tuple[int, int] | None = None):
        self.n_rows += 1
        if row.suite != self.grader.suite:
            raise InputError(
                f"{self.path}: row {self.n_rows} (task {row.id!r}) is a {row.suite} row; "
                f"this is the {self.grader.suite} grader"
            )
        if self.grader.needs_gold and row.gold is None:
            raise InputError(
                f"{self.path}: row {self.n_rows} (task {row.id!r}) has no gold answer; "
                f"{self.grader.suite} is graded against gold (was it run on a test split?)"
            )
        usage = row.usage
        tokens = self.tokens
        tokens[0] += usage.input_tokens
        tokens[1] += usage.cache_read_tokens
        tokens[2] += usage.cache_write_tokens
        tokens[3] += usage.output_tokens
        tokens[4] += usage.turns
        if usage.cost_usd is not None:
            self.costs.append(usage.cost_usd)
        self.n_estimated += usage.estimated
        if "web" in row.details:
            self.web.add(row.details["web"])
        key = (row.id, row.attempt)
        earlier = self.finals.get(key)
        if earlier is not None:
            refuse_duplicate(self.path, row.id, row.attempt, earlier.status)
            self.superseded += 1
        final = _Final(row.status)
        self.finals[key] = final  # a retry keeps the place of the attempt it replaces
        if not self.grading:
            return
        if final.settled:
            self.batch.append((final, row))
            self.batch_bytes += size
            if len(self.batch) >= _BATCH_ROWS or self.batch_bytes >= self.batch_bytes_max:
                self.grade_batch(more_to_come=True)
        elif failed_with_answer(row.status, row.prediction):
            final.deferred = row if where is None else where
        else:  # a timeout or error that printed nothing: nothing to grade
            _graded(final, row, Grade(0.0, False, {"not_graded": row.status}))

    def grade_batch(self, more_to_come: bool = False) -> None:
        """Grade the rows gathered so far: in the grading process once there is one (it
        starts at the first full batch, so a file of one batch is graded here), else here.
        With no more batches to come, every batch in flight is applied before returning."""
        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if batch and more_to_come and self.apart and self.process is None:
            self.process = _GradingProcess(self.grader)
        if self.process is not None:
            if batch:
                self.in_flight.append((batch, self.process.submit([row for _, row in batch])))
            while len(self.in_flight) > (_IN_FLIGHT if more_to_come else 0):
                self._apply(*self.in_flight.popleft())
        elif batch:
            self._apply(batch, self.grader.grade([row for _, row in batch]))

    def _apply(
        self,
        batch: list[tuple[_Final, PredictionRow]],
        grades: list[Grade] | Future[list[_PlainGrade]],
    ) -> None:
        if isinstance(grades, Future):
            # The grader's own exception, if it raised.
            grades = [_grade_of(plain) for plain in grades.result()]
        if len(grades) != len(batch):
            raise ValueError(
                f"{self.grader.suite} grader gave {len(grades)} grades for {len(batch)}"
            )
        for (final, row), grade in zip(batch, grades, strict=True):
            _graded(final, row, grade)
            self.n_graded_failed += row.status in INFRA_STATUSES
        self.n_graded += len(batch)
        gc.freeze()  # see _graded_batches_frozen

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
            self.process = None

    def grade_deferred(self, stream: PredictionsStream | None) -> None:
        """Grade the failures that printed an answer and were not retried."""
        self.grade_batch()
        for key, final in self.finals.items():
            if final.deferred is None:
                continue
            where, final.deferred = final.deferred, None
            row = where if isinstance(where, PredictionRow) else stream.row_at(*where, key)
            self.batch.append((final, row))
            if len(self.batch) >= _BATCH_ROWS:
                self.grade_batch()
        self.grade_batch()

    def usage_totals(self) -> Usage:
        tokens = self.tokens
        return Usage(
            input_tokens=tokens[0],
            cache_read_tokens=tokens[1],
            cache_write_tokens=tokens[2],
            output_tokens=tokens[3],
            turns=tokens[4],
            cost_usd=round(sum(self.costs), 6) if self.costs else None,
            estimated=self.n_estimated > 0,
        )


def _graded(final: _Final, row: PredictionRow, grade: Grade) -> None:
    """Give the attempt its entry in scores.json, and its grade under upstream's matching."""
    details = grade.details
    if failed_with_answer(row.status, row.prediction):
        details = {**details, "answer_before_failure": row.status}
    if row.details.get("contaminated"):
        details = {**details, "contaminated": True}
    if row.details.get("n_refused_calls"):
        details = {**details, "n_refused_calls": row.details["n_refused_calls"]}
    # Built without validation: every value comes from a validated row, or is made a float
    # and a bool here (as validating would); pydantic writes the keys in this order.
    # pydantic keeps, per instance, the set of fields it was given (over 700 bytes, as much
    # as the rest of an entry): every field of an entry and of its usage is given, so they
    # share one set each (nothing reads it).
    values = {
        **row.suite_fields(),  # first, where pydantic puts the inherited fields
        "id": row.id,
        "attempt": row.attempt,
        "score": float(grade.score),
        "correct": bool(grade.correct),
        "status": row.status,
        "error_class": row.error_class,
        "prediction": row.prediction,
        "gold": row.gold,
        "duration_s": row.duration_s,
        "usage": row.usage,
        "details": details,
    }
    entry = TaskScore.__new__(TaskScore)
    object.__setattr__(entry, "__dict__", values)
    object.__setattr__(entry, "__pydantic_fields_set__", _ENTRY_FIELDS)
    object.__setattr__(entry, "__pydantic_extra__", None)
    object.__setattr__(entry, "__pydantic_private__", None)
    object.__setattr__(entry.usage, "__pydantic_fields_set__", _USAGE_FIELDS)
    final.entry = entry
    final.upstream = grade.upstream or UpstreamGrade(score=grade.score, correct=grade.correct)


_ENTRY_FIELDS = set(TaskScore.model_fields)
_USAGE_FIELDS = set(Usage.model_fields)


def build_scores(
    predictions_path: Path,
    rows: Iterable[PredictionRow] | PredictionsStream,
    manifest: Manifest | None,
    grader: Grader,
    warnings: list[str],
    progress: Callable[[str], None] | None = None,
    provenance: dict[str, Any] | None = None,
) -> Scores:
    """scores.json's record from the rows of ``predictions_path``, in file order.

    Given a :class:`PredictionsStream`, the file is read once and memory holds one entry per
    attempt, not the rows: rows are graded in batches as they are read.
    """
    with _graded_batches_frozen():
        return _build_scores(
            predictions_path, rows, manifest, grader, warnings, progress, provenance
        )


@contextmanager
def _graded_batches_frozen() -> Iterator[None]:
    """Grading keeps a few objects per attempt, and the cyclic collector would walk all of
    them again at every full collection (a third of the grading time). Each graded batch is
    frozen (:func:`gc.freeze`: left out of collections; freed as usual when let go), so the
    collector still reclaims what a batch's work leaves in cycles (a judge's HTTP calls)."""
    frozen_before = gc.get_freeze_count()
    gc.freeze()  # what exists already (modules, a caller's entries) is not walked either
    try:
        yield
    finally:
        if not frozen_before:  # a caller's own freeze is left as it was
            gc.unfreeze()


def _build_scores(
    predictions_path: Path,
    rows: Iterable[PredictionRow] | PredictionsStream,
    manifest: Manifest | None,
    grader: Grader,
    warnings: list[str],
    progress: Callable[[str], None] | None,
    provenance: dict[str, Any] | None,
) -> Scores:
    read = _read_rows(predictions_path, rows, manifest, grader, progress)
    entries = read.entries
    if manifest is not None and manifest.task_ids:
        _add_missing_rows(entries, manifest, warnings)
    entries.sort(key=lambda e: (e.attempt, e.id))
    by_attempt: dict[int, list[TaskScore]] = defaultdict(list)
    for entry in entries:
        by_attempt[entry.attempt].append(entry)
    per_attempt = {str(a): _group_metrics(es, grader) for a, es in sorted(by_attempt.items())}
    by_group = _by_group(entries, grader)
    return _scores_record(
        predictions_path, manifest, grader, warnings, provenance, read, per_attempt, by_group
    )


@dataclass(slots=True)
class _ReadRows:
    """What one read of a predictions file leaves: each attempt's entry (graded), and what
    the file holds beyond them, retried rows included."""

    entries: list[TaskScore]
    # Upstream's view and the durations are of the rows in the file: taken before the
    # selected attempts without a row join ``entries``.
    upstream_view: dict[str, Any] | None
    duration_s: dict[str, float]
    sha256: str
    n_rows: int
    n_superseded: int
    usage: Usage  # retried attempts cost money too
    n_estimated: int
    web: dict[str, Any] | None


def _read_rows(
    predictions_path: Path,
    rows: Iterable[PredictionRow] | PredictionsStream,
    manifest: Manifest | None,
    grader: Grader,
    progress: Callable[[str], None] | None,
) -> _ReadRows:
    """Read the rows once, in file order, grading them in batches as they come; memory
    keeps one entry per attempt, not the rows."""
    stream = rows if isinstance(rows, PredictionsStream) else None
    if stream is not None and getattr(grader, "pays_per_row", False):
        _check_rows(predictions_path, grader, stream)
    card = _Scorecard(predictions_path, grader)
    try:
        if stream is not None:
            for read in stream.reads():
                card.add(read.row, read.size, (read.offset, read.line_number))
            sha256 = stream.sha256
        else:
            for row in rows:
                card.add(row)
            sha256 = sha256_file(predictions_path)
        if card.n_rows == 0:
            raise InputError(f"{predictions_path}: no prediction rows to grade")
        card.grade_deferred(stream)
    finally:
        card.close()
    if progress:
        also = card.n_graded_failed
        also_text = f", and {also} that failed after printing an answer" if also else ""
        progress(f"graded {card.n_graded - also} completed attempts{also_text}")
    entries: list[TaskScore] = [final.entry for final in card.finals.values()]
    durations = [entry.duration_s for entry in entries]
    return _ReadRows(
        entries=entries,
        # Upstream's denominator is the rows in the file: taken before missing rows are added.
        upstream_view=(
            None
            if grader.upstream is None
            else upstream_view(
                grader.upstream, [(final.entry, final.upstream) for final in card.finals.values()]
            )
        ),
        duration_s={
            "mean": round(mean(durations), 3),
            "median": round(statistics.median(durations), 3) if durations else 0.0,
            "total": round(sum(durations), 3),
        },
        sha256=sha256,
        n_rows=card.n_rows,
        n_superseded=card.superseded,
        usage=card.usage_totals(),
        n_estimated=card.n_estimated,
        web=card.web.summary(manifest),
    )


def _check_rows(predictions_path: Path, grader: Grader, stream: PredictionsStream) -> None:
    """Check every row before grading any: grading starts before the file is read to its
    end, and a grader that costs money is not paid for rows of a file refused later (a bad
    line, a duplicate, no gold)."""
    checking = _Scorecard(predictions_path, grader, grading=False)
    for read in stream.reads():
        checking.add(read.row)


def _add_missing_rows(entries: list[TaskScore], manifest: Manifest, warnings: list[str]) -> None:
    """Every selected task belongs in the denominator, with or without a row: each selected
    attempt without one is added to ``entries``, counted wrong."""
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


def _group_metrics(entries: list[TaskScore], grader: Grader) -> dict[str, Any]:
    """The metrics of one attempt's entries, or of one group's."""
    return {
        "n": len(entries),
        "accuracy_strict": strict_accuracy(entries),
        **grader.metrics(entries),
    }


def _by_group(entries: list[TaskScore], grader: Grader) -> dict[str, dict[str, Any]]:
    """scores.json's ``by_group``: the metrics per value of each of the grader's group
    fields (entries without the field left out)."""
    by_group: dict[str, dict[str, Any]] = {}
    for group_field in grader.group_fields:
        groups: dict[str, list[TaskScore]] = defaultdict(list)
        for entry in entries:
            value = getattr(entry, group_field)
            if value is not None:
                groups[str(value)].append(entry)
        if groups:
            by_group[group_field] = {
                key: _group_metrics(es, grader) for key, es in sorted(groups.items())
            }
    return by_group


def _scores_record(
    predictions_path: Path,
    manifest: Manifest | None,
    grader: Grader,
    warnings: list[str],
    provenance: dict[str, Any] | None,
    read: _ReadRows,
    per_attempt: dict[str, dict[str, Any]],
    by_group: dict[str, dict[str, Any]],
) -> Scores:
    """scores.json's record, once ``read.entries`` holds every selected attempt's entry."""
    entries = read.entries
    overall = _mean_of_metrics(list(per_attempt.values()))
    overall.pop("n", None)
    accuracy_strict = overall.pop("accuracy_strict")
    completed_entries = [e for e in entries if e.status not in INFRA_STATUSES]
    failed = [e for e in entries if failed_with_answer(e.status, e.prediction)]
    n_tasks = len({e.id for e in entries})
    errors = Counter(e.error_class or "unknown" for e in entries if e.status == "error")
    return Scores(
        manifest=manifest,
        suite=grader.suite,  # type: ignore[arg-type]
        predictions_path=str(predictions_path),
        predictions_sha256=read.sha256,
        grader=grader.info(),
        n_tasks=n_tasks,
        n_rows=read.n_rows,
        accuracy_strict=accuracy_strict,
        metrics={
            **overall,
            "n_superseded_rows": read.n_superseded,
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
        upstream_view=read.upstream_view,
        attempts={
            "n_attempts": len(per_attempt),
            "per_attempt": per_attempt,
            "mean_accuracy_strict": accuracy_strict,
        },
        usage=UsageSummary(
            totals=read.usage,
            per_task_mean=_mean_usage(read.usage, n_tasks),
            n_estimated_rows=read.n_estimated,
        ),
        duration_s=read.duration_s,
        warnings=warnings,
        provenance=provenance,
        web=read.web,
        per_task=entries,
    )


# --- writing scores.json ----------------------------------------------------------------------

_ENTRIES = TypeAdapter(list[TaskScore])
_SLICE = 1000  # per-attempt entries serialised at a time


def scores_json(scores: Scores, slice_size: int = _SLICE) -> Iterator[str]:
    """scores.json as ``scores.model_dump_json(indent=2)`` writes it, plus a final newline,
    in pieces: the per-attempt lists (``per_task`` and the upstream view's) are serialised a
    slice at a time, so the document is never one string as big as the file."""
    view = scores.upstream_view
    lines = view.get("per_task", []) if view is not None else []
    shell = scores.model_copy(
        update={
            "per_task": [],
            "upstream_view": {**view, "per_task": []} if view is not None else None,
        }
    )
    text = shell.model_dump_json(indent=2)
    # The view's list sits at depth 2 of the document, per_task at depth 1, the last key.
    view_mark = '\n    "per_task": []'
    if view is not None and lines:
        before, after = text.split(view_mark, 1)
        yield before + '\n    "per_task": ['
        yield from _list_items(lines, _view_lines_json, slice_size, indent=6)
        text = "\n    ]" + after
    head, tail = text.rsplit('\n  "per_task": []', 1)
    if not scores.per_task:
        yield text + "\n"
        return
    yield head + '\n  "per_task": ['
    yield from _list_items(scores.per_task, _ENTRIES.dump_json, slice_size, indent=4)
    yield "\n  ]" + tail + "\n"


def _view_lines_json(lines: Sequence[dict[str, Any]], indent: int) -> bytes:
    # As model_dump_json writes a dict field: NaN and infinities as null.
    return to_json(lines, indent=indent, inf_nan_mode="null")


def _list_items(
    items: Sequence[Any], dump: Callable[..., bytes], slice_size: int, indent: int
) -> Iterator[str]:
    """The items of a JSON list as pydantic writes them ``indent`` spaces deep, a slice at a
    time: each slice is dumped as a list of its own and its brackets taken off."""
    pad = " " * (indent - 2)
    for start in range(0, len(items), slice_size):
        chunk = dump(items[start : start + slice_size], indent=2).decode("utf-8")
        body = chunk[1:-2]  # "[" ... "\n]": keeps the newline before each item
        yield ("," if start else "") + body.replace("\n", "\n" + pad)


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
    run_dir = predictions_path.parent
    manifest = read_manifest(run_dir)
    if manifest is not None and manifest.suite != grader.suite:
        raise InputError(
            f"{run_dir / 'manifest.json'}: a {manifest.suite} run; this is the "
            f"{grader.suite} grader"
        )
    stream = PredictionsStream(predictions_path, suite=grader.suite)  # type: ignore[arg-type]
    grading_warnings: list[str] = []
    scores = build_scores(
        predictions_path,
        stream,
        manifest,
        grader,
        grading_warnings,
        progress=lambda msg: console.print(msg),
    )
    # What reading the whole file told (the torn tail, whose rows these are), and what the
    # grader has to say now that every row is graded.
    grader_warnings = getattr(grader, "warnings", None)
    warnings = stream.warnings() + (grader_warnings() if grader_warnings is not None else [])
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    provenance = import_provenance(stream, run_dir)
    if provenance is not None:
        warnings.append(import_warning(stream))
        scores.provenance = provenance
    elif manifest is None:
        warnings.append(
            "no manifest.json beside the predictions: provenance unknown, and tasks without a "
            "row cannot be counted"
        )
    scores.warnings = warnings + grading_warnings
    out.parent.mkdir(parents=True, exist_ok=True)
    with _graded_batches_frozen():
        write_json_atomic(out, scores_json(scores))
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


def grade_and_report(
    grader: Grader, predictions: Path, out: Path | None = None, as_json: bool = False
) -> Scores:
    """Grade, write scores.json, and report: the tables on stdout, or with ``as_json`` the
    summary as JSON on stdout and the rest on stderr. What ``<suite>-grade`` does, and what
    a run ends with."""
    scores, written = grade_file(predictions, grader, out=out)
    if as_json:
        stderr = Console(stderr=True, soft_wrap=True)
        for warning in scores.warnings:
            stderr.print(f"[yellow]warning:[/] {warning}")
        stderr.print(f"wrote {written}")
        print(summary_json(scores))
        return scores
    console = Console(soft_wrap=True)
    print_summary(scores, written, console)
    print_details = getattr(grader, "print_details", None)
    if print_details is not None:
        print_details(scores, console)
    return scores


def summary_json(scores: Scores) -> str:
    """What ``--json`` prints: the whole scores.json record but its per-attempt lists (the
    official one and the upstream view's)."""
    return scores.model_dump_json(
        indent=2, exclude={"per_task": True, "upstream_view": {"per_task"}}
    )

"""Read a graded run folder into typed records, grading it first when it has no scores.

A run folder holds ``predictions.jsonl`` and ``manifest.json``, and ``scores.json`` once
graded. Where ``scores.json`` is missing, the suite's own grader grades the predictions
and writes it (the only file this package ever writes into a run folder). A ``scores.json``
whose predictions hash no longer matches the predictions is stale: it is graded again in
memory, and left as it is on disk. WebBench is graded by an LLM judge that costs money
and needs a choice of judge, so a WebBench run without current scores is refused with the
command that grades it.

A folder written by upstream's harness (lightpanda-io/agent-benchmarks) loads too: its rows
are converted as they are read (never rewritten), its manifest is kept as it was
(``upstream_manifest``), and the run is marked ``imported_from``, which keeps it out of
headline claims. Upstream's own scores.json is never read nor overwritten: ours sits
beside it (:func:`agent_benchmarks.records.upstream.scores_path`).

A run is read in one score view (:func:`in_view`): the official scorers' grades, or the
upstream-comparable view's (scores.json's ``upstream_view``), whose entries are the rows in
the file graded with upstream's matching. A scores.json written before that view existed is
graded again in memory where that is free (GAIA, AssistantBench), and refused with the
command that refreshes it for WebBench; localweb has no upstream view (upstream's harness
has no such suite).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records import upstream
from agent_benchmarks.records.schema import Manifest, PredictionRow, Scores, TaskScore
from agent_benchmarks.records.storage import PredictionsStream, current_task_id
from agent_benchmarks.report.rows import RowSummary, summarise_row
from agent_benchmarks.report.schema import ScoreView
from agent_benchmarks.scoring.graders import free_grader
from agent_benchmarks.scoring.scorecard import (
    Grader,
    build_scores,
    final_rows,
    grade_file,
    import_provenance,
    import_warning,
    read_manifest,
)
from agent_benchmarks.spec.suites import suite_names

RUN_FILES = ("predictions.jsonl", "manifest.json", "scores.json", upstream.IMPORTED_SCORES_NAME)


class LoadedRun(BaseModel):
    """One run folder: its manifest, every row, the final row per attempt, and the grades.

    Rows are kept as reports read them (:class:`~agent_benchmarks.report.rows.RowSummary`),
    not whole: memory follows the number of rows, not the size of their traces.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    run_dir: Path
    suite: str
    manifest: Manifest | None
    rows: list[RowSummary]  # every row, retried ones included: their tokens were spent
    final: list[RowSummary]  # the last row of each (task, attempt)
    scores: Scores | None  # None only when loaded with grade=False and not graded
    graded_on_the_fly: bool = False
    warnings: list[str] = []
    # "upstream" when the rows were written by upstream's harness and converted on read.
    imported_from: str | None = None
    upstream_manifest: dict[str, Any] | None = None  # its manifest.json, as written
    view: ScoreView = "official"  # whose grades ``entries`` holds (see in_view)

    @cached_property
    def final_by_key(self) -> dict[tuple[str, int], RowSummary]:
        return {(r.id, r.attempt): r for r in self.final}

    def read_row(self, row: RowSummary) -> PredictionRow:
        """The whole row (tool outputs left out) ``row`` summarises, read again from its place
        in predictions.jsonl: for the reports that show every call of an attempt."""
        predictions = self.run_dir / "predictions.jsonl"
        suite: Any = self.suite
        stream = PredictionsStream(predictions, suite, tool_outputs=False)
        return stream.row_at(row.offset, row.line_number, (row.id, row.attempt))

    @property
    def entries(self) -> list[TaskScore]:
        return self.scores.per_task if self.scores is not None else []

    @property
    def task_ids(self) -> list[str]:
        """The selection: the manifest's, else the tasks that have rows."""
        if self.manifest is not None and self.manifest.task_ids:
            return list(self.manifest.task_ids)
        return sorted({r.id for r in self.rows})


def _read_scores(path: Path) -> Scores:
    try:
        return _with_current_ids(Scores.model_validate_json(path.read_bytes()))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(f"{path}: invalid scores file: field {where!r}: {first['msg']}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read scores file: {exc.strerror}") from None


def _with_current_ids(scores: Scores) -> Scores:
    """Task ids as the rows and manifests are read today (:func:`current_task_id`): a
    WebBench scores.json written when ids were bare ``N`` names the same tasks as its rows."""
    suite = scores.suite
    for entry in scores.per_task:
        entry.id = current_task_id(suite, entry.id)
    if scores.manifest is not None:
        scores.manifest.task_ids = [current_task_id(suite, i) for i in scores.manifest.task_ids]
    if scores.failed_with_answer is not None:
        scores.failed_with_answer.ids = [
            current_task_id(suite, i) for i in scores.failed_with_answer.ids
        ]
    for line in (scores.upstream_view or {}).get("per_task", []):
        line["id"] = current_task_id(suite, str(line["id"]))
    return scores


def _suite_hint(run_dir: Path, upstream_manifest: dict[str, Any] | None) -> Any:
    """Which suite upstream rows belong to when their fields do not say: the script named in
    upstream's manifest, else the suite of scores this harness already wrote for them."""
    hint = upstream.suite_from_manifest(upstream_manifest)
    scores_path = upstream.scores_path(run_dir)
    if hint is None and scores_path.is_file():
        try:
            hint = json.loads(scores_path.read_bytes()).get("suite")
        except (OSError, ValueError, AttributeError):
            hint = None
    return hint if hint in upstream.UPSTREAM_SUITES else None


def load_run(
    path: Path,
    *,
    grade: bool = True,
    console: Console | None = None,
    view: ScoreView = "official",
    write_scores: bool = True,
) -> LoadedRun:
    """Load a run folder; with ``grade``, make sure it has current grades (see the module),
    and read them in ``view``.

    Without ``grade`` (the leak audit, which needs only traces) a run whose grades are
    missing or stale and that cannot be graded for free comes back with ``scores`` None.
    Without ``write_scores`` (the run browser, which may read a run still being written)
    a missing scores.json is graded in memory, as a stale one is, and nothing is written.
    """
    folder = _read_run_folder(Path(path))
    grader = free_grader(folder.suite, folder.predictions)
    scores, on_the_fly = _current_scores(folder, grader, console, write_scores)
    if scores is None and grade:
        if folder.suite not in suite_names():
            raise InputError(
                f"{folder.run_dir}: no current scores.json, and no suite {folder.suite!r} is "
                "registered here to grade it (install the package that registers it, or put "
                "it on PYTHONPATH)"
            )
        raise InputError(
            f"{folder.run_dir}: no current scores.json, and {folder.suite} is graded by an LLM "
            f"judge that costs money and needs a judge model: grade it first "
            f"({folder.regrade_hint})"
        )
    if view == "upstream" and scores is not None and scores.upstream_view is None:
        scores = _graded_with_upstream_view(folder, grader)
        on_the_fly = True
    imported = folder.stream.imported
    loaded_run = LoadedRun(
        run_dir=folder.run_dir,
        suite=folder.suite,
        manifest=folder.manifest,
        rows=folder.rows,
        final=folder.final,
        scores=scores,
        graded_on_the_fly=on_the_fly,
        warnings=folder.warnings,
        imported_from=upstream.UPSTREAM if imported else None,
        upstream_manifest=folder.upstream_manifest if imported else None,
    )
    return in_view(loaded_run, view)


@dataclass
class _RunFolder:
    """What :func:`load_run` read of a run folder before it looks at its grades."""

    run_dir: Path
    predictions: Path
    stream: PredictionsStream  # the pass that read the rows: its hash and provenance
    suite: str
    manifest: Manifest | None
    provenance: dict[str, Any] | None  # an imported run's, for the grades' record
    upstream_manifest: dict[str, Any] | None
    rows: list[RowSummary]
    final: list[RowSummary]
    warnings: list[str]  # the loader's, in the order found; grading adds its own

    @property
    def regrade_hint(self) -> str:
        return f"{self.suite}-grade {self.run_dir}"


def _read_run_folder(run_dir: Path) -> _RunFolder:
    """The folder's rows, suite and manifest; refused when they do not make one run."""
    if not run_dir.exists():
        raise InputError(f"{run_dir}: no such run folder")
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: not a folder (give the run folder, which holds predictions)")
    predictions = run_dir / "predictions.jsonl"
    if not predictions.is_file():
        raise InputError(f"{run_dir}: no predictions.jsonl in it: not a run folder")
    upstream_manifest = upstream.read_upstream_manifest(run_dir)
    # One pass, one row at a time; tool outputs are dropped as read (no report reads them).
    stream = PredictionsStream(
        predictions, suite=_suite_hint(run_dir, upstream_manifest), tool_outputs=False
    )
    rows = [summarise_row(read) for read in stream.reads()]
    warnings = stream.warnings()
    if not rows:
        raise InputError(f"{predictions}: no prediction rows")
    suites = sorted({r.suite for r in rows})
    if len(suites) > 1:
        raise InputError(f"{predictions}: rows of several suites ({', '.join(suites)})")
    suite = suites[0]
    manifest = read_manifest(run_dir)
    provenance = import_provenance(stream, run_dir)
    if provenance is not None:
        warnings.append(import_warning(stream))
    elif manifest is None:
        warnings.append(f"{run_dir}: no manifest.json: provenance and mode unknown")
    elif manifest.suite != suite:
        raise InputError(
            f"{run_dir / 'manifest.json'}: a {manifest.suite} run, but its rows are {suite} rows"
        )
    return _RunFolder(
        run_dir=run_dir,
        predictions=predictions,
        stream=stream,
        suite=suite,
        manifest=manifest,
        provenance=provenance,
        upstream_manifest=upstream_manifest,
        rows=rows,
        final=final_rows(rows, predictions).rows,  # reads id, attempt and status only
        warnings=warnings,
    )


def _current_scores(
    folder: _RunFolder, grader: Grader | None, console: Console | None, write_scores: bool
) -> tuple[Scores | None, bool]:
    """The run's current grades, and whether they were graded now: scores.json when it is
    current, else graded again where that is free (written only when there was none and
    ``write_scores``); None when it cannot be graded for free."""
    scores_path = upstream.scores_path(folder.run_dir)
    if scores_path.exists():
        scores = _read_scores(scores_path)
        stale = _why_stale(scores, folder)
        if stale is None:
            return scores, False
        folder.warnings.append(
            f"{scores_path}: stale ({stale}); graded again in memory, the file is left "
            f"as it is (refresh it: {folder.regrade_hint})"
        )
        if grader is None:
            return None, False
        return _grade_in_memory(folder, grader), True
    if grader is None:
        return None, False
    if not write_scores:
        return _grade_in_memory(folder, grader), True
    console = console or Console(stderr=True, soft_wrap=True)
    console.print(f"{folder.run_dir}: no scores.json; grading it with the {folder.suite} grader")
    scores, _ = grade_file(folder.predictions, grader, console=console)
    return scores, True


def _why_stale(scores: Scores, folder: _RunFolder) -> str | None:
    if scores.predictions_sha256 != folder.stream.sha256:
        return "the predictions changed since it was graded"
    if scores.failed_with_answer is None and any(r.failed_with_answer for r in folder.final):
        # Graded before such attempts were graded on their answer: its numbers are not
        # today's, and must not stand beside today's.
        return "graded before attempts that failed after printing an answer were graded"
    return None


def _graded_with_upstream_view(folder: _RunFolder, grader: Grader | None) -> Scores:
    """Grades with an upstream view, for scores.json written before that view existed:
    graded again in memory where that is free, else refused with the command that does it."""
    scores_path = upstream.scores_path(folder.run_dir)
    suite = folder.suite
    if grader is not None and grader.upstream is None:
        raise InputError(
            f"--view upstream: {folder.run_dir} is a {suite} run, and upstream's harness has "
            f"no {suite} suite, so it has no upstream-comparable view"
        )
    if grader is None:
        raise InputError(
            f"--view upstream: {scores_path} was graded before scores had an upstream "
            f"view; grade it again ({folder.regrade_hint})"
        )
    folder.warnings.append(
        f"{scores_path}: graded before scores had an upstream view; graded again in "
        f"memory, the file is left as it is (refresh it: {folder.regrade_hint})"
    )
    return _grade_in_memory(folder, grader)


def in_view(run: LoadedRun, view: ScoreView) -> LoadedRun:
    """The run with its entries graded in ``view``. The upstream view keeps each final
    row's official entry (status, answer, usage) with upstream's score and verdict, and
    leaves out selected attempts without a row: upstream's denominator is the rows in the
    file."""
    if view == "official" or run.scores is None:
        return run
    comparable = run.scores.upstream_view
    if comparable is None:
        raise ValueError(f"{run.run_dir}: its scores have no upstream view")  # load_run checks
    graded = {(line["id"], line["attempt"]): line for line in comparable["per_task"]}
    entries = [
        entry.model_copy(update={"score": line["score"], "correct": line["correct"]})
        for entry in run.scores.per_task
        if (line := graded.get((entry.id, entry.attempt))) is not None
    ]
    scores = run.scores.model_copy(update={"per_task": entries})
    return run.model_copy(update={"scores": scores, "view": view})


def _grade_in_memory(folder: _RunFolder, grader: Grader) -> Scores:
    """Grade the predictions without writing scores.json. The file is read again, rows whole
    this time (a grader may read tool outputs), one row at a time."""
    suite: Any = folder.suite
    stream = PredictionsStream(folder.predictions, suite)
    # build_scores appends its own warnings; keep them apart from the loader's.
    grading_warnings: list[str] = []
    scores = build_scores(
        folder.predictions,
        stream,
        folder.manifest,
        grader,
        grading_warnings,
        provenance=folder.provenance,
    )
    folder.warnings.extend(grading_warnings)
    return scores


def check_inputs(paths: list[Path], outputs: dict[str, Path | None]) -> None:
    """What can be refused before any run is read or graded: the same folder given twice,
    and an output path that is one of a run's own files (reports never overwrite them)."""
    seen: dict[Path, Path] = {}
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise InputError(f"{path}: given twice (also as {seen[resolved]})")
        seen[resolved] = Path(path)
    for flag, out in outputs.items():
        if out is None:
            continue
        target = out.resolve()
        for run_dir in seen:
            for name in RUN_FILES:
                if target == run_dir / name:
                    raise InputError(f"{flag} {out}: that is {run_dir}'s {name}; choose another")


def load_runs(
    paths: list[Path],
    *,
    grade: bool = True,
    console: Console | None = None,
    view: ScoreView = "official",
) -> list[LoadedRun]:
    check_inputs(paths, {})
    return [load_run(path, grade=grade, console=console, view=view) for path in paths]

"""The comparison as one self-contained HTML file: no script, no font, no network.

Rendered from ``templates/report.html.j2`` over the column model (:mod:`.tables`) the
terminal and Markdown share, with matplotlib's charts inlined as SVG (:mod:`.charts`) and a
heat map table of per-task success. Below them, per task, each stack's attempts: the
answer, the grade and the tool calls in order (latency, page URL, HTTP status, error).
Gold answers are left out on purpose: a report may be shared, and benchmark answers must
not travel with it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.report import charts, fmt, tables
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.schema import ComparisonReport, SuiteComparison, TaskCell
from agent_benchmarks.report.templating import stream

TITLE = "agent-benchmarks comparison"
# Where an attempt's own page is (the run browser's), given its run folder and entry.
AttemptHref = Callable[[LoadedRun, TaskScore], str | None]


@dataclass
class AttemptShown:
    entry: TaskScore
    row: PredictionRow | None
    href: str | None = None


@dataclass
class StackAttempts:
    n: int
    key: str
    attempts: list[AttemptShown] = field(default_factory=list)


@dataclass
class TaskTraces:
    task_id: str
    marks: str
    stacks: list[StackAttempts]


@dataclass
class GroupPage:
    """What the template shows of one suite's comparison."""

    group: SuiteComparison
    runs: dict[str, LoadedRun]
    attempt_href: AttemptHref | None

    def __post_init__(self) -> None:
        g = self.group
        self.banner = fmt.not_results(g)
        self.scoreboard = tables.scoreboard(g)
        self.notes = tables.composite_notes(g) + [
            f"Winner for {w.agent} with {w.model or '?'}: {w.key} "
            f"({w.composite:.3f} over {w.n_candidates} stacks)."
            for w in g.winners
            if w.n_candidates > 1
        ]
        self.matrix = tables.matrix(g)
        self.recovery = tables.recovery(g) if g.recovery else None
        self.charts = charts.group_charts(g, salt=g.suite)
        self.resources = tables.resources(g)
        self.roles = tables.roles(g)
        evidence = []
        if any(row.attempts_per_task_min > 1 for row in g.rows):
            evidence.append(tables.pass_at_k(g))
        if g.paired:
            evidence.append(tables.paired(g))
        evidence += [tables.breakdown(g, i) for i in range(len(g.breakdowns))]
        self.evidence = evidence
        self.latency = tables.latency(g)
        self.tools = tables.tools(g)
        self.leaks = tables.leaks(g)
        self.hits = tables.group_hits(g)

    def traces(self) -> Iterator[TaskTraces]:
        """Per task, each stack's attempts, given up task by task: only one task's rows
        are held (a run's traces run to hundreds of megabytes of HTML)."""
        g = self.group
        by_task = {row.run_dir: _entries_by_task(self.runs[row.run_dir]) for row in g.rows}
        for task in g.tasks:
            marks = " · ".join(
                f"#{i} {fmt.cell(task.cells.get(row.key)).split(' · ')[0]}"
                for i, row in enumerate(g.rows, start=1)
            )
            stacks = []
            for i, row in enumerate(g.rows, start=1):
                entries = sorted(by_task[row.run_dir].get(task.task_id, []), key=_attempt)
                if not entries:
                    continue
                run = self.runs[row.run_dir]
                shown = StackAttempts(i, row.key)
                for entry in entries:
                    href = self.attempt_href(run, entry) if self.attempt_href else None
                    shown.attempts.append(AttemptShown(entry, _final_row(run, entry), href))
                stacks.append(shown)
            yield TaskTraces(task.task_id, marks, stacks)


def _attempt(entry: TaskScore) -> int:
    return entry.attempt


def _final_row(run: LoadedRun, entry: TaskScore) -> PredictionRow | None:
    """The attempt's final row, whole: its trace is shown call by call, more than a loaded
    run keeps, so it is read again from the run's predictions (one row at a time)."""
    summary = run.final_by_key.get((entry.id, entry.attempt))
    return run.read_row(summary) if summary is not None else None


def _entries_by_task(run: LoadedRun) -> dict[str, list[TaskScore]]:
    out: dict[str, list[TaskScore]] = defaultdict(list)
    for entry in run.entries:
        out[entry.id].append(entry)
    return out


def heat(cell: TaskCell) -> str:
    """Red (none solved) through yellow to green (all solved)."""
    hue = 120 * cell.successes / cell.attempts if cell.attempts else 0
    return f"hsl({hue:.0f},70%,80%)"


def html_pieces(
    report: ComparisonReport,
    runs: Sequence[LoadedRun],
    *,
    attempt_href: AttemptHref | None = None,
    title: str = TITLE,
    crumbs: Sequence[tuple[str, str]] = (),
    refresh: int | None = None,
) -> Iterator[str]:
    """The HTML report in pieces, in order, to be written as they come (see traces)."""
    by_dir = {str(run.run_dir): run for run in runs}
    groups = [GroupPage(group, by_dir, attempt_href) for group in report.groups]
    return stream(
        "report.html.j2",
        report=report,
        groups=groups,
        heat=heat,
        title=title,
        crumbs=crumbs,
        refresh=refresh,
    )


def render_html(report: ComparisonReport, runs: Sequence[LoadedRun]) -> str:
    """The HTML report as one string (:func:`html_pieces` joined)."""
    return "".join(html_pieces(report, runs))

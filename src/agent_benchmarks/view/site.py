"""The run browser's pages: every run under a results folder, each run, each attempt.

Pages, by their path under the browser's folder (``view/`` beside the runs, by default):

- ``index.html``: every run in one table (:func:`runs_table`), linking to its page;
- ``runs/<run>/index.html``: a run: its provenance, state, figures and attempts;
- ``runs/<run>/report.html``: the run's comparison report (the report's own template),
  its traces linking to the attempt pages; for runs that have grades (in memory for a run
  still going);
- ``runs/<run>/attempts/<task>.<attempt>.html``: one attempt: the task, the answer, the
  grade, every tool call with its output (long ones cut, the whole a click away), errors,
  the resource figures and the row's provenance.

Every link is relative, so the folder opens from disk with no server; ``--serve`` renders
the same pages on request from the folder as it is at that moment (:mod:`.serve`). The gold
answer is left out, as the report leaves it out: these pages may be shared.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.records.storage import PredictionsStream
from agent_benchmarks.report import fmt
from agent_benchmarks.report.rows import RowSummary
from agent_benchmarks.report.tables import Column, Table
from agent_benchmarks.report.templating import stream
from agent_benchmarks.view.runs import RunSummary

Page = Callable[[], Iterator[str]]
# Seconds between reloads of a live page (--serve, while a run is going).
REFRESH_S = 5


def page_name(task_id: str, attempt: int) -> str:
    """An attempt page's file name: the task id where it is a safe name, else a safe form
    of it with a hash of the id (two ids never share a page)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", task_id)[:80]
    if safe != task_id:
        safe += "-" + hashlib.sha256(task_id.encode()).hexdigest()[:8]
    return f"{safe}.{attempt}.html"


def run_href(summary: RunSummary) -> str:
    """A run's page, from the browser's index."""
    return "runs/" + ("_" if summary.rel == "." else summary.rel) + "/index.html"


def _up(summary: RunSummary, extra: int = 0) -> str:
    """From a run's folder of pages back to the index's."""
    depth = 1 + (1 if summary.rel == "." else summary.rel.count("/") + 1) + extra
    return "../" * depth


# --- the runs -----------------------------------------------------------------------------------


def _success(s: RunSummary) -> str:
    if not s.is_graded:
        return "not graded"
    n = len(s.graded)
    return f"{s.successes}/{n} = {fmt.pct(s.successes / n)}" if n else fmt.DASH


def _success_short(s: RunSummary) -> str:
    return f"{s.successes}/{len(s.graded)}" if s.is_graded else "–"


def _tokens(s: RunSummary, short: bool = False) -> str:
    tokens = s.tokens
    if tokens is None:
        return fmt.DASH
    return (fmt.tokens_per_success_short if short else fmt.tokens_per_success)(tokens)


def _cost(s: RunSummary, short: bool = False) -> str:
    cost = s.cost
    if cost is None:
        return fmt.DASH
    return fmt.cost_short(cost.per_success_usd, cost) if short else fmt.cost_per_success(cost)


def _stack(s: RunSummary) -> str:
    stack = s.stack
    if stack is None:
        return s.manifest.backend if s.manifest is not None else "?"
    surface = f" · {stack.surface} surface" if stack.surface else ""
    search = f" · search {stack.search}" if stack.search != "native" else ""
    return f"{stack.backend}{surface}{search} · {stack.engine}"


def _model(s: RunSummary) -> str:
    stack = s.stack
    if stack is not None:
        return stack.model or "?"
    return (s.manifest.model if s.manifest is not None else None) or "?"


def runs_columns() -> list[Column[RunSummary]]:
    """The runs table: the terminal shows the columns its width has room for."""
    return [
        Column("run", lambda s: s.rel, keep=100, figure=False),
        Column("suite", lambda s: s.suite, keep=60, figure=False),
        Column("stack", _stack, keep=70, figure=False),
        Column("agent", lambda s: s.stack.agent if s.stack else "?", keep=20, figure=False),
        Column("model", _model, keep=50, figure=False),
        Column("mode", lambda s: s.mode, keep=40),
        Column("date", lambda s: s.started, keep=30),
        Column("attempts", lambda s: f"{s.done}/{s.planned}", keep=90),
        Column("success", _success, short=_success_short, keep=95),
        Column(
            "tokens / success",
            _tokens,
            short_head="tok/success",
            short=lambda s: _tokens(s, short=True),
            keep=55,
        ),
        Column(
            "cost / success",
            _cost,
            short_head="$/success",
            short=lambda s: _cost(s, short=True),
            keep=45,
        ),
        Column("state", lambda s: s.state, keep=99, css=lambda s: f"state-{s.state.split()[0]}"),
    ]


def runs_table(summaries: list[RunSummary]) -> Table[RunSummary]:
    return Table(runs_columns(), summaries, css="runs")


def index_page(summaries: list[RunSummary], root: str, live: bool) -> Iterator[str]:
    running = any(s.state == "running" for s in summaries)
    return stream(
        "runs.html.j2",
        runs=runs_table(summaries),
        summaries=summaries,
        root=root,
        href=run_href,
        refresh=REFRESH_S if live else None,
        running=running,
    )


# --- one run ------------------------------------------------------------------------------------


@dataclass
class AttemptItem:
    """One attempt of a run, as its run page lists it."""

    row: RowSummary
    entry: TaskScore | None
    href: str


def _attempt_items(summary: RunSummary) -> list[AttemptItem]:
    run = summary.run
    if run is None:
        return []
    entries = {(e.id, e.attempt): e for e in run.entries}
    return [
        AttemptItem(row, entries.get((row.id, row.attempt)), page_name(row.id, row.attempt))
        for row in run.final
    ]


def _grade(item: AttemptItem) -> str:
    if item.entry is None:
        return "not graded"
    return "correct" if item.entry.correct else "wrong"


def attempts_table(summary: RunSummary) -> Table[AttemptItem]:
    def status(a: AttemptItem) -> str:
        extra = a.entry.error_class if a.entry is not None and a.entry.error_class else ""
        return a.row.status + (f" ({extra})" if extra else "")

    return Table(
        [
            Column("task", lambda a: a.row.id, figure=False),
            Column("attempt", lambda a: a.row.attempt),
            Column("status", status),
            Column(
                "grade", _grade, css=lambda a: {"correct": "yes", "wrong": "no"}.get(_grade(a), "")
            ),
            Column("time", lambda a: fmt.seconds(a.row.duration_s)),
            Column("tokens", lambda a: fmt.count(a.row.usage.total_tokens)),
            Column("tool calls", lambda a: a.row.n_calls),
            Column(
                "answer",
                lambda a: _short((a.entry.prediction if a.entry else None) or "", 120),
                figure=False,
            ),
        ],
        _attempt_items(summary),
        css="attempts",
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_page(summary: RunSummary, live: bool) -> Iterator[str]:
    return stream(
        "run.html.j2",
        s=summary,
        attempts=attempts_table(summary),
        attempt_link=lambda a: "attempts/" + a.href,
        up=_up(summary),
        stack=_stack(summary),
        model=_model(summary),
        success=_success(summary),
        tokens=_tokens(summary),
        cost=_cost(summary),
        has_report=summary.is_graded,
        refresh=REFRESH_S if live and summary.state == "running" else None,
    )


def report_page(summary: RunSummary, live: bool) -> Iterator[str]:
    """The comparison report of this run alone, its traces linking to the attempt pages."""
    from agent_benchmarks.report.compare import compare_runs
    from agent_benchmarks.report.html import html_pieces

    run = summary.run
    assert run is not None and run.scores is not None
    report = compare_runs([run])

    def href(_: Any, entry: TaskScore) -> str | None:
        if (entry.id, entry.attempt) not in run.final_by_key:
            return None
        return "attempts/" + page_name(entry.id, entry.attempt)

    return html_pieces(
        report,
        [run],
        attempt_href=href,
        title=f"{summary.rel}: report",
        crumbs=[(_up(summary) + "index.html", "runs"), ("index.html", summary.rel)],
        refresh=REFRESH_S if live and summary.state == "running" else None,
    )


# --- one attempt --------------------------------------------------------------------------------


def whole_row(summary: RunSummary, row: RowSummary) -> PredictionRow:
    """The row with its tool outputs, read again from its place in predictions.jsonl."""
    assert summary.run is not None
    predictions = PredictionsStream(
        summary.run_dir / "predictions.jsonl", summary.run.suite, tool_outputs=True
    )
    return predictions.row_at(row.offset, row.line_number, (row.id, row.attempt))


def attempt_page(summary: RunSummary, item: AttemptItem, live: bool) -> Iterator[str]:
    run = summary.run
    assert run is not None
    row = whole_row(summary, item.row)
    earlier = [
        r
        for r in run.rows
        if (r.id, r.attempt) == (item.row.id, item.row.attempt) and r.offset != item.row.offset
    ]
    folders = sorted(
        p.name
        for p in (summary.run_dir / "attempts").glob(f"{glob_escape(row.id)}.{row.attempt}.*")
    )
    details = {
        k: v for k, v in (item.entry.details if item.entry else {}).items() if "gold" not in k
    }
    return stream(
        "attempt.html.j2",
        s=summary,
        item=item,
        row=row,
        entry=item.entry,
        grade_details=details,
        earlier=earlier,
        folders=folders,
        up=_up(summary, extra=1),
        refresh=REFRESH_S if live and summary.state == "running" else None,
    )


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


# --- every page ---------------------------------------------------------------------------------


def run_pages(summary: RunSummary, live: bool = False) -> Iterator[tuple[str, Page]]:
    """A run's pages, by their path under the browser's folder."""
    base = run_href(summary).rpartition("/")[0]
    yield f"{base}/index.html", lambda: run_page(summary, live)
    if summary.is_graded:
        yield f"{base}/report.html", lambda: report_page(summary, live)
    for item in _attempt_items(summary):
        yield (
            f"{base}/attempts/{item.href}",
            lambda item=item: attempt_page(summary, item, live),
        )

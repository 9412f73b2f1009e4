"""The report's tables, each column defined once for every output: the terminal
(:mod:`.terminal`), Markdown (:mod:`.markdown`) and HTML (the templates).

A :class:`Column` says what its head is, how a cell reads in full and, for a terminal too
narrow for the full form, abbreviated; whether its cells are figures (a figure is never
wrapped: a narrow terminal abbreviates or drops the column instead); and how long it stays
on a terminal as the width shrinks (``keep``: higher stays longer, None: never shown
there, for columns a terminal prints elsewhere or has no room for). A :class:`Table` is
columns over items; the builders below make each table of a suite's comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agent_benchmarks.report import fmt
from agent_benchmarks.report.schema import (
    LeakHit,
    PairedDiff,
    RoleSummary,
    StackDiagnostics,
    StackRow,
    SuiteComparison,
    TaskLine,
    ToolStats,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Column(Generic[T]):
    head: str
    cell: Callable[[T], object]
    short_head: str | None = None  # the head on a terminal, when shorter than ``head``
    short: Callable[[T], object] | None = None  # the cell abbreviated, for narrow terminals
    keep: int | None = 50  # terminal priority: higher stays longer; None: never on one
    figure: bool = True  # a number (or numbers): never wrapped
    css: Callable[[T], str] | None = None  # an HTML class for the cell (yes/no, colours)

    def text(self, item: T) -> str:
        return str(self.cell(item))

    def abbreviated(self, item: T) -> str:
        return str((self.short or self.cell)(item))

    def css_class(self, item: T) -> str:
        return self.css(item) if self.css is not None else ""


@dataclass
class Table(Generic[T]):
    columns: list[Column[T]]
    items: Sequence[T]
    title: str = ""
    css: str = ""  # the HTML table's class
    notes: list[str] = field(default_factory=list)  # sentences under it

    @property
    def heads(self) -> list[str]:
        return [c.head for c in self.columns]

    def rows(self) -> list[list[str]]:
        return [[c.text(item) for c in self.columns] for item in self.items]


@dataclass(frozen=True)
class Ranked(Generic[T]):
    """An item with the number of the stack it belongs to (#1 ranks first)."""

    n: int
    item: T


def numbers(group: SuiteComparison) -> dict[str, str]:
    """Each row's number (``#1``...): the wide tables use them as column heads."""
    return {row.key: f"#{i}" for i, row in enumerate(group.rows, start=1)}


def _number(r: Ranked[Any]) -> str:
    return f"#{r.n}"


def _colour(r: Ranked[Any]) -> str:
    return f"c{(r.n - 1) % fmt.N_COLOURS}"


NUMBER: Column[Any] = Column("#", _number, keep=100, css=_colour)


def _tasks_attempts(row: StackRow) -> str:
    spread = row.attempts_per_task_min
    if row.attempts_per_task_max != row.attempts_per_task_min:
        return f"{row.n_tasks} × {spread}–{row.attempts_per_task_max}"
    return f"{row.n_tasks} × {spread}"


def _verdict(r: Ranked[StackRow]) -> str:
    return fmt.eligible(r.item.eligibility)


def scoreboard_columns(view: str) -> list[Column[Ranked[StackRow]]]:
    """The scoreboard: one line per stack, ranked by the composite."""

    def col(head: str, cell: Callable[[StackRow], object], **kw: Any) -> Column[Ranked[StackRow]]:
        short = kw.pop("short", None)
        return Column(
            head,
            lambda r: cell(r.item),
            short=(lambda r: short(r.item)) if short else None,
            **kw,
        )

    return [
        NUMBER,
        col("stack (backend · engine · model)", lambda r: r.key, keep=None, figure=False),
        col("mode", fmt.mode, keep=None, figure=False),
        col("tasks × attempts", _tasks_attempts, short_head="tasks", keep=10),
        col(
            fmt.success_head(view),
            lambda r: f"{r.n_successes}/{r.n_attempts} = {fmt.interval(r.success)}",
            short_head="success (95% CI)",
            short=fmt.success_short,
            keep=95,
        ),
        col(
            "tokens / success",
            lambda r: fmt.tokens_per_success(r.tokens),
            short_head="tok/success",
            short=lambda r: fmt.tokens_per_success_short(r.tokens),
            keep=80,
        ),
        col(
            "cost / success",
            lambda r: fmt.cost_per_success(r.cost),
            short_head="$/success",
            short=lambda r: fmt.cost_short(r.cost.per_success_usd, r.cost),
            keep=70,
        ),
        col(
            "cost / task (incl. failures)",
            lambda r: fmt.cost_per_attempt(r.cost),
            short_head="$/task",
            short=lambda r: fmt.cost_short(r.cost.per_attempt_usd, r.cost),
            keep=12,
        ),
        col(
            "median time", lambda r: fmt.seconds(r.duration_median_s), short_head="median", keep=60
        ),
        col("p90 time", lambda r: fmt.seconds(r.duration_p90_s), short_head="p90", keep=20),
        col(
            "median tool calls",
            lambda r: fmt.count(r.tool_calls_median),
            short_head="calls",
            keep=50,
        ),
        col("timeouts", lambda r: r.n_timeouts, short_head="t/o", keep=74),
        col("errors", fmt.errors, short=fmt.errors_short, keep=75),
        col("contaminated", lambda r: r.n_contaminated, short_head="contam.", keep=25),
        col("refused calls", fmt.refused_calls, short_head="refused", keep=15),
        col("leak hits", lambda r: len(r.leak.hits), short_head="leaks", keep=22),
        col("composite", lambda r: fmt.composite(r.composite), short_head="comp.", keep=65),
        Column(
            "headline eligible",
            _verdict,
            short_head="headline",
            keep=90,
            css=_verdict,
        ),
    ]


def scoreboard(group: SuiteComparison) -> Table[Ranked[StackRow]]:
    items = [Ranked(i, row) for i, row in enumerate(group.rows, start=1)]
    return Table(scoreboard_columns(group.view), items, css="scoreboard")


def composite_notes(group: SuiteComparison) -> list[str]:
    """The sentences under the scoreboard: the weights, what was left out, the winners."""
    info = group.composite
    weights = ", ".join(f"{name} {w:.2f}" for name, w in info.weights.items())
    notes = [f"Composite weights: {weights} (each normalised across these rows)."]
    notes += [f"Left out of the composite: {n}, because {why}." for n, why in info.left_out.items()]
    if group.overall_winner is not None:
        w = group.overall_winner
        tie = f" (tied with {', '.join(w.tied_with)})" if w.tied_with else ""
        notes.append(f"Best composite: {w.key} ({w.composite:.3f}){tie}.")
    return notes


def matrix(group: SuiteComparison) -> Table[int]:
    """benchcmp's agent × stack grid (fmt.agent_stack_matrix): one item per browser stack."""
    head, full = fmt.agent_stack_matrix(group)
    _, short = fmt.agent_stack_matrix(group, short=True)
    columns: list[Column[int]] = [Column(head[0], lambda i: full[i][0], keep=100, figure=False)]
    columns += [
        Column(h, lambda i, c=c: full[i][c], short=lambda i, c=c: short[i][c], keep=99 - c)
        for c, h in enumerate(head[1:], start=1)
    ]
    return Table(
        columns,
        list(range(len(full))),
        title="Agent × stack: tokens per success (successes / attempts)",
    )


def winners(group: SuiteComparison) -> Table[Any]:
    items = [w for w in group.winners if w.n_candidates > 1]
    return Table(
        [
            Column("agent", lambda w: w.agent, figure=False),
            Column("model", lambda w: w.model or "?", figure=False),
            Column("winner", lambda w: w.key, figure=False),
            Column("composite", lambda w: f"{w.composite:.3f}"),
            Column("stacks compared", lambda w: w.n_candidates),
        ],
        items,
        title="Winner per agent and model",
    )


# --- resources ----------------------------------------------------------------------------------


def resources(group: SuiteComparison) -> Table[Ranked[StackRow]]:
    """What each stack cost the machine (fmt's resource figures)."""

    def res(head: str, cell: Callable[[Any], str], **kw: Any) -> Column[Ranked[StackRow]]:
        return Column(
            head,
            lambda r: cell(r.item.resources) if r.item.resources else fmt.NOT_MEASURED,
            **kw,
        )

    columns: list[Column[Ranked[StackRow]]] = [
        NUMBER,
        Column("stack", lambda r: r.item.key, keep=None, figure=False),
        res(
            "attempts measured",
            lambda s: f"{s.n_measured}/{s.n_rows}",
            short_head="measured",
            keep=30,
        ),
        res(
            "peak memory per attempt (median / p90)",
            fmt.peak_memory,
            short_head="peak (med/p90)",
            keep=90,
        ),
        res("peak counted by", lambda s: s.peak_source or fmt.DASH, keep=None, figure=False),
        res(
            "memory per success",
            lambda s: fmt.mb(s.memory_per_success_bytes),
            short_head="mem/success",
            keep=60,
        ),
        res(
            "CPU per success",
            lambda s: fmt.cpu_seconds(s.cpu_s_per_success),
            short_head="CPU/success",
            keep=80,
        ),
        res(
            "CPU per attempt (median)",
            lambda s: fmt.cpu_seconds(s.cpu_s_median),
            short_head="CPU/attempt",
            keep=40,
        ),
        res("attempts that fit at once", fmt.fit_at_once, short_head="fit at once", keep=70),
        res("browser fetched per attempt (median)", fmt.fetched, short_head="fetched", keep=50),
        res("sampler's own CPU", fmt.sampler_share, short_head="sampler", keep=20),
    ]
    items = [Ranked(i, row) for i, row in enumerate(group.rows, start=1)]
    return Table(columns, items, title="Resources: memory, CPU and page weight")


def roles(group: SuiteComparison) -> Table[Ranked[RoleSummary]]:
    """Each stack's roles: each one's peak (median, p90) and CPU per attempt."""
    items = [
        Ranked(i, role)
        for i, row in enumerate(group.rows, start=1)
        if row.resources is not None
        for role in row.resources.roles
    ]
    return Table(
        [
            NUMBER,
            Column("role", lambda r: r.item.role, figure=False),
            Column("attempts", lambda r: r.item.n_attempts),
            Column(
                "peak (median / p90)",
                lambda r: f"{fmt.mb(r.item.peak_median_bytes)} / {fmt.mb(r.item.peak_p90_bytes)}",
            ),
            Column("CPU per attempt (median)", lambda r: fmt.cpu_seconds(r.item.cpu_s_median)),
            Column("note", lambda r: r.item.note or "", figure=False),
        ],
        items,
    )


# --- evidence -----------------------------------------------------------------------------------


def pass_at_k(group: SuiteComparison) -> Table[tuple[int, StackRow, int]]:
    items = [(i, row, k) for i, row in enumerate(group.rows, start=1) for k in row.pass_at_k]
    return Table(
        [
            Column("#", lambda x: f"#{x[0]}"),
            Column("k", lambda x: x[2]),
            Column("pass@k", lambda x: fmt.pct(x[1].pass_at_k[x[2]])),
            Column("pass^k", lambda x: fmt.pct(x[1].pass_hat_k[x[2]])),
        ],
        items,
        title="Repeated attempts: pass@k and pass^k",
    )


def paired(group: SuiteComparison) -> Table[PairedDiff]:
    n = numbers(group)
    return Table(
        [
            Column("a", lambda p: n[p.a]),
            Column("b", lambda p: n[p.b]),
            Column("common tasks", lambda p: p.n_common_tasks),
            Column("success a − b (95% CI)", lambda p: fmt.signed_interval(p.diff)),
            Column(
                "verdict",
                lambda p: p.verdict.replace(p.a, n[p.a]).replace(p.b, n[p.b]),
                figure=False,
            ),
        ],
        group.paired,
        title="Paired differences (per task, same tasks)",
    )


def per_task(group: SuiteComparison) -> Table[TaskLine]:
    """Per task, each stack's cell: solved/attempts · median time · tokens per attempt."""
    columns: list[Column[TaskLine]] = [
        Column("task", lambda t: t.task_id, figure=False),
        Column("group", lambda t: " / ".join(t.fields.values()), figure=False),
    ]
    columns += [
        Column(number, lambda t, key=key: fmt.cell(t.cells.get(key)))
        for key, number in numbers(group).items()
    ]
    return Table(columns, group.tasks, title="Per task")


def breakdown(group: SuiteComparison, index: int) -> Table[tuple[str, dict[str, Any]]]:
    b = group.breakdowns[index]
    columns: list[Column[tuple[str, dict[str, Any]]]] = [
        Column(b.field, lambda x: x[0], figure=False)
    ]
    for key, number in numbers(group).items():
        columns.append(Column(number, lambda x, key=key: _group_cell(x[1].get(key))))
    return Table(columns, list(b.groups.items()), title=f"By {b.field}")


def _group_cell(cell: Any) -> str:
    return fmt.DASH if cell is None else f"{cell.successes}/{cell.n} = {fmt.pct(cell.rate)}"


def latency(group: SuiteComparison) -> Table[StackDiagnostics]:
    n = numbers(group)
    return Table(
        [
            Column("#", lambda d: n[d.key]),
            Column("calls", lambda d: d.n_calls),
            Column("median ms", lambda d: fmt.ms(d.latency_median_ms)),
            Column("p90 ms", lambda d: fmt.ms(d.latency_p90_ms)),
            Column("calls per minute of attempt time", lambda d: fmt.count(d.calls_per_minute)),
        ],
        group.diagnostics,
        title="Tool calls: latency and throughput",
    )


def tools(group: SuiteComparison) -> Table[tuple[str, ToolStats]]:
    n = numbers(group)
    items = [(n[d.key], t) for d in group.diagnostics for t in d.tools]
    return Table(
        [
            Column("#", lambda x: x[0]),
            Column("tool", lambda x: x[1].tool, figure=False),
            Column("calls", lambda x: x[1].n_calls),
            Column("errors", lambda x: x[1].n_errors),
            Column("median ms", lambda x: fmt.ms(x[1].latency_median_ms)),
            Column("p90 ms", lambda x: fmt.ms(x[1].latency_p90_ms)),
            Column("calls/min at mean latency", lambda x: fmt.count(x[1].calls_per_minute)),
            Column("reply tokens per call (median / p90)", lambda x: fmt.reply_tokens(x[1])),
        ],
        items,
    )


def leaks(group: SuiteComparison) -> Table[Ranked[StackRow]]:
    items = [Ranked(i, row) for i, row in enumerate(group.rows, start=1)]
    return Table(
        [
            NUMBER,
            Column("hits", lambda r: len(r.item.leak.hits)),
            Column(
                "flagged tasks",
                lambda r: ", ".join(r.item.leak.flagged_tasks) or "none",
                figure=False,
            ),
            Column("accuracy", lambda r: fmt.pct(r.item.leak.accuracy_strict)),
            Column(
                "accuracy, flagged counted wrong",
                lambda r: fmt.pct(r.item.leak.accuracy_flagged_wrong),
            ),
        ],
        items,
        title="Leak audit",
    )


def leak_hits(items: Sequence[tuple[str, LeakHit]]) -> Table[tuple[str, LeakHit]]:
    """Every hit; ``items`` pairs each with its stack's number ("" for one run's audit)."""
    # On a narrow terminal the task and what it reached stay the longest: they are the hit.
    columns: list[Column[tuple[str, LeakHit]]] = [
        Column("task", lambda x: x[1].task_id, keep=90, figure=False),
        Column("attempt", lambda x: x[1].attempt, keep=40),
        Column("call", lambda x: x[1].call_index, keep=30),
        Column("tool", lambda x: x[1].tool, keep=70, figure=False),
        Column("where", lambda x: x[1].field, keep=60, figure=False),
        Column("kind", lambda x: x[1].kind, keep=50, figure=False),
        Column("value", lambda x: x[1].value, keep=85, figure=False, css=lambda x: "mono"),
    ]
    if any(number for number, _ in items):
        columns.insert(0, Column("#", lambda x: x[0], keep=100))
    return Table(columns, items)


def group_hits(group: SuiteComparison) -> Table[tuple[str, LeakHit]]:
    n = numbers(group)
    return leak_hits([(n[row.key], hit) for row in group.rows for hit in row.leak.hits])

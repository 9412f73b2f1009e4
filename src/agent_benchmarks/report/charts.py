"""The report's charts, drawn by matplotlib and inlined as SVG (docs/viewing.md says
why matplotlib): success against cost per success with the intervals, what a success cost
(memory, CPU, tokens), and each stack's durations as box-and-strip plots.

Each chart is a :class:`Chart`: its SVG (text kept as text, ids salted by the chart's
name so several charts share a page, no date: the same report renders the same bytes) and
its caption. Marks a reader or a test looks for carry ids (matplotlib's ``gid``):
``<chart>-point-<n>``, ``-ci-<n>``, ``-box-<n>``, ``-bar-<panel>-<n>``. Run text (stack
keys) is drawn with mathtext off, so a ``$`` in it is a dollar sign, and matplotlib escapes
it for XML.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_benchmarks.report import fmt, stats
from agent_benchmarks.report.schema import StackRow, SuiteComparison

WIDTH_IN = 7.2  # inches at 72 points: about 520 px, under half a 1,280 px window
STYLE = {
    "svg.fonttype": "none",  # text stays text: selectable, and no glyphs drawn as paths
    "text.parse_math": False,
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
}


@dataclass(frozen=True)
class Chart:
    name: str  # data-chart of its figure
    svg: str
    caption: str


def _svg(figure: Any, salt: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no date)."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": salt}):
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    text = out.getvalue()
    return text[text.index("<svg") :]


def _figure(height_in: float, panels: int = 1) -> tuple[Any, list[Any]]:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
        axes = figure.subplots(1, panels, squeeze=False)[0]
    return figure, list(axes)


def _colour(index: int) -> str:
    return fmt.PALETTE[index % fmt.N_COLOURS]


def scatter(group: SuiteComparison, salt: str) -> Chart:
    """Success rate (with its interval) against cost per success, or against tokens per
    success when some row that succeeded has no cost (it would drop out of the picture)."""
    succeeded = [r for r in group.rows if r.n_successes]
    use_cost = bool(succeeded) and all(r.cost.per_success_usd is not None for r in succeeded)
    label = "cost per success (USD)" if use_cost else "tokens per success"
    why = "" if use_cost else " (a stack that succeeded has no cost, so tokens stand in for it)"

    def x_of(row: StackRow) -> float | None:
        return row.cost.per_success_usd if use_cost else row.tokens.per_success

    figure, (ax,) = _figure(3.4)
    left_out = []
    for i, row in enumerate(group.rows):
        x = x_of(row)
        if x is None:
            left_out.append(row.key)
            continue
        colour = _colour(i)
        ci = row.success
        if ci.low is not None and ci.high is not None:
            ax.vlines(x, ci.low, ci.high, colors=colour, linewidth=2, gid=f"scatter-ci-{i + 1}")
        ax.plot(
            [x], [row.success_rate], "o", color=colour, markersize=8, gid=f"scatter-point-{i + 1}"
        )
        ax.annotate(f"#{i + 1}", (x, row.success_rate), xytext=(7, 5), textcoords="offset points")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(left=0)
    ax.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
    ax.set_xlabel(label)
    ax.set_ylabel("success rate")
    ax.grid(axis="y", color="#eee")
    note = f" Not plotted (no success): {', '.join(left_out)}." if left_out else ""
    caption = (
        f"Success rate with its 95% interval against {label}{why}; up and left is better." + note
    )
    return Chart("scatter", _svg(figure, f"{salt}-scatter"), caption)


# The per-success cost chart's panels: what, in which unit, read from a stack's row.
COST_PANELS: tuple[tuple[str, Callable[[StackRow], float | None]], ...] = (
    (
        "memory per success (MB)",
        lambda r: (
            r.resources.memory_per_success_bytes / (1 << 20)
            if r.resources and r.resources.memory_per_success_bytes is not None
            else None
        ),
    ),
    ("CPU seconds per success", lambda r: r.resources.cpu_s_per_success if r.resources else None),
    ("tokens per success", lambda r: r.tokens.per_success),
)


def cost_per_success(group: SuiteComparison, salt: str) -> Chart:
    """What a success cost: the machine's memory and CPU beside the model's tokens, one
    panel each (its own axis), a bar per stack; "not measured" where a stack has none."""
    n = len(group.rows)
    figure, axes = _figure(0.9 + 0.32 * n, panels=len(COST_PANELS))
    positions = list(range(n))
    for p, (ax, (label, value_of)) in enumerate(zip(axes, COST_PANELS, strict=True)):
        values = [value_of(row) for row in group.rows]
        top = max((v for v in values if v is not None), default=0.0) or 1.0
        for i, value in enumerate(values):
            if value is None:
                ax.text(
                    top * 0.02,
                    i,
                    fmt.NOT_MEASURED,
                    va="center",
                    color="#666",
                    gid=f"cost-na-{p}-{i + 1}",
                )
                continue
            ax.barh(i, value, color=_colour(i), gid=f"cost-bar-{p}-{i + 1}")
        ax.set_title(label, fontsize=9)
        ax.set_yticks(positions, [f"#{i + 1}" for i in positions] if p == 0 else [])
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_xlim(0, top * 1.1)
        ax.xaxis.set_major_formatter(lambda x, _: fmt.count(x))
        ax.locator_params(axis="x", nbins=3)
    caption = (
        "What a success cost, failed attempts included: the machine's memory (every "
        "attempt's peak) and CPU time, beside the model's tokens; shorter is cheaper. "
        + fmt.machines(group)
    )
    return Chart("cost-per-success", _svg(figure, f"{salt}-cost"), caption)


def durations(group: SuiteComparison, salt: str) -> Chart:
    """One box (quartiles, median, min to max) per stack, with every attempt as a dot."""
    n = len(group.rows)
    figure, (ax,) = _figure(0.9 + 0.45 * n)
    for i, row in enumerate(group.rows):
        values = row.durations_s
        if not values:
            continue
        colour = _colour(i)
        q1, med, q3 = (stats.quantile(values, q) or 0.0 for q in (0.25, 0.5, 0.75))
        ax.hlines(i, min(values), max(values), colors=colour, linewidth=1)
        ax.barh(
            i,
            q3 - q1,
            left=q1,
            height=0.5,
            color=colour,
            alpha=0.18,
            edgecolor=colour,
            gid=f"durations-box-{i + 1}",
        )
        ax.vlines(med, i - 0.25, i + 0.25, colors=colour, linewidth=2)
        # A fixed spread (no randomness): the same report renders the same picture.
        jitter = [i + ((j * 7919) % 17 - 8) * 0.025 for j in range(len(values))]
        ax.scatter(values, jitter, s=5, color=colour, alpha=0.6)
    ax.set_yticks(range(n), [f"#{i + 1}" for i in range(n)])
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds per attempt")
    ax.grid(axis="x", color="#eee")
    caption = (
        "Duration of every attempt: box from the first to the third quartile, line at the "
        "median, whiskers to the extremes."
    )
    return Chart("durations", _svg(figure, f"{salt}-durations"), caption)


def group_charts(group: SuiteComparison, salt: str) -> list[Chart]:
    """A suite's charts, in the report's order."""
    return [scatter(group, salt), cost_per_success(group, salt), durations(group, salt)]

"""The comparison as one self-contained HTML file: no script, no font, no network.

Charts are inline SVG drawn here (success against cost per success with the intervals,
memory and CPU per success beside tokens per success, duration distributions as
box-and-strip plots) and a heat map table of per-task success.
Below them, per task, each stack's attempts: the answer, the grade and the tool calls in
order (latency, page URL, HTTP status, error). Gold answers are left out on purpose: a
report may be shared, and benchmark answers must not travel with it.

Everything from a run (answers, arguments, URLs, reasons) is text from the web or from a
model, so every value passes through :func:`e` (``html.escape``) before it is written.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence

from agent_benchmarks.records import PredictionRow, TaskScore, ToolCall
from agent_benchmarks.report import fmt, stats
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.schema import ComparisonReport, StackRow, SuiteComparison

MAX_ARG_CHARS = 300
MAX_ANSWER_CHARS = 2_000
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1b1b1b}
h1{font-size:22px}h2{font-size:19px;margin-top:36px;border-bottom:1px solid #ccc}
h3{font-size:16px;margin-top:24px}
table{border-collapse:collapse;margin:8px 0 16px}
th,td{border:1px solid #d0d0d0;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.banner{background:#fff4d6;border:1px solid #e0b84a;padding:8px 12px;margin:8px 0}
.yes{color:#176317;font-weight:600}.no{color:#a11;font-weight:600}
figure{margin:12px 0 24px}figcaption{color:#555;font-size:13px}
svg text{font:11px system-ui,sans-serif;fill:#333}
.heat div.cell{text-align:center;min-width:70px;padding:2px 4px}
details{margin:4px 0}summary{cursor:pointer}
.trace td{font-size:12px}.mono{font-family:ui-monospace,monospace;white-space:pre-wrap;
word-break:break-word}
.muted{color:#666}
"""


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    """A table of already-escaped cells (callers escape, since some cells hold markup)."""
    head_html = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head_html}</tr></thead><tbody>{body}</tbody></table>'


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


# --- charts -------------------------------------------------------------------------------------


def _ticks(top: float, n: int = 5) -> list[float]:
    return [top * i / n for i in range(n + 1)]


def _nice_axis(largest: float) -> tuple[float, list[float]]:
    """An axis from 0 a little past ``largest``, with ticks on round numbers (1, 2, 5 x 10^k)."""
    if largest <= 0:
        return 1.0, _ticks(1.0)
    raw = largest * 1.1 / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = math.ceil(largest * 1.1 / step)
    return step * count, [step * i for i in range(count + 1)]


def scatter(group: SuiteComparison) -> str:
    """Success rate (with its interval) against cost per success, or against tokens per
    success when some row that succeeded has no cost (it would drop out of the picture)."""
    succeeded = [r for r in group.rows if r.n_successes]
    use_cost = bool(succeeded) and all(r.cost.per_success_usd is not None for r in succeeded)
    label = "cost per success (USD)" if use_cost else "tokens per success"
    why = "" if use_cost else " (a stack that succeeded has no cost, so tokens stand in for it)"

    def x_of(row: StackRow) -> float | None:
        return row.cost.per_success_usd if use_cost else row.tokens.per_success

    placed = [(i, row, x) for i, row in enumerate(group.rows) if (x := x_of(row)) is not None]
    left_out = [row for row in group.rows if x_of(row) is None]
    width, height, ml, mr, mt, mb = 640, 340, 60, 20, 16, 44
    pw, ph = width - ml - mr, height - mt - mb
    top_x, x_ticks = _nice_axis(max((x for _, _, x in placed), default=0.0))

    def sx(x: float) -> float:
        return ml + pw * x / top_x

    def sy(y: float) -> float:
        return mt + ph * (1 - y)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="success against {e(label)}">',
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    for y in _ticks(1.0):
        parts.append(
            f'<line x1="{ml}" x2="{ml + pw}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#eee"/>'
            f'<text x="{ml - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.0%}</text>'
        )
    for x in x_ticks:
        tick = f"{x:.3g}" if use_cost else fmt.count(x)
        parts.append(
            f'<text x="{sx(x):.1f}" y="{mt + ph + 16}" text-anchor="middle">{e(tick)}</text>'
        )
    parts.append(
        f'<text x="{ml + pw / 2}" y="{height - 6}" text-anchor="middle">{e(label)}</text>'
        f'<text x="14" y="{mt + ph / 2}" transform="rotate(-90 14 {mt + ph / 2})" '
        'text-anchor="middle">success rate</text>'
    )
    for i, row, x in placed:
        color = _color(i)
        ci = row.success
        if ci.low is not None and ci.high is not None:
            parts.append(
                f'<line class="ci" x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{sy(ci.low):.1f}" '
                f'y2="{sy(ci.high):.1f}" stroke="{color}" stroke-width="2"/>'
            )
        parts.append(
            f'<circle class="point" cx="{sx(x):.1f}" cy="{sy(row.success_rate):.1f}" r="6" '
            f'fill="{color}"><title>{e(row.key)}: {e(fmt.pct(row.success_rate))}, '
            f"{e(label)} {e(x)}</title></circle>"
            f'<text x="{sx(x) + 9:.1f}" y="{sy(row.success_rate) - 7:.1f}">#{i + 1}</text>'
        )
    parts.append("</svg>")
    note = ""
    if left_out:
        note = " Not plotted (no success): " + ", ".join(e(r.key) for r in left_out)
    return (
        '<figure class="chart" data-chart="scatter">' + "".join(parts) + "<figcaption>Success "
        f"rate with its 95% interval against {e(label)}{e(why)}; up and left is better.{note}"
        "</figcaption></figure>"
    )


def durations(group: SuiteComparison) -> str:
    """One box (quartiles, median, min to max) per stack, with every attempt as a dot."""
    band, ml, mr, mt, mb, width = 44, 60, 20, 10, 40, 640
    height = mt + mb + band * len(group.rows)
    pw = width - ml - mr
    top, x_ticks = _nice_axis(
        max((max(r.durations_s) for r in group.rows if r.durations_s), default=0.0)
    )

    def sx(x: float) -> float:
        return ml + pw * x / top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="duration per attempt">'
    ]
    for x in x_ticks:
        parts.append(
            f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{mt}" y2="{height - mb}" '
            f'stroke="#eee"/><text x="{sx(x):.1f}" y="{height - mb + 16}" '
            f'text-anchor="middle">{x:g}</text>'
        )
    parts.append(
        f'<text x="{ml + pw / 2}" y="{height - 6}" text-anchor="middle">seconds per attempt</text>'
    )
    for i, row in enumerate(group.rows):
        y = mt + band * i + band / 2
        color = _color(i)
        parts.append(f'<text x="{ml - 8}" y="{y + 4:.1f}" text-anchor="end">#{i + 1}</text>')
        if not row.durations_s:
            continue
        values = row.durations_s
        lo, hi = min(values), max(values)
        q1, med, q3 = (stats.quantile(values, q) or 0.0 for q in (0.25, 0.5, 0.75))
        parts.append(
            f'<line x1="{sx(lo):.1f}" x2="{sx(hi):.1f}" y1="{y}" y2="{y}" stroke="{color}"/>'
            f'<rect class="box" x="{sx(q1):.1f}" y="{y - 10}" '
            f'width="{max(sx(q3) - sx(q1), 1):.1f}" height="20" fill="{color}" '
            f'fill-opacity="0.18" stroke="{color}"><title>{e(row.key)}: median '
            f"{med:.2f} s, quartiles {q1:.2f} to {q3:.2f} s</title></rect>"
            f'<line x1="{sx(med):.1f}" x2="{sx(med):.1f}" y1="{y - 10}" y2="{y + 10}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        for j, value in enumerate(row.durations_s):
            # A fixed spread (no randomness): the same report renders the same picture.
            jitter = ((j * 7919) % 17 - 8) * 1.1
            parts.append(
                f'<circle cx="{sx(value):.1f}" cy="{y + jitter:.1f}" r="2" fill="{color}" '
                'fill-opacity="0.6"/>'
            )
    parts.append("</svg>")
    return (
        '<figure class="chart" data-chart="durations">' + "".join(parts) + "<figcaption>Duration"
        " of every attempt: box from the first to the third quartile, line at the median, "
        "whiskers to the extremes.</figcaption></figure>"
    )


# The per-success cost chart's panels: what, in which unit, read from a stack's row.
_COST_PANELS: tuple[tuple[str, Callable[[StackRow], float | None]], ...] = (
    (
        "memory per success (MB)",
        lambda r: (
            r.resources.memory_per_success_bytes / (1 << 20)
            if r.resources and r.resources.memory_per_success_bytes is not None
            else None
        ),
    ),
    (
        "CPU seconds per success",
        lambda r: r.resources.cpu_s_per_success if r.resources else None,
    ),
    ("tokens per success", lambda r: r.tokens.per_success),
)


def cost_per_success(group: SuiteComparison) -> str:
    """What a success cost: the machine's memory and CPU beside the model's tokens, one
    panel each (its own axis), a bar per stack."""
    band, panel, gap, ml, mt, mb = 28, 200, 28, 44, 22, 30
    width = ml + len(_COST_PANELS) * (panel + gap)
    height = mt + mb + band * len(group.rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="cost per success">'
    ]
    for i, _ in enumerate(group.rows):
        y = mt + band * i + band / 2
        parts.append(f'<text x="{ml - 8}" y="{y + 4:.1f}" text-anchor="end">#{i + 1}</text>')
    for p, (label, value_of) in enumerate(_COST_PANELS):
        left = ml + p * (panel + gap)
        values = [value_of(row) for row in group.rows]
        top, ticks = _nice_axis(max((v for v in values if v is not None), default=0.0))
        parts.append(
            f'<text x="{left + panel / 2}" y="{mt - 8}" text-anchor="middle">{e(label)}</text>'
        )
        for tick in (ticks[0], ticks[-1]):
            x = left + panel * tick / top
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{mt}" y2="{height - mb}" stroke="#eee"/>'
                f'<text x="{x:.1f}" y="{height - mb + 14}" text-anchor="middle">'
                f"{e(fmt.count(tick))}</text>"
            )
        for i, (row, value) in enumerate(zip(group.rows, values, strict=True)):
            y = mt + band * i + 4
            if value is None:
                parts.append(
                    f'<text class="muted" x="{left + 4}" y="{y + 12}">{fmt.NOT_MEASURED}</text>'
                )
                continue
            parts.append(
                f'<rect class="bar" x="{left}" y="{y}" width="{max(panel * value / top, 1):.1f}" '
                f'height="{band - 8}" fill="{_color(i)}"><title>{e(row.key)}: {e(label)} '
                f"{e(fmt.count(value))}</title></rect>"
            )
    parts.append("</svg>")
    return (
        '<figure class="chart" data-chart="cost-per-success">' + "".join(parts) + "<figcaption>"
        "What a success cost, failed attempts included: the machine's memory (every "
        "attempt's peak) and CPU time, beside the model's tokens; shorter is cheaper. "
        f"{e(fmt.machines(group))}</figcaption></figure>"
    )


def _heat(successes: int, attempts: int) -> str:
    """Red (none solved) through yellow to green (all solved)."""
    hue = 120 * successes / attempts if attempts else 0
    return f"hsl({hue:.0f},70%,80%)"


def heatmap(group: SuiteComparison) -> str:
    keys = [row.key for row in group.rows]
    rows = []
    for task in group.tasks:
        cells = [e(task.task_id), e(" / ".join(task.fields.values()))]
        for key in keys:
            cell = task.cells.get(key)
            if cell is None:
                cells.append('<span class="muted">not run</span>')
                continue
            cells.append(
                f'<div class="cell" style="background:{_heat(cell.successes, cell.attempts)}" '
                f'title="{e(fmt.cell(cell))}">{cell.successes}/{cell.attempts}</div>'
            )
        rows.append(cells)
    head = ["task", "group", *(f"#{i}" for i in range(1, len(keys) + 1))]
    return (
        '<figure class="chart" data-chart="heatmap">'
        + _table(head, rows, "heat")
        + "<figcaption>Per-task success (solved/attempts; hover for time and tokens).</figcaption>"
        "</figure>"
    )


# --- sections -----------------------------------------------------------------------------------


def _scoreboard(group: SuiteComparison) -> str:
    rows = []
    for i, row in enumerate(group.rows, start=1):
        verdict = fmt.eligible(row.eligibility)
        rows.append(
            [
                f'<span style="color:{_color(i - 1)}">#{i}</span>',
                e(row.key),
                e(fmt.mode(row)),
                f"{row.n_tasks} × {row.attempts_per_task_min}",
                e(f"{row.n_successes}/{row.n_attempts} = {fmt.interval(row.success)}"),
                e(fmt.tokens_per_success(row.tokens)),
                e(fmt.cost_per_success(row.cost)),
                e(fmt.cost_per_attempt(row.cost)),
                e(fmt.seconds(row.duration_median_s)),
                e(fmt.seconds(row.duration_p90_s)),
                e(fmt.count(row.tool_calls_median)),
                str(row.n_timeouts),
                e(fmt.errors(row)),
                str(row.n_contaminated),
                e(fmt.refused_calls(row)),
                str(len(row.leak.hits)),
                e(fmt.composite(row.composite)),
                f'<span class="{verdict}">{verdict}</span>',
            ]
        )
    head = [
        "#", "stack (backend · engine · model)", "mode", "tasks × attempts",
        e(fmt.success_head(group.view)), "tokens / success", "cost / success", "cost / task",
        "median time", "p90 time", "median tool calls", "timeouts", "errors", "contaminated",
        "refused calls", "leak hits", "composite", "headline eligible",
    ]  # fmt: skip
    info = group.composite
    weights = ", ".join(f"{e(name)} {w:.2f}" for name, w in info.weights.items())
    notes = [f"Composite weights: {weights}, each component normalised across these rows."]
    notes += [
        f"Left out of the composite: {e(n)}, because {e(why)}." for n, why in info.left_out.items()
    ]
    if group.overall_winner is not None:
        notes.append(
            f"Best composite: <b>{e(group.overall_winner.key)}</b> "
            f"({group.overall_winner.composite:.3f})."
        )
    for w in group.winners:
        if w.n_candidates > 1:
            notes.append(
                f"Winner for {e(w.agent)} with {e(w.model or '?')}: <b>{e(w.key)}</b> "
                f"({w.composite:.3f} over {w.n_candidates} stacks)."
            )
    matrix_head, matrix_rows = fmt.agent_stack_matrix(group)
    matrix = "<h3>Agent × stack: tokens per success (successes / attempts)</h3>" + _table(
        [e(c) for c in matrix_head], [[e(c) for c in line] for line in matrix_rows]
    )
    return _table(head, rows) + "".join(f"<p>{n}</p>" for n in notes) + matrix


def _resources(group: SuiteComparison) -> str:
    """The resources table, each stack's roles, and where the figures come from."""
    rows = [
        [f"#{i}", e(row.key), *(e(c) for c in fmt.resource_cells(row))]
        for i, row in enumerate(group.rows, start=1)
    ]
    roles = [
        [f"#{i}", *(e(c) for c in cells)]
        for i, row in enumerate(group.rows, start=1)
        for cells in fmt.role_cells(row)
    ]
    out = f"<p>{e(fmt.machines(group))}</p>" + _table([e(h) for h in fmt.RESOURCE_HEAD], rows)
    return out + (_table([e(h) for h in fmt.ROLE_HEAD], roles) if roles else "")


def _eligibility(group: SuiteComparison) -> str:
    items = []
    for i, row in enumerate(group.rows, start=1):
        verdict = fmt.eligible(row.eligibility)
        reasons = "".join(
            f"<li><b>{e(r.code)}</b>: {e(r.message)}</li>" for r in row.eligibility.reasons
        )
        extra = "; ".join(e(r.message) for r in row.eligibility.per_task_reasons)
        per_task = "yes" if row.eligibility.per_task_chart else "no"
        items.append(
            f'<li>#{i} {e(row.key)}: headline eligible: <span class="{verdict}">{verdict}</span>'
            f"<ul>{reasons}<li>per-task chart eligible: {per_task}"
            f"{f' ({extra})' if extra else ''}</li></ul></li>"
        )
    return f"<p class='muted'>{e(group.headline_rule)}</p><ul>{''.join(items)}</ul>"


def _evidence(group: SuiteComparison) -> str:
    numbers = {row.key: f"#{i}" for i, row in enumerate(group.rows, start=1)}
    out = []
    if any(row.attempts_per_task_min > 1 for row in group.rows):
        out.append("<h3>Repeated attempts: pass@k and pass^k</h3>")
        out.append(
            _table(
                ["#", "k", "pass@k", "pass^k"],
                [
                    [numbers[r.key], str(k), fmt.pct(r.pass_at_k[k]), fmt.pct(r.pass_hat_k[k])]
                    for r in group.rows
                    for k in r.pass_at_k
                ],
            )
        )
    if group.paired:
        out.append("<h3>Paired differences (per task, same tasks)</h3>")
        out.append(
            _table(
                ["a", "b", "common tasks", "success a − b (95% CI)", "verdict"],
                [
                    [
                        numbers[p.a],
                        numbers[p.b],
                        str(p.n_common_tasks),
                        e(fmt.signed_interval(p.diff)),
                        e(p.verdict.replace(p.a, numbers[p.a]).replace(p.b, numbers[p.b])),
                    ]
                    for p in group.paired
                ],
            )
        )
    keys = [row.key for row in group.rows]
    for breakdown in group.breakdowns:
        out.append(f"<h3>By {e(breakdown.field)}</h3>")
        out.append(
            _table(
                [e(breakdown.field), *(numbers[k] for k in keys)],
                [
                    [
                        e(value),
                        *(
                            f"{c.successes}/{c.n} = {fmt.pct(c.rate)}"
                            if (c := cells.get(k))
                            else fmt.DASH
                            for k in keys
                        ),
                    ]
                    for value, cells in breakdown.groups.items()
                ],
            )
        )
    out.append("<h3>Tool calls: latency and throughput</h3>")
    out.append(
        _table(
            ["#", "calls", "median ms", "p90 ms", "calls per minute of attempt time"],
            [
                [
                    numbers[d.key],
                    str(d.n_calls),
                    fmt.ms(d.latency_median_ms),
                    fmt.ms(d.latency_p90_ms),
                    fmt.count(d.calls_per_minute),
                ]
                for d in group.diagnostics
            ],
        )
    )
    out.append(
        _table(
            list(fmt.TOOL_HEAD),
            [
                [
                    numbers[d.key],
                    e(t.tool),
                    str(t.n_calls),
                    str(t.n_errors),
                    fmt.ms(t.latency_median_ms),
                    fmt.ms(t.latency_p90_ms),
                    fmt.count(t.calls_per_minute),
                    e(fmt.reply_tokens(t)),
                ]
                for d in group.diagnostics
                for t in d.tools
            ],
        )
    )
    out.append("<h3>Leak audit</h3>")
    out.append(
        _table(
            ["#", "hits", "flagged tasks", "accuracy", "accuracy, flagged counted wrong"],
            [
                [
                    numbers[r.key],
                    str(len(r.leak.hits)),
                    e(", ".join(r.leak.flagged_tasks) or "none"),
                    fmt.pct(r.leak.accuracy_strict),
                    fmt.pct(r.leak.accuracy_flagged_wrong),
                ]
                for r in group.rows
            ],
        )
    )
    hits = [(row.key, h) for row in group.rows for h in row.leak.hits]
    if hits:
        out.append(
            _table(
                ["#", "task", "attempt", "call", "tool", "where", "kind", "value"],
                [
                    [
                        numbers[k],
                        e(h.task_id),
                        str(h.attempt),
                        str(h.call_index),
                        e(h.tool),
                        e(h.field),
                        e(h.kind),
                        f'<span class="mono">{e(h.value)}</span>',
                    ]
                    for k, h in hits
                ],
            )
        )
    return "".join(out)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _args(args: dict[str, object]) -> str:
    return json.dumps(args, ensure_ascii=False, default=str)


def _attempt(entry: TaskScore, row: PredictionRow | None) -> str:
    grade = "correct" if entry.correct else "wrong"
    head = (
        f'attempt {entry.attempt}: <b class="{"yes" if entry.correct else "no"}">{grade}</b> '
        f"(score {entry.score:.2f}), status {e(entry.status)}"
        + (f", {e(entry.error_class)}" if entry.error_class else "")
        + (f", {e(fmt.seconds(row.duration_s))}" if row is not None else "")
    )
    failed = entry.details.get("failed") or []
    if failed:
        head += f"; failed clauses: {e(', '.join(map(str, failed)))}"
    if entry.details.get("contaminated"):
        head += '; <b class="no">contaminated</b>'
    if entry.details.get("n_refused_calls"):
        head += f"; {entry.details['n_refused_calls']} refused call(s)"
    answer = entry.prediction or ""
    body = (
        f'<div>answer: <span class="mono">{e(_short(answer, MAX_ANSWER_CHARS))}</span></div>'
        if answer.strip()
        else '<div class="muted">no answer</div>'
    )
    if row is None:
        return f"<li>{head}{body}<div class='muted'>no row in the predictions</div></li>"
    calls = [
        [
            str(n),
            e(call.name),
            f'<span class="mono">{e(_short(_args(call.args), MAX_ARG_CHARS))}</span>',
            fmt.ms(call.latency_ms),
            f'<span class="mono">{e(call.page_url or "")}</span>',
            e(call.http_status if call.http_status is not None else ""),
            e(_reply(call)),
            e(call.error or ""),
        ]
        for n, call in enumerate(row.trace, start=1)
    ]
    trace = (
        _table(["#", "tool", "args", "ms", "page URL", "HTTP", "reply", "error"], calls, "trace")
        if calls
        else '<div class="muted">no tool calls</div>'
    )
    if row.error:
        body += (
            f'<div>error: <span class="mono">{e(_short(row.error, MAX_ANSWER_CHARS))}</span></div>'
        )
    return f"<li>{head}{body}{trace}</li>"


def _reply(call: ToolCall) -> str:
    """The reply's size: characters and tokens (estimated ones marked)."""
    if call.output_chars is None:
        return ""
    tokens = "" if call.output_tokens is None else f", {fmt.count(call.output_tokens)} tokens"
    estimated = " (est.)" if tokens and call.output_tokens_estimated else ""
    return f"{fmt.count(call.output_chars)} chars{tokens}{estimated}"


def _final_row(run: LoadedRun, entry: TaskScore) -> PredictionRow | None:
    """The attempt's final row, whole: its trace is shown call by call, more than a loaded
    run keeps, so it is read again from the run's predictions (one row at a time)."""
    summary = run.final_by_key.get((entry.id, entry.attempt))
    return run.read_row(summary) if summary is not None else None


def _traces(group: SuiteComparison, runs: dict[str, LoadedRun]) -> Iterator[str]:
    """Per task, a ``<details>`` with each stack's attempts, given up attempt by attempt: a
    run's traces run to hundreds of megabytes of HTML, and only one attempt's is held."""
    by_task = {row.run_dir: _entries_by_task(runs[row.run_dir]) for row in group.rows}
    for task in group.tasks:
        marks = [
            f"#{i} {fmt.cell(task.cells.get(row.key)).split(' · ')[0]}"
            for i, row in enumerate(group.rows, start=1)
        ]
        summary = f'<b>{e(task.task_id)}</b> <span class="muted">{e(" · ".join(marks))}</span>'
        yield f'<details class="task"><summary>{summary}</summary>'
        for i, row in enumerate(group.rows, start=1):
            entries = sorted(by_task[row.run_dir].get(task.task_id, []), key=lambda x: x.attempt)
            if not entries:
                continue
            yield f"<h4>#{i} {e(row.key)}</h4><ul>"
            run = runs[row.run_dir]
            for entry in entries:
                yield _attempt(entry, _final_row(run, entry))
            yield "</ul>"
        yield "</details>"


def _entries_by_task(run: LoadedRun) -> dict[str, list[TaskScore]]:
    out: dict[str, list[TaskScore]] = defaultdict(list)
    for entry in run.entries:
        out[entry.id].append(entry)
    return out


def render_group(group: SuiteComparison, runs: dict[str, LoadedRun]) -> Iterator[str]:
    banner = fmt.not_results(group)
    if banner:
        banner = f'<div class="banner"><b>Not benchmark results.</b> {e(banner)}</div>'
    yield (
        f"<section><h2>{e(group.suite)}</h2><p>{e(fmt.view_note(group.view))}</p>"
        f"{banner}{_scoreboard(group)}"
        f"<h3>Headline eligibility</h3>{_eligibility(group)}"
        f"<h3>Charts</h3>{scatter(group)}{cost_per_success(group)}{durations(group)}"
        f"{heatmap(group)}<h3>Resources: memory, CPU and page weight</h3>{_resources(group)}"
        f"{_evidence(group)}<h3>Per task: answers, grades and traces</h3>"
    )
    yield from _traces(group, runs)
    yield "</section>"


def html_pieces(report: ComparisonReport, runs: Sequence[LoadedRun]) -> Iterator[str]:
    """The HTML report in pieces, in order, to be written as they come (see _traces)."""
    by_dir = {str(run.run_dir): run for run in runs}
    warnings = "".join(f"<li>{e(w)}</li>" for w in report.warnings)
    yield (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # An inline icon: a browser opening the file must not go looking for favicon.ico.
        '<link rel="icon" href="data:,">'
        f"<title>agent-benchmarks comparison</title><style>{CSS}</style></head><body>"
        "<h1>agent-benchmarks comparison</h1>"
        f"<p class='muted'>Generated {e(report.generated_at)} by agent-benchmarks "
        f"{e(report.harness_version)}; bootstrap over tasks, {report.resamples:,} resamples, "
        f"seed {report.seed}, {report.confidence:.0%} intervals. Runs: "
        + ", ".join(f"<code>{e(p)}</code>" for p in report.inputs)
        + "</p>"
        + (f"<h3>Warnings</h3><ul>{warnings}</ul>" if warnings else "")
    )
    for group in report.groups:
        yield from render_group(group, by_dir)
    yield "</body></html>\n"


def render_html(report: ComparisonReport, runs: Sequence[LoadedRun]) -> str:
    """The HTML report as one string (:func:`html_pieces` joined)."""
    return "".join(html_pieces(report, runs))

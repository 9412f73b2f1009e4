"""How the report's numbers read, shared by the terminal, Markdown and HTML renderers, so
a figure says the same thing (estimated, mixed, lower bound, unknown) everywhere."""

from __future__ import annotations

from agent_benchmarks.report.schema import (
    VIEW_NOTES,
    VIEW_TITLES,
    CostSummary,
    Eligibility,
    Interval,
    ResourceSummary,
    StackRow,
    SuiteComparison,
    TaskCell,
    TokenSummary,
    ToolStats,
)

DASH = "–"
# Stacks are told apart by colour in charts and by the colour of their number in tables.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
N_COLOURS = len(PALETTE)


def pct(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}%"


def interval(value: Interval) -> str:
    if value.estimate is None or value.low is None or value.high is None:
        return DASH
    return f"{pct(value.estimate)} [{pct(value.low)}, {pct(value.high)}]"


def signed_interval(value: Interval) -> str:
    """A difference in percentage points, with its interval."""
    if value.estimate is None or value.low is None or value.high is None:
        return DASH
    return f"{100 * value.estimate:+.1f} pp [{100 * value.low:+.1f}, {100 * value.high:+.1f}]"


def count(value: float | None) -> str:
    if value is None:
        return DASH
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.2f}M"
    if abs(value) >= 10_000:
        return f"{value / 1_000:.1f}k"
    return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:.1f}"


def seconds(value: float | None) -> str:
    return DASH if value is None else f"{value:.1f} s" if value >= 1 else f"{value:.2f} s"


def ms(value: float | None) -> str:
    return DASH if value is None else f"{value:.0f}"


def usd(value: float | None) -> str:
    if value is None:
        return DASH
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def tokens_per_success_short(t: TokenSummary) -> str:
    """Tokens per success in a few characters: ``12.3k``, ``12.3k est``, ``12.3k mix``."""
    if t.basis == "missing":
        return "no usage"
    if t.per_success is None:
        return "∞"
    mark = {"exact": "", "estimated": " est", "mixed": " mix"}[t.basis]
    return count(t.per_success) + mark + ("*" if t.n_usage_missing_rows else "")


def tokens_per_success(t: TokenSummary) -> str:
    """Tokens per success, saying whether it is exact, estimated or a mix of both."""
    if t.basis == "missing":
        return "no usage recorded"
    if t.per_success is None:
        text = "∞ (no success)"
    elif t.basis == "exact":
        text = count(t.per_success)
    elif t.basis == "estimated":
        text = f"{count(t.per_success)} (estimated)"
    else:
        text = (
            f"{count(t.per_success)} mixed: {count(t.per_success_exact)} exact + "
            f"{count(t.per_success_estimated)} estimated"
        )
    if t.n_usage_missing_rows:
        text += f"; {t.n_usage_missing_rows} row(s) without usage"
    return text


def _cost(value: float | None, cost: CostSummary) -> str:
    if cost.total_usd is None:
        return "unknown (no price)"
    if value is None:
        return "∞ (no success)"
    if not cost.complete:
        return f"≥ {usd(value)} ({cost.n_rows_without_cost} row(s) unpriced)"
    return usd(value)


def _with_credits(text: str, credits: float | None, cost: CostSummary) -> str:
    """The tokens' cost, then the search credits beside it (Tavily bills in credits)."""
    if cost.search_credits is None:
        return text
    shown = "∞" if credits is None else f"{credits:.3g}"
    return f"{text} + {shown} search credits"


def cost_short(value: float | None, cost: CostSummary) -> str:
    """A cost in a few characters: ``$0.0123``, ``≥$0.0123`` (some rows unpriced), ``?``
    (no price), ``∞`` (no success); search credits, when spent, as ``+3cr``."""
    if cost.total_usd is None:
        text = "?"
    elif value is None:
        text = "∞"
    else:
        text = ("" if cost.complete else "≥") + usd(value)
    return text + ("" if cost.search_credits is None else "+cr")


def cost_per_success(cost: CostSummary) -> str:
    return _with_credits(_cost(cost.per_success_usd, cost), cost.search_credits_per_success, cost)


def cost_per_attempt(cost: CostSummary) -> str:
    return _with_credits(_cost(cost.per_attempt_usd, cost), cost.search_credits_per_attempt, cost)


def errors(row: StackRow) -> str:
    if not row.errors_by_class:
        return "0"
    return ", ".join(f"{name} {n}" for name, n in row.errors_by_class.items())


def errors_short(row: StackRow) -> str:
    """The number of errors; their classes are in the full form."""
    return str(sum(row.errors_by_class.values()))


def success_short(row: StackRow) -> str:
    """Successes over attempts and the interval: ``5/10 20–80%``."""
    ci = row.success
    if ci.low is None or ci.high is None:
        return f"{row.n_successes}/{row.n_attempts}"
    return f"{row.n_successes}/{row.n_attempts} {100 * ci.low:.0f}–{100 * ci.high:.0f}%"


def refused_calls(row: StackRow) -> str:
    """Refused calls as ``calls in rows``; ``0`` when none."""
    if not row.n_refused_calls:
        return "0"
    return f"{row.n_refused_calls} in {row.n_rows_with_refused_calls} row(s)"


def eligible(verdict: Eligibility) -> str:
    return "yes" if verdict.headline else "no"


def composite(value: float | None) -> str:
    return DASH if value is None else f"{value:.3f}"


def cell(value: TaskCell | None) -> str:
    """One stack's result on one task: solved/attempts, median time, tokens per attempt."""
    if value is None:
        return "not run"
    mark = "✓" if value.successes == value.attempts else "✗" if not value.successes else "~"
    tokens = DASH if value.tokens_mean is None else count(value.tokens_mean)
    if value.tokens_basis in ("estimated", "mixed"):
        tokens += f" ({value.tokens_basis})"
    return (
        f"{mark} {value.successes}/{value.attempts} · {seconds(value.duration_median_s)} · "
        f"{tokens} tok"
    )


def success_head(view: str) -> str:
    """The scoreboard's success column head: it names whose grades it counts."""
    return f"success, {VIEW_TITLES[view]} (95% CI)"


def view_note(view: str) -> str:
    """The sentence above a suite's tables saying which score view they all show."""
    return f"Scores: {VIEW_TITLES[view]}. {VIEW_NOTES[view]}"


def not_results(group: SuiteComparison) -> str:
    """The warning a group's tables carry when some row may not be quoted; "" if none."""
    out = [f"#{i}" for i, row in enumerate(group.rows, start=1) if not row.eligibility.headline]
    if not out:
        return ""
    modes = ", ".join(sorted({row.mode for row in group.rows if not row.eligibility.headline}))
    which = "No row here is" if len(out) == len(group.rows) else f"{', '.join(out)}: not"
    return (
        f"{which} headline eligible (modes: {modes}); the reasons are listed under "
        "Headline eligibility."
    )


def mode(row: StackRow) -> str:
    """The run's mode, and the web it browsed when that was not the live web directly:
    ``recorded · replay 1a2b3c4d5e6f · 0.4% misses (3/812)``."""
    web = row.web
    if web.mode == "record":
        return f"{row.mode} · recording"
    if web.mode != "replay":
        return row.mode
    misses = (
        "misses unknown"
        if web.miss_rate is None
        else f"{web.miss_rate:.1%} misses ({web.n_misses}/{web.n_requests})"
    )
    return f"{row.mode} · replay {(web.archive_sha256 or 'unknown')[:12]} · {misses}"


def _matrix_stack(row: StackRow) -> str:
    """The browser side of a row: the backend after its agent (the backend itself for a
    browser with its own loop), with its engine, surface and search where they are set."""
    stack = row.stack
    browser = stack.backend.partition("/")[2] or stack.backend
    surface = f" · {stack.surface} surface" if stack.surface else ""
    search = f" · search {stack.search}" if stack.search != "native" else ""
    return f"{browser}{surface}{search} · {stack.engine}"


def agent_stack_matrix(
    group: SuiteComparison, short: bool = False
) -> tuple[list[str], list[list[str]]]:
    """benchcmp's grid: one line per browser stack, one column per agent (and model), each
    cell tokens per success first (``short``: abbreviated), then successes / attempts. A
    cell is one run: runs that
    share a cell (another run folder of the same pairing) are listed side by side, never
    pooled, and a different agent is always a different column."""
    models = {row.stack.model for row in group.rows}
    columns: list[str] = []
    lines: list[str] = []
    cells: dict[tuple[str, str], list[str]] = {}
    for row in group.rows:
        column = row.stack.agent + (f" · {row.stack.model or '?'}" if len(models) > 1 else "")
        line = _matrix_stack(row)
        columns += [column] if column not in columns else []
        lines += [line] if line not in lines else []
        tokens = (tokens_per_success_short if short else tokens_per_success)(row.tokens)
        cell = f"{tokens} ({row.n_successes}/{row.n_attempts})"
        cells.setdefault((line, column), []).append(cell)
    head = ["stack × agent", *columns]
    return head, [
        [line, *("; ".join(cells.get((line, c), [DASH])) for c in columns)] for line in lines
    ]


# --- resources ----------------------------------------------------------------------------------

NOT_MEASURED = "not measured"


def mb(value: float | None) -> str:
    """Bytes as MB (MiB), or "not measured"."""
    if value is None:
        return NOT_MEASURED
    return f"{value / (1 << 20):,.0f} MB" if value >= 10 << 20 else f"{value / (1 << 20):.1f} MB"


def cpu_seconds(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{value:.2f} s"


def peak_memory(r: ResourceSummary) -> str:
    """Median and p90 peak memory per attempt."""
    if r.peak_median_bytes is None:
        return NOT_MEASURED
    return f"{mb(r.peak_median_bytes)} / {mb(r.peak_p90_bytes)}"


def fit_at_once(r: ResourceSummary) -> str:
    if r.fit_at_once is None:
        return NOT_MEASURED if r.peak_p90_bytes is None else "machine unknown"
    return f"{r.fit_at_once:,} in {mb(r.machine_memory_bytes)}"


def fetched(r: ResourceSummary) -> str:
    """Requests, bytes and pages per attempt (medians)."""
    f = r.fetched
    if f is None:
        return NOT_MEASURED
    return (
        f"{count(f.requests_median)} req · {count((f.bytes_median or 0) / 1024)} KB · "
        f"{count(f.pages_median)} pages"
    )


def sampler_share(r: ResourceSummary) -> str:
    return DASH if r.sampler_cpu_share is None else pct(r.sampler_cpu_share)


def reply_tokens(tool: ToolStats) -> str:
    """A tool's reply tokens per call, median / p90, marked when they are estimates."""
    if not tool.n_replies_sized:
        return NOT_MEASURED
    if tool.n_replies_estimated == tool.n_replies_sized:
        mark = " (est.)"
    elif tool.n_replies_estimated:
        mark = f" ({tool.n_replies_estimated} of {tool.n_replies_sized} est.)"
    else:
        mark = ""
    return f"{count(tool.reply_tokens_median)} / {count(tool.reply_tokens_p90)}{mark}"


def machines(group: SuiteComparison) -> str:
    """The machines a group's resource figures come from, in one sentence."""
    measured = [r.resources for r in group.rows if r.resources is not None]
    kinds = sorted({r.machine for r in measured if r.machine})
    notes = sorted({r.peak_note for r in measured if r.peak_note})
    if not kinds:
        text = "No compared run records the machine its figures come from."
    elif len(kinds) == 1:
        text = f"Measured on {kinds[0]}; comparable only with figures from that kind of machine."
    else:
        text = f"Measured on {len(kinds)} kinds of machine ({'; '.join(kinds)}): not comparable."
    return " ".join([text, *(n[0].upper() + n[1:] + "." for n in notes)])

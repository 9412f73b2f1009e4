"""The comparison as Markdown, for pasting into agent-benchmarks.md, issues and reviews.

Stacks are numbered in the scoreboard (#1, #2, ...) and the wide tables (per task, by
group) use those numbers as column heads. Every value that comes from a run (task ids,
model names, reasons) goes through :func:`md`, so a ``|`` or a newline in it cannot
break a table.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_benchmarks.errors import InputError
from agent_benchmarks.report import fmt
from agent_benchmarks.report.schema import ComparisonReport, SuiteComparison

# Breakdowns with more groups than this (WebBench has hundreds of sites) stay in the JSON.
MAX_BREAKDOWN_GROUPS = 25
# Markers ``--update-doc`` replaces the text between.
BEGIN_MARKER = "<!-- agent-benchmarks compare: begin -->"
END_MARKER = "<!-- agent-benchmarks compare: end -->"


def md(value: object) -> str:
    text = str(value).replace("\r", " ").replace("\n", " ")
    return text.replace("|", "\\|")


def table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(md(h) for h in head) + " |"]
    lines.append("|" + "|".join("---" for _ in head) + "|")
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def render_group(group: SuiteComparison, heading_level: int = 2) -> list[str]:
    h = "#" * heading_level
    numbers = {row.key: f"#{i}" for i, row in enumerate(group.rows, start=1)}
    out = [f"{h} {group.suite}", "", md(fmt.view_note(group.view)), ""]
    banner = fmt.not_results(group)
    if banner:
        out += [f"> **Not benchmark results.** {md(banner)}", ""]
    out += table(
        [
            "#",
            "stack (backend · engine · model)",
            "mode",
            "tasks × attempts",
            fmt.success_head(group.view),
            "tokens / success",
            "cost / success",
            "cost / task (incl. failures)",
            "median time",
            "p90 time",
            "median tool calls",
            "timeouts",
            "errors",
            "contaminated",
            "refused calls",
            "leak hits",
            "composite",
            "headline eligible",
        ],
        [
            [
                numbers[row.key],
                row.key,
                fmt.mode(row),
                f"{row.n_tasks} × {row.attempts_per_task_min}"
                + (
                    f"–{row.attempts_per_task_max}"
                    if row.attempts_per_task_max != row.attempts_per_task_min
                    else ""
                ),
                f"{row.n_successes}/{row.n_attempts} = {fmt.interval(row.success)}",
                fmt.tokens_per_success(row.tokens),
                fmt.cost_per_success(row.cost),
                fmt.cost_per_attempt(row.cost),
                fmt.seconds(row.duration_median_s),
                fmt.seconds(row.duration_p90_s),
                fmt.count(row.tool_calls_median),
                row.n_timeouts,
                fmt.errors(row),
                row.n_contaminated,
                fmt.refused_calls(row),
                len(row.leak.hits),
                fmt.composite(row.composite),
                fmt.eligible(row.eligibility),
            ]
            for row in group.rows
        ],
    )
    info = group.composite
    weights = ", ".join(f"{name} {w:.2f}" for name, w in info.weights.items())
    out.append(f"Composite weights: {weights} (each normalised across these rows).")
    for name, why in info.left_out.items():
        out.append(f"Left out of the composite: {name}, because {md(why)}.")
    if group.overall_winner is not None:
        w = group.overall_winner
        tie = f" (tied with {md(', '.join(w.tied_with))})" if w.tied_with else ""
        out.append(f"Best composite: **{md(w.key)}** ({w.composite:.3f}){tie}.")
    out.append("")
    out += [f"{h}# Agent × stack: tokens per success (successes / attempts)", ""]
    out += table(*fmt.agent_stack_matrix(group))
    if any(w.n_candidates > 1 for w in group.winners):
        out += [f"{h}# Winner per agent and model", ""]
        out += table(
            ["agent", "model", "winner", "composite", "stacks compared"],
            [
                [w.agent, w.model or "?", w.key, f"{w.composite:.3f}", w.n_candidates]
                for w in group.winners
            ],
        )
    out += [f"{h}# Headline eligibility", "", md(group.headline_rule), ""]
    for row in group.rows:
        out.append(
            f"- {numbers[row.key]} {md(row.key)}: headline eligible: "
            f"**{fmt.eligible(row.eligibility)}**"
        )
        out += [f"  - {r.code}: {md(r.message)}" for r in row.eligibility.reasons]
        per_task = "yes" if row.eligibility.per_task_chart else "no"
        extra = "; ".join(md(r.message) for r in row.eligibility.per_task_reasons)
        out.append(f"  - per-task chart eligible: {per_task}" + (f" ({extra})" if extra else ""))
    out.append("")
    out += resources_section(group, numbers, h)
    if any(row.attempts_per_task_min > 1 for row in group.rows):
        out += [f"{h}# Repeated attempts: pass@k and pass^k", ""]
        out += table(
            ["#", "k", "pass@k", "pass^k"],
            [
                [numbers[row.key], k, fmt.pct(row.pass_at_k[k]), fmt.pct(row.pass_hat_k[k])]
                for row in group.rows
                for k in row.pass_at_k
            ],
        )
    if group.paired:
        out += [f"{h}# Paired differences (per task, same tasks)", ""]
        out += table(
            ["a", "b", "common tasks", "success a − b (95% CI)", "verdict"],
            [
                [
                    numbers[p.a],
                    numbers[p.b],
                    p.n_common_tasks,
                    fmt.signed_interval(p.diff),
                    p.verdict.replace(p.a, numbers[p.a]).replace(p.b, numbers[p.b]),
                ]
                for p in group.paired
            ],
        )
    keys = [row.key for row in group.rows]
    out += [f"{h}# Per task", "", "Solved/attempts · median time · tokens per attempt.", ""]
    out += table(
        ["task", "group", *(numbers[k] for k in keys)],
        [
            [
                t.task_id,
                " / ".join(t.fields.values()),
                *(fmt.cell(t.cells.get(k)) for k in keys),
            ]
            for t in group.tasks
        ],
    )
    for breakdown in group.breakdowns:
        if len(breakdown.groups) > MAX_BREAKDOWN_GROUPS:
            out += [
                f"By {breakdown.field}: {len(breakdown.groups)} groups (see the JSON output).",
                "",
            ]
            continue
        out += [f"{h}# By {breakdown.field}", ""]
        out += table(
            [breakdown.field, *(numbers[k] for k in keys)],
            [
                [
                    value,
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
    out += [f"{h}# Tool calls: latency and throughput", ""]
    out += table(
        ["#", "calls", "median ms", "p90 ms", "calls per minute of attempt time"],
        [
            [
                numbers[d.key],
                d.n_calls,
                fmt.ms(d.latency_median_ms),
                fmt.ms(d.latency_p90_ms),
                fmt.count(d.calls_per_minute),
            ]
            for d in group.diagnostics
        ],
    )
    out += table(
        list(fmt.TOOL_HEAD),
        [
            [
                numbers[d.key],
                t.tool,
                t.n_calls,
                t.n_errors,
                fmt.ms(t.latency_median_ms),
                fmt.ms(t.latency_p90_ms),
                fmt.count(t.calls_per_minute),
                fmt.reply_tokens(t),
            ]
            for d in group.diagnostics
            for t in d.tools
        ],
    )
    out += [f"{h}# Leak audit", ""]
    out += table(
        ["#", "hits", "flagged tasks", "accuracy", "accuracy, flagged counted wrong"],
        [
            [
                numbers[row.key],
                len(row.leak.hits),
                ", ".join(row.leak.flagged_tasks) or "none",
                fmt.pct(row.leak.accuracy_strict),
                fmt.pct(row.leak.accuracy_flagged_wrong),
            ]
            for row in group.rows
        ],
    )
    hits = [(row.key, hit) for row in group.rows for hit in row.leak.hits]
    if hits:
        out += table(
            ["#", "task", "attempt", "call", "tool", "where", "kind", "value"],
            [
                [
                    numbers[k],
                    h_.task_id,
                    h_.attempt,
                    h_.call_index,
                    h_.tool,
                    h_.field,
                    h_.kind,
                    h_.value,
                ]
                for k, h_ in hits
            ],
        )
    return out


def resources_section(group: SuiteComparison, numbers: dict[str, str], h: str) -> list[str]:
    """What each stack cost the machine: its memory, CPU and page weight, and its roles'."""
    out = [f"{h}# Resources: memory, CPU and page weight", "", md(fmt.machines(group)), ""]
    out += table(
        fmt.RESOURCE_HEAD,
        [[numbers[row.key], row.key, *fmt.resource_cells(row)] for row in group.rows],
    )
    roles = [[numbers[row.key], *cells] for row in group.rows for cells in fmt.role_cells(row)]
    if roles:
        out += table(fmt.ROLE_HEAD, roles)
    return out


def render_markdown(report: ComparisonReport, heading_level: int = 2) -> str:
    out: list[str] = []
    for group in report.groups:
        out += render_group(group, heading_level)
    out.append(
        f"Generated {report.generated_at} by agent-benchmarks {report.harness_version} "
        f"(`agent-benchmarks compare`; bootstrap over tasks, {report.resamples:,} resamples, "
        f"seed {report.seed}, {report.confidence:.0%} intervals) from: "
        + ", ".join(f"`{md(p)}`" for p in report.inputs)
        + "."
    )
    if report.warnings:
        out += ["", "Warnings:", ""] + [f"- {md(w)}" for w in report.warnings]
    return "\n".join(out) + "\n"


def splice(document: str, block: str, where: str) -> str:
    """Replace the text between the compare markers in ``document`` with ``block``."""
    begin, end = document.find(BEGIN_MARKER), document.find(END_MARKER)
    if begin < 0 or end < begin:
        raise InputError(
            f"{where}: no `{BEGIN_MARKER}` ... `{END_MARKER}` block to replace; add the two "
            "markers where the tables belong"
        )
    return document[: begin + len(BEGIN_MARKER)] + "\n" + block + document[end:]

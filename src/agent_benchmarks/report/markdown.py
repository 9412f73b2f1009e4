"""The comparison as Markdown, for pasting into agent-benchmarks.md, issues and reviews.

Stacks are numbered in the scoreboard (#1, #2, ...) and the wide tables (per task, by
group) use those numbers as column heads. Every value that comes from a run (task ids,
model names, reasons) goes through :func:`md`, so a ``|`` or a newline in it cannot
break a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.report import fmt, tables
from agent_benchmarks.report.schema import ComparisonReport, SuiteComparison

# Breakdowns with more groups than this (WebBench has hundreds of sites) stay in the JSON.
MAX_BREAKDOWN_GROUPS = 25
# Markers ``--update-doc`` replaces the text between.
BEGIN_MARKER = "<!-- agent-benchmarks compare: begin -->"
END_MARKER = "<!-- agent-benchmarks compare: end -->"


def md(value: object) -> str:
    text = str(value).replace("\r", " ").replace("\n", " ")
    return text.replace("|", "\\|")


def table(spec: tables.Table[Any]) -> list[str]:
    """A table of the column model, every column in full (Markdown has the room)."""
    return plain_table(spec.heads, spec.rows())


def plain_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(md(h) for h in head) + " |"]
    lines.append("|" + "|".join("---" for _ in head) + "|")
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _titled(spec: tables.Table[Any], h: str) -> list[str]:
    return [f"{h}# {spec.title}", "", *table(spec)]


def render_group(group: SuiteComparison, heading_level: int = 2) -> list[str]:
    h = "#" * heading_level
    out = [f"{h} {group.suite}", "", md(fmt.view_note(group.view)), ""]
    banner = fmt.not_results(group)
    if banner:
        out += [f"> **Not benchmark results.** {md(banner)}", ""]
    out += table(tables.scoreboard(group))
    out += [md(note) for note in tables.composite_notes(group)]
    out.append("")
    out += _titled(tables.matrix(group), h)
    if any(w.n_candidates > 1 for w in group.winners):
        out += _titled(tables.winners(group), h)
    out += [f"{h}# Headline eligibility", "", md(group.headline_rule), ""]
    numbers = tables.numbers(group)
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
    if group.recovery:
        out += [f"{h}# Recovery under injected faults", "", md(group.recovery_rule), ""]
        out += table(tables.recovery(group))
    out += resources_section(group, h)
    if any(row.attempts_per_task_min > 1 for row in group.rows):
        out += _titled(tables.pass_at_k(group), h)
    if group.paired:
        out += _titled(tables.paired(group), h)
    out += [f"{h}# Per task", "", "Solved/attempts · median time · tokens per attempt.", ""]
    out += table(tables.per_task(group))
    for index, breakdown in enumerate(group.breakdowns):
        if len(breakdown.groups) > MAX_BREAKDOWN_GROUPS:
            out += [
                f"By {breakdown.field}: {len(breakdown.groups)} groups (see the JSON output).",
                "",
            ]
            continue
        out += _titled(tables.breakdown(group, index), h)
    out += _titled(tables.latency(group), h)
    out += table(tables.tools(group))
    out += _titled(tables.leaks(group), h)
    if any(row.leak.hits for row in group.rows):
        out += table(tables.group_hits(group))
    return out


def resources_section(group: SuiteComparison, h: str) -> list[str]:
    """What each stack cost the machine: its memory, CPU and page weight, and its roles'."""
    spec = tables.resources(group)
    out = [f"{h}# {spec.title}", "", md(fmt.machines(group)), "", *table(spec)]
    roles = tables.roles(group)
    if roles.items:
        out += table(roles)
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

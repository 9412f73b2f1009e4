"""How one attempt reads on a page: its grade line, its tool calls' arguments and reply
sizes, its outputs cut to a preview. Shared by the report's traces and the run browser's
attempt pages (the templates call these)."""

from __future__ import annotations

import json

from agent_benchmarks.records.schema import PredictionRow, TaskScore, ToolCall
from agent_benchmarks.report import fmt

MAX_ARG_CHARS = 300
MAX_ANSWER_CHARS = 2_000
# A tool output longer than this shows its start, with the whole of it one click away.
PREVIEW_CHARS = 1_500


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def args_text(call: ToolCall, limit: int | None = None) -> str:
    text = json.dumps(call.args, ensure_ascii=False, default=str)
    return text if limit is None else short(text, limit)


def reply_size(call: ToolCall) -> str:
    """The reply's size: characters and tokens (estimated ones marked)."""
    if call.output_chars is None:
        return ""
    tokens = "" if call.output_tokens is None else f", {fmt.count(call.output_tokens)} tokens"
    estimated = " (est.)" if tokens and call.output_tokens_estimated else ""
    return f"{fmt.count(call.output_chars)} chars{tokens}{estimated}"


def grade_tail(entry: TaskScore, row: PredictionRow | None) -> str:
    """What follows "correct"/"wrong": the score, status, error class, time, failed clauses."""
    text = f"(score {entry.score:.2f}), status {entry.status}"
    if entry.error_class:
        text += f", {entry.error_class}"
    if row is not None:
        text += f", {fmt.seconds(row.duration_s)}"
    failed = entry.details.get("failed") or []
    if failed:
        text += f"; failed clauses: {', '.join(map(str, failed))}"
    return text


def preview(text: str) -> str | None:
    """The start of a long output, or None when it is short enough to show whole."""
    return None if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def kept_note(call: ToolCall) -> str:
    """Whether the row kept the whole reply: backends cut long outputs before writing."""
    if call.output is None:
        return "the row keeps no output for this call"
    if call.output_chars is not None and call.output_chars > len(call.output):
        return f"the row keeps {len(call.output):,} of the reply's {call.output_chars:,} characters"
    return ""


def pretty_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def episode_notes(row: PredictionRow) -> list[str]:
    """What the harness did in the episode: its injected fault, the budget that ended it,
    and the no-progress signal."""
    notes = []
    fault = row.details.get("fault")
    if isinstance(fault, dict) and fault.get("kind") not in (None, "none"):
        if fault.get("fired"):
            when = fault.get("fired_after_s")
            notes.append(
                f"fault {fault['kind']} fired after call {fault.get('fired_at_call')}"
                + (f" ({when} s in)" if when is not None else "")
            )
        else:
            notes.append(f"fault {fault['kind']} did not fire: {fault.get('why', '')}")
    meter = row.details.get("meter")
    if isinstance(meter, dict) and meter.get("budget_exhausted"):
        notes.append(f"ended by the budget ({meter['budget_exhausted']})")
    progress = row.details.get("progress")
    if isinstance(progress, dict) and progress.get("no_progress"):
        signals = ", ".join(
            f"{name} {progress.get(name)}" for name in progress.get("signals") or ()
        )
        notes.append(f"no progress: {signals}")
    return notes

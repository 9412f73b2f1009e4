"""Reading ``codex exec --json``: its JSONL events into the trace, usage and answer a row
holds, and the calls Codex refused (which its event stream leaves out) from its rollout.

Codex 0.169.0 prints ``thread.started``, ``turn.started``, ``item.started`` /
``item.completed`` (items: ``agent_message``, ``reasoning``, ``mcp_tool_call``,
``command_execution``, ``file_change``, ``web_search``, ``todo_list``, ``error``, ...),
``turn.completed`` with the turn's usage, or ``turn.failed`` / ``error``. Those events carry
no time. A tool call the model makes that Codex does not offer never becomes an item:
Codex answers it with ``unsupported call: <name>`` and logs that line on stderr, without
its arguments.

Codex's rollout (the session file it writes unless ``--ephemeral``; one JSON object a line)
has what the events leave out, in the order the model made its calls: every
``function_call`` (name, MCP namespace, arguments, call id) and its
``function_call_output`` (a refused call's is ``unsupported call: <name>``), and for each
MCP call an ``item_completed`` event with Codex's own ``duration`` of the call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import json_records
from agent_benchmarks.records.schema import ToolCall, Usage

OUTPUT_CHARS = 8_000  # a tool's text kept in the trace, as the other backends keep it
_UNSUPPORTED = re.compile(r"unsupported call: (\S+)")


@dataclass
class CodexRun:
    """What one ``codex exec --json`` said."""

    thread_id: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    answer: str | None = None  # the last agent message
    usage: Usage = field(default_factory=Usage)
    failure: str | None = None  # turn.failed's or a stream error's message
    notices: list[str] = field(default_factory=list)  # Codex's own error items (warnings)
    problems: list[str] = field(default_factory=list)  # lines that were not events


def _text_of(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    parts = result.get("content") or []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def _call_of(item: dict[str, Any]) -> ToolCall | None:
    """A completed item that is a tool call, as the trace records it (None otherwise)."""
    kind = item.get("type")
    if kind == "mcp_tool_call":
        error = item.get("error")
        failed = item.get("status") == "failed"
        message = error.get("message") if isinstance(error, dict) else None
        output = _text_of(item.get("result"))
        return ToolCall(
            name=f"mcp__{item.get('server')}__{item.get('tool')}",
            args=item.get("arguments") if isinstance(item.get("arguments"), dict) else {},
            error=(message or "failed") if failed or message else None,
            result_bytes=len(output.encode()),
            output=output[:OUTPUT_CHARS],
            output_chars=len(output),
        )
    if kind == "command_execution":
        output = str(item.get("aggregated_output") or "")
        return ToolCall(
            name="command_execution",
            args={"command": item.get("command")},
            error=None if item.get("exit_code") in (0, None) else f"exit {item.get('exit_code')}",
            output=output[:OUTPUT_CHARS],
            output_chars=len(output),
        )
    if kind in ("file_change", "web_search", "collab_tool_call", "image_view"):
        args = {k: v for k, v in item.items() if k not in ("id", "type", "status")}
        return ToolCall(name=kind, args=args)
    return None


def parse_events(stdout: str) -> CodexRun:
    run = CodexRun()
    for number, event in json_records(stdout.splitlines(), run.problems):
        kind = event.get("type")
        if kind == "thread.started":
            run.thread_id = event.get("thread_id")
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "agent_message":
                run.answer = str(item.get("text") or "")
            elif item.get("type") == "error":
                run.notices.append(str(item.get("message") or ""))
            elif (call := _call_of(item)) is not None:
                run.calls.append(call)
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            cached = int(usage.get("cached_input_tokens") or 0)
            written = int(usage.get("cache_write_input_tokens") or 0)
            run.usage = Usage(
                input_tokens=run.usage.input_tokens
                + int(usage.get("input_tokens") or 0)
                - cached
                - written,
                cache_read_tokens=run.usage.cache_read_tokens + cached,
                cache_write_tokens=run.usage.cache_write_tokens + written,
                output_tokens=run.usage.output_tokens + int(usage.get("output_tokens") or 0),
                turns=run.usage.turns + 1,
            )
        elif kind in ("turn.failed", "error"):
            error = event.get("error") if kind == "turn.failed" else event
            message = error.get("message") if isinstance(error, dict) else None
            run.failure = str(message or kind)
        elif kind not in ("turn.started", "item.started", "item.updated"):
            run.problems.append(f"line {number}: unknown event {kind!r}")
    return run


def unsupported_calls(stderr: str) -> list[str]:
    """The names of the calls Codex refused as unsupported (not offered), in order."""
    return _UNSUPPORTED.findall(stderr)


REFUSED = "unsupported call: "  # Codex's answer to a call of a tool it does not offer


@dataclass
class RolloutCall:
    """One tool call as Codex's rollout has it."""

    name: str  # as the trace names it: mcp__<server>__<tool> for an MCP tool
    args: dict[str, Any]
    refused: bool  # Codex offers no such tool: it answered the model so, nothing ran
    latency_ms: float | None  # Codex's own time of an MCP call; None for any other


def read_rollout(path: Path) -> list[RolloutCall]:
    """The tool calls of a rollout file, in the order the model made them."""
    calls: dict[str, dict[str, Any]] = {}  # call id -> what is known of it, in order
    for _, record in json_records(path.read_text(encoding="utf-8").splitlines(), []):
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "function_call" and isinstance(payload.get("call_id"), str):
            name = str(payload.get("name") or "")
            namespace = payload.get("namespace")
            calls[payload["call_id"]] = {
                "name": f"{namespace}__{name}" if namespace else name,
                "asked": name,
                "args": _arguments(payload.get("arguments")),
            }
        elif kind == "function_call_output" and payload.get("call_id") in calls:
            calls[payload["call_id"]]["output"] = payload.get("output")
        elif kind == "item_completed" and isinstance(payload.get("item"), dict):
            item = payload["item"]
            known = calls.get(item.get("id"))
            if item.get("type") == "McpToolCall" and known is not None:
                known["name"] = f"mcp__{item.get('server')}__{item.get('tool')}"
                known["latency_ms"] = _duration_ms(item.get("duration"))
    return [
        RolloutCall(
            name=c["name"],
            args=c["args"],
            refused=c.get("output") == f"{REFUSED}{c['asked']}",
            latency_ms=c.get("latency_ms"),
        )
        for c in calls.values()
    ]


def _arguments(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return {"arguments": text}  # as the model wrote them, not JSON
    return value if isinstance(value, dict) else {"arguments": value}


def _duration_ms(duration: Any) -> float | None:
    """Codex's ``{"secs": S, "nanos": N}``, in milliseconds."""
    if not isinstance(duration, dict):
        return None
    return round(int(duration.get("secs") or 0) * 1000 + int(duration.get("nanos") or 0) / 1e6, 3)


def ordered_calls(
    ran: list[ToolCall], rollout: list[RolloutCall], refused_why: str
) -> list[ToolCall]:
    """The run's calls in the order the model made them: those that ran (from the events,
    with the rollout's latency where Codex measured one) and those Codex refused, each
    with its arguments. A call the events have and the rollout lacks goes last."""
    left = list(ran)
    ordered = []
    for call in rollout:
        if call.refused:
            ordered.append(ToolCall(name=call.name, args=call.args, error=refused_why))
            continue
        match = next((c for c in left if c.name == call.name and c.args == call.args), None)
        if match is None:
            continue  # never completed (the attempt was killed during it)
        left.remove(match)
        ordered.append(match.model_copy(update={"latency_ms": call.latency_ms}))
    return ordered + left

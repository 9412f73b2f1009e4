"""Reading what ``claude -p --output-format stream-json --verbose`` prints for one task.

stdout holds one JSON event a line:

``system``/``init``  first: ``tools`` (every tool name offered), ``mcp_servers``
                     (``[{name, status}]``), ``model``, ``claude_code_version``, ...
``assistant``        ``message`` (``id``, ``content`` blocks, ``usage``): a model response.
``user``             ``message.content``: ``tool_result`` blocks (``tool_use_id``,
                     ``content`` as a string or a list of blocks, ``is_error``) and a
                     ``timestamp``.
``result``           last: ``subtype``, ``is_error``, ``num_turns``, ``result`` (absent on
                     errors), ``total_cost_usd``, ``usage``, ``modelUsage`` (the counts and
                     ``costUSD`` per model id), ``permission_denials``, ``errors`` (error
                     subtypes only).

Facts checked against Claude Code 2.1.197 and 2.1.330 driven by a scripted model server
(the project's recordings under ``tests/fixtures/claude-code``, made by
``tests/fixtures/record.py``), on which this reader's choices rest:

* One model response becomes one ``assistant`` event per content block (text, then
  tool_use), each repeating the same ``message.id`` and ``usage``: summing events double
  counts, so responses are told apart by ``message.id``.
* That ``usage`` is the stream's opening snapshot: the input-side counts are final, but
  ``output_tokens`` is the placeholder (1) sent before any text. The ``result`` event's
  ``usage`` holds the true totals (its ``total_cost_usd`` is exactly those totals priced),
  so it is the source of usage whenever present; the per-response sums are the fallback
  for a killed run, with a problem saying their output count is a lower bound.
* ``user`` events carry a ``timestamp``. In 2.1.197 ``assistant`` events had none, so
  tool latency was None; in 2.1.330 they have one too, and a call's latency is the gap
  from its ``tool_use`` event to its ``tool_result`` event. It is None when either end
  lacks one.
* A tool the permissions did not allow is still a ``tool_use`` block: its ``tool_result``
  is an error ("Claude requested permissions to use mcp__lp__markdown, but you haven't
  granted it yet.") and the ``result`` event lists it in ``permission_denials``
  (``tool_name``, ``tool_use_id``, ``tool_input``). A ``--disallowed-tools`` tool is
  instead absent from ``init.tools`` and from the request: the model cannot even try it.
* A call Claude Code refuses never reaches a tool (2.1.330, recorded in
  ``tests/fixtures/claude-code/refused_calls``). A tool the session does not have (a
  built-in left out of ``--tools``, anything in ``--disallowed-tools``, an MCP tool the
  server lacks) gets an ``is_error`` tool_result reading ``<tool_use_error>Error: No such
  tool available: <name>...</tool_use_error>``. A tool offered but not allowed gets
  "Claude requested permissions to use <name>, but you haven't granted it yet.", the user
  event's ``tool_result_meta`` entry for the call says ``non_execution_kind``
  ``user-rejected``, and the result lists it in ``permission_denials``. A tool that ran and
  failed on its own (``goto`` of a port where nothing listens: "navigation failed:
  CouldntConnect") is ``is_error`` too, but its meta entry says the permission was
  ``accept``-ed and the text is the tool's. :attr:`ClaudeRun.refusals` holds the first
  two kinds only.
* ``--max-turns 1`` ends with subtype ``error_max_turns``, ``is_error`` true, no
  ``result`` text and ``num_turns`` 2 after a single model response: ``num_turns`` counts
  the turn that was refused, :attr:`Usage.turns` counts responses.
* ``init.model`` is the model id the run uses: an alias given with ``--model`` is already
  resolved there (2.1.330 runs ``sonnet`` as ``claude-sonnet-5-5``), and the requests name
  that id. ``modelUsage`` is keyed by the same ids.
* A killed process leaves no ``result`` event and possibly a torn last line; both are
  noted in :attr:`ClaudeRun.problems`, never raised, so the row keeps what was recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agent_benchmarks.backends.base import json_records
from agent_benchmarks.records.schema import ToolCall, Usage

# Claude Code's own lookup of deferred tool definitions: it reaches no page, so it does not
# take the agent outside the browser under test.
TOOL_SEARCH = "ToolSearch"

# The init fields worth keeping per row; the rest (slash commands, skills, agents, memory
# paths) describes the interactive CLI rather than this run.
_INIT_KEYS = (
    "session_id",
    "model",
    "claude_code_version",
    "permissionMode",
    "cwd",
    "tools",
    "mcp_servers",
)
# Wire name -> Usage field, in Usage's convention: input excludes both cache counts, which
# is also what Anthropic's input_tokens means, so no subtraction is needed.
_USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
    "output_tokens": "output_tokens",
}
# modelUsage's names for the same four counts.
_MODEL_USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "cacheReadInputTokens": "cache_read_tokens",
    "cacheCreationInputTokens": "cache_write_tokens",
    "outputTokens": "output_tokens",
}
_LOWER_BOUND = "usage summed from assistant events: their output_tokens is a lower bound"


@dataclass
class ClaudeRun:
    """One ``claude -p`` run as its stream-json output recorded it."""

    result_text: str | None = None
    subtype: str | None = None
    # True when the result event says so, and when there is no result event at all.
    is_error: bool = True
    num_turns: int | None = None
    total_cost_usd: float | None = None
    usage: Usage = field(default_factory=Usage)
    calls: list[ToolCall] = field(default_factory=list)
    permission_denials: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the result event's ``errors``
    init: dict[str, Any] | None = None
    model: str | None = None  # the model id the run used (init's; an alias resolved)
    # The result's usage per model id (modelUsage); empty without a result event.
    model_usage: dict[str, Usage] = field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Index in ``calls`` -> why Claude Code refused that call (it never ran).
    refusals: dict[int, str] = field(default_factory=dict)


@dataclass
class Audit:
    """Whether an agent used anything besides the browser it was given: calls outside it
    that ran (``foreign_calls``, which contaminate) and those Claude Code refused
    (``refused_calls``: tried, but nothing reached a tool)."""

    contaminated: bool
    foreign_calls: list[dict[str, Any]] = field(default_factory=list)
    refused_calls: list[dict[str, Any]] = field(default_factory=list)


def _int(value: Any) -> int | None:
    # bool is an int subclass; a true/false where a count belongs is a malformed event.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _counts(usage: Any) -> dict[str, int]:
    usage = usage if isinstance(usage, dict) else {}
    return {name: _int(usage.get(key)) or 0 for key, name in _USAGE_KEYS.items()}


def _timestamp(event: dict[str, Any]) -> datetime | None:
    value = event.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        # fromisoformat only accepts a "Z" suffix from Python 3.11 on, which is our floor.
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    # A naive time is taken as UTC so that it can be subtracted from an aware one.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated {len(text) - limit} chars]"


def _result_text(content: Any) -> str:
    """A tool_result's content as the model read it: a string, or a list of blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            # An image (a screenshot tool) has no text; a marker keeps the reader aware of it.
            parts.append(f"[{block.get('type')} block]")
    return "\n".join(parts)


# Claude Code's own words when it refuses a call (2.1.330); a tool's own error never comes
# wrapped in <tool_use_error>, and the permission sentence is Claude Code's.
_TOOL_USE_ERROR = re.compile(r"\A<tool_use_error>(.*)</tool_use_error>\Z", re.DOTALL)
_NO_SUCH_TOOL = "No such tool available: "
_NOT_GRANTED = "Claude requested permissions to use "
_IN_DENIALS = "listed in the result's permission_denials"


def _refusal(block: dict[str, Any], name: str, text: str, meta: dict[str, Any]) -> str | None:
    """Why Claude Code refused this call, from its tool_result and the event's
    ``tool_result_meta`` entry for it; None when the call reached its tool."""
    if block.get("is_error") is not True:
        return None
    decision = meta.get("permission_decision")
    if isinstance(decision, dict) and decision.get("decision") == "accept":
        return None  # Claude Code let it run: its error is the tool's own, whatever it says
    kind = meta.get("non_execution_kind")
    wrapped = _TOOL_USE_ERROR.match(text.strip())
    message = wrapped.group(1).strip().removeprefix("Error: ") if wrapped else text.strip()
    if isinstance(kind, str) and kind:
        return f"{message} ({kind})" if message else kind
    if wrapped and message.startswith(_NO_SUCH_TOOL + name):
        return message
    if message.startswith(f"{_NOT_GRANTED}{name},"):
        return message
    return None


def _result_meta(event: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A user event's ``tool_result_meta``, by tool_use id."""
    entries = event.get("tool_result_meta")
    if not isinstance(entries, list):
        return {}
    return {str(m.get("id")): m for m in entries if isinstance(m, dict)}


def parse_stream(text: str, max_output_chars: int = 8000) -> ClaudeRun:
    """Summarise one run's stream-json stdout; problems are collected, never raised."""
    run = ClaudeRun()
    calls = _OpenCalls()
    # Per response (message.id), the largest of each count among its repeated events, so
    # a later event carrying the final output count (never seen, but harmless) would win.
    responses: dict[str, dict[str, int]] = {}
    result: dict[str, Any] | None = None
    for number, event in json_records(text.splitlines(), run.problems):
        kind = event.get("type")
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        content = message.get("content") if isinstance(message.get("content"), list) else []
        if kind == "system" and event.get("subtype") == "init":
            _read_init(run, event)
        elif kind == "assistant":
            _count_response(responses, message, number)
            calls.start(run, content, _timestamp(event))
        elif kind == "user":
            calls.finish(run, event, content, number, max_output_chars)
        elif kind == "result":
            result = event
        # Anything else (other system subtypes, rate-limit notices, partial-message events)
        # says nothing about answer, usage or tool calls.

    calls.note_unanswered(run)
    if run.init is None:
        run.problems.append("no system/init event")
    summed = dict.fromkeys(_USAGE_KEYS.values(), 0)
    for counts in responses.values():
        for name, count in counts.items():
            summed[name] += count
    run.usage = Usage(**summed, turns=len(responses))
    if result is None:
        run.problems.append("no result event (claude killed before finishing?)")
        run.problems.append(_LOWER_BOUND)
        return run
    _read_result(run, result, calls.started)
    _use_result_usage(run, result.get("usage"), summed, len(responses))
    return run


def _read_init(run: ClaudeRun, event: dict[str, Any]) -> None:
    """What the system/init event says of the session: its model and MCP servers."""
    run.init = {k: event[k] for k in _INIT_KEYS if k in event}
    model = event.get("model")
    run.model = model if isinstance(model, str) and model else None
    servers = event.get("mcp_servers")
    run.mcp_servers = [
        {"name": s.get("name"), "status": s.get("status")}
        for s in (servers if isinstance(servers, list) else [])
        if isinstance(s, dict)
    ]


def _count_response(
    responses: dict[str, dict[str, int]], message: dict[str, Any], number: int
) -> None:
    """Fold an assistant event's usage into its response's counts (see parse_stream)."""
    msg_id = message.get("id")
    key = msg_id if isinstance(msg_id, str) else f"line {number}"
    counts = _counts(message.get("usage"))
    seen = responses.setdefault(key, counts)
    for name, count in counts.items():
        seen[name] = max(seen[name], count)


class _OpenCalls:
    """The run's tool calls by tool_use id, from their tool_use block to their tool_result."""

    def __init__(self) -> None:
        self.started: dict[str, tuple[int, datetime | None]] = {}  # id -> (call index, time)
        self.answered: set[str] = set()

    def start(self, run: ClaudeRun, content: list[Any], at: datetime | None) -> None:
        """Add an assistant event's tool_use blocks to ``run.calls``."""
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            use_id = str(block.get("id"))
            # Skipped if already seen, so that an event repeating earlier blocks of its
            # message cannot list one call twice.
            if use_id in self.started or not isinstance(block.get("name"), str):
                continue
            args = block.get("input")
            run.calls.append(
                ToolCall(name=block["name"], args=args if isinstance(args, dict) else {})
            )
            self.started[use_id] = (len(run.calls) - 1, at)

    def finish(
        self,
        run: ClaudeRun,
        event: dict[str, Any],
        content: list[Any],
        number: int,
        max_output_chars: int,
    ) -> None:
        """Complete the calls a user event's tool_result blocks answer: their output,
        error, latency and whether Claude Code refused them."""
        metas = _result_meta(event)
        ended = _timestamp(event)
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            use_id = str(block.get("tool_use_id"))
            if use_id not in self.started or use_id in self.answered:
                run.problems.append(f"line {number}: unexpected tool_result for {use_id}")
                continue
            self.answered.add(use_id)
            index, begun = self.started[use_id]
            body = _result_text(block.get("content"))
            refusal = _refusal(block, run.calls[index].name, body, metas.get(use_id, {}))
            if refusal is not None:
                run.refusals[index] = refusal
            output = _truncate(body, max_output_chars)
            latency = (ended - begun).total_seconds() * 1000 if begun and ended else None
            run.calls[index] = run.calls[index].model_copy(
                update={
                    "latency_ms": latency,
                    "error": (output or "error") if block.get("is_error") is True else None,
                    "result_bytes": len(body.encode()),
                    "output": output,
                    "output_chars": len(body),
                }
            )

    def note_unanswered(self, run: ClaudeRun) -> None:
        for use_id, (index, _) in self.started.items():
            if use_id not in self.answered:
                run.problems.append(
                    f"tool_use {run.calls[index].name} ({use_id}) has no tool_result"
                )


def _read_result(
    run: ClaudeRun, result: dict[str, Any], started: dict[str, tuple[int, datetime | None]]
) -> None:
    """What the result event says of the run's end: its answer, status, cost, denials."""
    text_value = result.get("result")
    run.result_text = text_value if isinstance(text_value, str) else None
    subtype = result.get("subtype")
    run.subtype = subtype if isinstance(subtype, str) else None
    flag = result.get("is_error")
    run.is_error = flag if isinstance(flag, bool) else run.subtype != "success"
    run.num_turns = _int(result.get("num_turns"))
    cost = result.get("total_cost_usd")
    is_number = isinstance(cost, int | float) and not isinstance(cost, bool)
    run.total_cost_usd = float(cost) if is_number else None
    denials = result.get("permission_denials")
    if isinstance(denials, list):
        run.permission_denials = [d for d in denials if isinstance(d, dict)]
    for denial in run.permission_denials:
        # A denied call is refused even when its tool_result is missing (a torn stream).
        begun = started.get(str(denial.get("tool_use_id")))
        if begun is not None:
            run.refusals.setdefault(begun[0], _IN_DENIALS)
    errors = result.get("errors")
    run.errors = [str(e) for e in errors] if isinstance(errors, list) else []
    run.model_usage = _model_usage(result.get("modelUsage"))


def _use_result_usage(run: ClaudeRun, usage: Any, summed: dict[str, int], n_responses: int) -> None:
    """The result event's usage as the run's (the true totals), checked against the sum
    over responses; without it, the sum stays and is said to be a lower bound."""
    if not isinstance(usage, dict):
        run.problems.append(_LOWER_BOUND)
        return
    totals = _counts(usage)
    # The input side is final in both sources; a mismatch means the result counts calls
    # the stream did not show (or misses some), which a reader of the row should know.
    input_side = ("input_tokens", "cache_read_tokens", "cache_write_tokens")
    if n_responses and any(totals[k] != summed[k] for k in input_side):
        run.problems.append(
            "result usage "
            + ", ".join(f"{k}={totals[k]}" for k in input_side)
            + " differs from the sum over assistant responses "
            + ", ".join(f"{k}={summed[k]}" for k in input_side)
        )
    # cost_usd stays None: the harness prices usage with its own versioned table.
    run.usage = Usage(**totals, turns=n_responses)


def _model_usage(value: Any) -> dict[str, Usage]:
    """``modelUsage`` as Usage per model id (malformed entries left out)."""
    if not isinstance(value, dict):
        return {}
    return {
        model: Usage(
            **{name: _int(counts.get(key)) or 0 for key, name in _MODEL_USAGE_KEYS.items()}
        )
        for model, counts in value.items()
        if isinstance(model, str) and isinstance(counts, dict)
    }


def audit_calls(
    calls: list[ToolCall],
    server_name: str,
    allowed_tools: set[str] | None = None,
    built_ins: set[str] = frozenset(),
    refusals: Mapping[int, str] | None = None,
) -> Audit:
    """Sort every call outside ``mcp__<server_name>__<tool>`` (``<tool>`` in
    ``allowed_tools`` when given), ``ToolSearch`` and the ``built_ins`` the run's surface
    offers (upstream's: TodoWrite, LS) excepted, into refused (its index in ``refusals``,
    :attr:`ClaudeRun.refusals`: nothing ran, so nothing left the browser) and foreign (it
    ran, or may have: a call without a tool_result is not known to be refused)."""
    prefix = f"mcp__{server_name}__"
    refusals = refusals or {}
    foreign, refused = [], []
    for index, call in enumerate(calls):
        if call.name == TOOL_SEARCH or call.name in built_ins:
            continue
        tool = call.name.removeprefix(prefix) if call.name.startswith(prefix) else None
        if tool is not None and (allowed_tools is None or tool in allowed_tools):
            continue
        if index in refusals:
            refused.append({"name": call.name, "args": call.args, "why": refusals[index]})
        else:
            foreign.append({"name": call.name, "args": call.args})
    return Audit(contaminated=bool(foreign), foreign_calls=foreign, refused_calls=refused)

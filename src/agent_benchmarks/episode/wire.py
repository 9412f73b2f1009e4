"""The model meter's reading of the three wire protocols the agents speak.

Anthropic Messages (Claude Code, Lightpanda's anthropic provider), OpenAI Responses (Codex)
and OpenAI chat completions (agent-browser's chat, Lightpanda's OpenAI-compatible provider),
each as one JSON body or as a server-sent event stream. The meter needs three facts of an
exchange, and nothing else:

- how many tool calls the request's history holds (the calls the agent has made so far:
  a request carries the whole conversation, so the count survives a retried request);
- how many tool calls the reply asks for, and by which names;
- the tokens the reply was billed (in :class:`~agent_benchmarks.records.schema.Usage`'s
  convention: input without cache reads and writes) and the model that answered.

A body this module cannot read is reported as such (``readable`` False), never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_benchmarks.records.schema import Usage

Protocol = Literal["anthropic", "openai_responses", "openai_chat"]


def protocol_of(path: str) -> Protocol | None:
    """The protocol of a model request by its path (query left out); None for any other
    request (model lists, token counts, probes), which the meter passes through."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "openai_responses"
    if path.endswith("/chat/completions"):
        return "openai_chat"
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def calls_in_request(protocol: Protocol, body: dict[str, Any]) -> int:
    """Tool calls the agent made so far, as the request's history shows them."""
    if protocol == "anthropic":
        return sum(
            1
            for message in _list(body.get("messages"))
            if _dict(message).get("role") == "assistant"
            for block in _list(_dict(message).get("content"))
            if _dict(block).get("type") == "tool_use"
        )
    if protocol == "openai_responses":
        items = body.get("input")
        return sum(1 for item in _list(items) if _dict(item).get("type") in _RESPONSES_CALL_ITEMS)
    return sum(
        len(_list(_dict(message).get("tool_calls")))
        for message in _list(body.get("messages"))
        if _dict(message).get("role") == "assistant"
    )


# Responses API output items that are a tool call the client runs.
_RESPONSES_CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})


def adjust_request(protocol: Protocol, body: dict[str, Any], temperature: float | None) -> bool:
    """Set the run's temperature on the request, and ask a streamed chat completion for its
    usage (agent-browser and Lightpanda do not, and the budget counts tokens). True if the
    body changed."""
    changed = False
    if temperature is not None and body.get("temperature") != temperature:
        body["temperature"] = temperature
        changed = True
    if protocol == "openai_chat" and body.get("stream"):
        options = _dict(body.get("stream_options"))
        if options.get("include_usage") is not True:
            body["stream_options"] = {**options, "include_usage": True}
            changed = True
    return changed


@dataclass
class ReplyFacts:
    """What the meter read of one model reply."""

    readable: bool = True
    calls: list[str] = field(default_factory=list)  # the tool names asked for, in order
    usage: Usage | None = None  # None: the reply reported none
    model: str | None = None

    @property
    def n_calls(self) -> int:
        return len(self.calls)


def read_reply(protocol: Protocol, content_type: str, body: bytes) -> ReplyFacts:
    """The facts of a successful reply (HTTP 2xx), streamed or not."""
    try:
        if "text/event-stream" in content_type:
            events = sse_events(body)
            if protocol == "anthropic":
                return _anthropic_stream(events)
            if protocol == "openai_responses":
                return _responses_stream(events)
            return _chat_stream(events)
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return ReplyFacts(readable=False)
    if not isinstance(payload, dict):
        return ReplyFacts(readable=False)
    if protocol == "anthropic":
        return _anthropic_message(payload)
    if protocol == "openai_responses":
        return _responses_object(payload)
    return _chat_object(payload)


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The JSON ``data`` of each event of a server-sent event stream (``[DONE]`` and
    comments skipped); ValueError for a data line that is not JSON."""
    events = []
    for line in body.decode("utf-8").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        event = json.loads(data)
        if isinstance(event, dict):
            events.append(event)
    return events


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _anthropic_usage(usage: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=_int(usage.get("input_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        turns=1,
    )


def _anthropic_message(message: dict[str, Any]) -> ReplyFacts:
    calls = [
        str(_dict(block).get("name"))
        for block in _list(message.get("content"))
        if _dict(block).get("type") == "tool_use"
    ]
    usage = message.get("usage")
    return ReplyFacts(
        calls=calls,
        usage=_anthropic_usage(usage) if isinstance(usage, dict) else None,
        model=message.get("model"),
    )


def _anthropic_stream(events: list[dict[str, Any]]) -> ReplyFacts:
    facts = ReplyFacts()
    usage: dict[str, Any] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = _dict(event.get("message"))
            facts.model = message.get("model")
            usage |= _dict(message.get("usage"))
        elif kind == "content_block_start":
            block = _dict(event.get("content_block"))
            if block.get("type") == "tool_use":
                facts.calls.append(str(block.get("name")))
        elif kind == "message_delta":
            # The final counts (output tokens, and input where the API revises it).
            usage |= {k: v for k, v in _dict(event.get("usage")).items() if v is not None}
    facts.usage = _anthropic_usage(usage) if usage else None
    return facts


def _openai_usage(usage: dict[str, Any], prompt: str, completion: str) -> Usage:
    """OpenAI's two APIs bill alike under other names (Responses: ``input_tokens``;
    chat completions: ``prompt_tokens``), the cached share inside the prompt's count."""
    cached = _int(_dict(usage.get(f"{prompt}_details")).get("cached_tokens"))
    return Usage(
        input_tokens=max(_int(usage.get(prompt)) - cached, 0),
        cache_read_tokens=cached,
        output_tokens=_int(usage.get(completion)),
        turns=1,
    )


def _responses_usage(usage: dict[str, Any]) -> Usage:
    return _openai_usage(usage, "input_tokens", "output_tokens")


def _responses_object(response: dict[str, Any]) -> ReplyFacts:
    calls = [
        str(_dict(item).get("name"))
        for item in _list(response.get("output"))
        if _dict(item).get("type") in _RESPONSES_CALL_ITEMS
    ]
    usage = response.get("usage")
    return ReplyFacts(
        calls=calls,
        usage=_responses_usage(usage) if isinstance(usage, dict) else None,
        model=response.get("model"),
    )


def _responses_stream(events: list[dict[str, Any]]) -> ReplyFacts:
    """The stream's last ``response.completed`` (or ``response.incomplete``) event holds the
    whole response; without one, the output items announced as done."""
    for event in reversed(events):
        if event.get("type") in ("response.completed", "response.incomplete"):
            return _responses_object(_dict(event.get("response")))
    calls = [
        str(_dict(event.get("item")).get("name"))
        for event in events
        if event.get("type") == "response.output_item.done"
        and _dict(event.get("item")).get("type") in _RESPONSES_CALL_ITEMS
    ]
    return ReplyFacts(calls=calls)


def _chat_usage(usage: dict[str, Any]) -> Usage:
    return _openai_usage(usage, "prompt_tokens", "completion_tokens")


def _chat_object(completion: dict[str, Any]) -> ReplyFacts:
    choices = _list(completion.get("choices"))
    message = _dict(_dict(choices[0]).get("message")) if choices else {}
    calls = [
        str(_dict(_dict(call).get("function")).get("name"))
        for call in _list(message.get("tool_calls"))
    ]
    usage = completion.get("usage")
    return ReplyFacts(
        calls=calls,
        usage=_chat_usage(usage) if isinstance(usage, dict) else None,
        model=completion.get("model"),
    )


def _chat_stream(events: list[dict[str, Any]]) -> ReplyFacts:
    names: dict[int, str] = {}
    facts = ReplyFacts()
    for chunk in events:
        facts.model = facts.model or chunk.get("model")
        if isinstance(chunk.get("usage"), dict):
            facts.usage = _chat_usage(chunk["usage"])
        for choice in _list(chunk.get("choices")):
            for call in _list(_dict(_dict(choice).get("delta")).get("tool_calls")):
                index = _int(_dict(call).get("index"))
                name = _dict(_dict(call).get("function")).get("name")
                if name or index not in names:
                    names[index] = names.get(index, "") + (name or "")
    facts.calls = [names[i] for i in sorted(names)]
    return facts


def error_body(protocol: Protocol, message: str) -> dict[str, Any]:
    """An error reply in the protocol's own shape (one the agent prints, and gives up on)."""
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error", "code": "budget"}}

"""Wire formats: parse requests into a :class:`Conversation`, render a :class:`Reply` back.

Three formats, each as the real clients use it (see the project's recordings of them under
``tests/fixtures/claude-code`` and ``tests/fixtures/lightpanda``):

* OpenAI chat completions (Lightpanda ``openai_compatible``: non-streaming; agent-browser
  ``chat``: ``stream: true`` with no ``stream_options``, reading only text and tool-call
  deltas, so it skips the usage chunk with no choices that the harness's gateway meter
  asks for; checked with agent-browser 0.41.2; the ``openai`` SDK: both);
* OpenAI Responses (Lightpanda ``openai`` provider: non-streaming only, which is all this
  module renders);
* Anthropic Messages (Lightpanda ``anthropic``: non-streaming; Claude Code: streamed SSE).

Rendering follows the providers' documented shapes closely enough for the official SDKs'
strict models and stream accumulators, which the unit tests use as the referee.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .conversation import Conversation, Message, ToolResult, ToolSpec, ToolUse, WireProtocol
from .tokens import TokenCount, args_json, canonical_json

# Streamed text and tool arguments are cut into pieces of this many characters, so clients'
# delta accumulation is exercised on every reply longer than that.
STREAM_PIECE_CHARS = 24


class WireError(ValueError):
    """The request body is not a valid request of its protocol (answered with HTTP 400)."""


@dataclass(frozen=True)
class ParsedRequest:
    conversation: Conversation
    prompt_chars: int  # size of the prompt fields, for token counting
    include_usage: bool = False  # OpenAI stream_options.include_usage


@dataclass(frozen=True)
class Reply:
    """One neutral reply: text (None: no content at all) and tool calls with their ids."""

    id: str
    model: str
    text: str | None
    calls: list[ToolUse] = field(default_factory=list)
    tokens: TokenCount = field(default_factory=TokenCount)
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def finished_with_tools(self) -> bool:
        return bool(self.calls)


def stable_id(prefix: str, *parts: object, length: int = 24) -> str:
    """A deterministic id: the same task, request and index always give the same id."""
    digest = hashlib.sha1("/".join(str(p) for p in parts).encode()).hexdigest()
    return prefix + digest[:length]


# --- parsing --------------------------------------------------------------------------------
def parse_request(
    protocol: WireProtocol, body: Any, *, task_id: str, request_number: int
) -> ParsedRequest:
    if not isinstance(body, dict):
        raise WireError("request body must be a JSON object")
    parse = {
        "openai_chat": _parse_openai_chat,
        "openai_responses": _parse_openai_responses,
        "anthropic": _parse_anthropic,
    }[protocol]
    try:
        return parse(body, task_id, request_number)
    except WireError:
        raise
    except (ValidationError, TypeError, AttributeError, KeyError) as e:
        # A field of the wrong shape: the client's mistake, answered 400 like a provider would.
        raise WireError(f"invalid {protocol} request: {e}") from e


class _History:
    """Builds the neutral message list; merges consecutive tool results into one message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.names: dict[str, str] = {}  # tool call id -> tool name

    def user(self, text: str) -> None:
        self.messages.append(Message(role="user", text=text))

    def assistant(self, text: str, calls: list[ToolUse], merge: bool = False) -> None:
        for c in calls:
            self.names[c.id] = c.name
        last = self.messages[-1] if self.messages else None
        if merge and last is not None and last.role == "assistant":
            self.messages[-1] = Message(
                role="assistant",
                text=last.text + text,
                tool_calls=[*last.tool_calls, *calls],
            )
        else:
            self.messages.append(Message(role="assistant", text=text, tool_calls=calls))

    def results(self, results: list[tuple[str, str, bool]]) -> None:
        if not results:
            return
        resolved = [
            ToolResult(id=rid, text=text, name=self.names.get(rid), is_error=err)
            for rid, text, err in results
        ]
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "tool":
            self.messages[-1] = Message(role="tool", tool_results=[*last.tool_results, *resolved])
        else:
            self.messages.append(Message(role="tool", tool_results=resolved))


def _openai_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind in ("text", "input_text", "output_text"):
                    parts.append(str(part.get("text", "")))
                elif kind == "refusal":
                    parts.append(str(part.get("refusal", "")))
                elif kind:
                    parts.append(f"[{kind}]")
        return "".join(parts)
    raise WireError(f"unsupported content: {type(content).__name__}")


def _temperature(body: dict[str, Any]) -> float | None:
    value = body.get("temperature")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _parse_args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}


def _require(body: dict[str, Any], key: str, kind: type) -> Any:
    value = body.get(key)
    if not isinstance(value, kind):
        raise WireError(f"'{key}' is required and must be a {kind.__name__}")
    return value


def _parse_openai_chat(body: dict[str, Any], task_id: str, n: int) -> ParsedRequest:
    messages = _require(body, "messages", list)
    system: list[str] = []
    history = _History()
    for m in messages:
        if not isinstance(m, dict):
            raise WireError("each message must be an object")
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(_openai_text(m.get("content")))
        elif role == "user":
            history.user(_openai_text(m.get("content")))
        elif role == "assistant":
            calls = [
                ToolUse(
                    id=str(tc.get("id", "")),
                    name=str((tc.get("function") or {}).get("name", "")),
                    args=_parse_args((tc.get("function") or {}).get("arguments")),
                )
                for tc in (m.get("tool_calls") or [])
                if isinstance(tc, dict)
            ]
            history.assistant(_openai_text(m.get("content")), calls)
        elif role in ("tool", "function"):
            rid = str(m.get("tool_call_id") or m.get("name") or "")
            history.results([(rid, _openai_text(m.get("content")), False)])
        else:
            raise WireError(f"unknown message role {role!r}")
    tools = []
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict):
            tools.append(
                ToolSpec(
                    name=str(fn.get("name", "")),
                    description=str(fn.get("description") or ""),
                    input_schema=fn.get("parameters") or {},
                )
            )
    stream = bool(body.get("stream"))
    conv = Conversation(
        task_id=task_id,
        protocol="openai_chat",
        request_number=n,
        model=str(body.get("model", "")),
        stream=stream,
        max_tokens=body.get("max_completion_tokens") or body.get("max_tokens"),
        temperature=_temperature(body),
        system="\n\n".join(system),
        messages=history.messages,
        tools=tools,
    )
    prompt = canonical_json({"messages": messages, "tools": body.get("tools") or []})
    opts = body.get("stream_options") or {}
    return ParsedRequest(conv, len(prompt), bool(stream and opts.get("include_usage")))


def _parse_openai_responses(body: dict[str, Any], task_id: str, n: int) -> ParsedRequest:
    raw_input = body.get("input")
    system = [str(body["instructions"])] if body.get("instructions") else []
    history = _History()
    if isinstance(raw_input, str):
        history.user(raw_input)
    elif isinstance(raw_input, list):
        for item in raw_input:
            if not isinstance(item, dict):
                raise WireError("each input item must be an object")
            kind = item.get("type", "message")
            if kind == "message":
                role = item.get("role")
                text = _openai_text(item.get("content"))
                if role in ("system", "developer"):
                    system.append(text)
                elif role == "user":
                    history.user(text)
                elif role == "assistant":
                    history.assistant(text, [], merge=True)
                else:
                    raise WireError(f"unknown message role {role!r}")
            elif kind == "function_call":
                use = ToolUse(
                    id=str(item.get("call_id", "")),
                    name=_namespaced(item.get("namespace"), str(item.get("name", ""))),
                    args=_parse_args(item.get("arguments")),
                )
                history.assistant("", [use], merge=True)
            elif kind == "function_call_output":
                output = item.get("output")
                text = output if isinstance(output, str) else _openai_text(output)
                history.results([(str(item.get("call_id", "")), text, False)])
            # reasoning and other item kinds carry nothing a policy needs
    else:
        raise WireError("'input' is required and must be a string or a list")
    tools = _responses_tools(body.get("tools") or [], None)
    conv = Conversation(
        task_id=task_id,
        protocol="openai_responses",
        request_number=n,
        model=str(body.get("model", "")),
        stream=bool(body.get("stream")),
        max_tokens=body.get("max_output_tokens"),
        temperature=_temperature(body),
        system="\n\n".join(system),
        messages=history.messages,
        tools=tools,
    )
    prompt = canonical_json(
        {
            "instructions": body.get("instructions"),
            "input": raw_input,
            "tools": body.get("tools") or [],
        }
    )
    return ParsedRequest(conv, len(prompt))


def _namespaced(namespace: Any, name: str) -> str:
    return f"{namespace}__{name}" if namespace else name


def _responses_tools(tools: list[Any], namespace: str | None) -> list[ToolSpec]:
    """The function tools offered, those inside a ``namespace`` tool (Codex's MCP servers)
    named ``<namespace>__<tool>``; other kinds (web_search, custom) carry nothing a policy
    calls."""
    specs = []
    for t in tools:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            specs += _responses_tools(t.get("tools") or [], str(t.get("name", "")))
        elif t.get("type", "function") == "function":
            specs.append(
                ToolSpec(
                    name=_namespaced(namespace, str(t.get("name", ""))),
                    description=str(t.get("description") or ""),
                    input_schema=t.get("parameters") or {},
                    namespace=namespace,
                )
            )
    return specs


def _anthropic_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind in ("image", "document", "search_result"):
                parts.append(f"[{kind}]")
        return "".join(parts)
    raise WireError(f"unsupported content: {type(content).__name__}")


def _parse_anthropic(body: dict[str, Any], task_id: str, n: int) -> ParsedRequest:
    messages = _require(body, "messages", list)
    raw_system = body.get("system")
    system = _anthropic_text(raw_system) if isinstance(raw_system, list) else raw_system or ""
    history = _History()
    for m in messages:
        if not isinstance(m, dict):
            raise WireError("each message must be an object")
        role = m.get("role")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if not isinstance(blocks, list):
            raise WireError("message content must be a string or a list of blocks")
        if role == "assistant":
            text = "".join(
                str(b.get("text", ""))
                for b in blocks
                if isinstance(b, dict) and b["type"] == "text"
            )
            calls = [
                ToolUse(
                    id=str(b.get("id", "")), name=str(b.get("name", "")), args=b.get("input") or {}
                )
                for b in blocks
                if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
            ]
            history.assistant(text, calls)
        elif role == "user":
            results = [
                (
                    str(b.get("tool_use_id", "")),
                    _anthropic_text(b.get("content")),
                    bool(b.get("is_error", False)),
                )
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            history.results(results)
            other = [b for b in blocks if isinstance(b, dict) and b.get("type") != "tool_result"]
            if other or not results:
                history.user(_anthropic_text(other))
        elif role == "system":
            # Claude Code 2.1.330 sends mid-conversation system messages (reminders) in
            # `messages`; they extend the system prompt, they are not a turn.
            system = f"{system}\n{_anthropic_text(blocks)}" if system else _anthropic_text(blocks)
        else:
            raise WireError(f"unknown message role {role!r}")
    tools = [
        ToolSpec(
            name=str(t.get("name", "")),
            description=str(t.get("description") or ""),
            input_schema=t.get("input_schema") or {},
        )
        for t in body.get("tools") or []
        if isinstance(t, dict)
    ]
    conv = Conversation(
        task_id=task_id,
        protocol="anthropic",
        request_number=n,
        model=str(body.get("model", "")),
        stream=bool(body.get("stream")),
        max_tokens=body.get("max_tokens"),
        temperature=_temperature(body),
        system=system,
        messages=history.messages,
        tools=tools,
    )
    prompt = canonical_json(
        {"system": raw_system, "messages": messages, "tools": body.get("tools") or []}
    )
    return ParsedRequest(conv, len(prompt))


def anthropic_prompt_chars(body: dict[str, Any]) -> int:
    """Prompt size of a ``count_tokens`` request (same fields as a Messages request)."""
    return len(
        canonical_json(
            {
                "system": body.get("system"),
                "messages": body.get("messages") or [],
                "tools": body.get("tools") or [],
            }
        )
    )


# --- rendering: OpenAI chat completions ---------------------------------------------------------
def _pieces(text: str, size: int = STREAM_PIECE_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def openai_usage(tokens: TokenCount) -> dict[str, Any]:
    return {
        "prompt_tokens": tokens.prompt_tokens,
        "completion_tokens": tokens.output_tokens,
        "total_tokens": tokens.prompt_tokens + tokens.output_tokens,
        "prompt_tokens_details": {"cached_tokens": tokens.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _openai_tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": args_json(c.args)},
        }
        for c in reply.calls
    ]


def openai_chat_json(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.calls:
        message["tool_calls"] = _openai_tool_calls(reply)
    return {
        "id": reply.id,
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": openai_usage(reply.tokens),
    }


def openai_chat_events(reply: Reply, include_usage: bool) -> Iterator[dict[str, Any] | str]:
    """The chunk objects of a streamed completion, then the literal ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {
            "id": reply.id,
            "object": "chat.completion.chunk",
            "created": reply.created,
            "model": reply.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            c["usage"] = None
        return c

    yield chunk({"role": "assistant", "content": "" if reply.text is not None else None})
    if reply.text:
        for piece in _pieces(reply.text):
            yield chunk({"content": piece})
    for i, c in enumerate(reply.calls):
        head = {"index": i, "id": c.id, "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": c.name, "arguments": ""}}]})
        for piece in _pieces(args_json(c.args)):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = openai_usage(reply.tokens)
        yield last
    yield "[DONE]"


def openai_sse(events: Iterator[dict[str, Any] | str]) -> Iterator[bytes]:
    for e in events:
        data = e if isinstance(e, str) else json.dumps(e, ensure_ascii=False)
        yield f"data: {data}\n\n".encode()


# --- rendering: OpenAI Responses ------------------------------------------------------------
def _responses_output(reply: Reply, tools: Sequence[ToolSpec] = ()) -> list[dict[str, Any]]:
    """The reply's output items; a call of a namespaced tool names its namespace and its
    own name, as the client offered it."""
    namespaces = {t.name: t.namespace for t in tools if t.namespace}
    output: list[dict[str, Any]] = []
    if reply.text is not None and (reply.text or not reply.calls):
        output.append(
            {
                "type": "message",
                "id": "msg_" + reply.id.removeprefix("resp_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for c in reply.calls:
        item = {
            "type": "function_call",
            "id": "fc_" + c.id.removeprefix("call_"),
            "call_id": c.id,
            "name": c.name,
            "arguments": args_json(c.args),
            "status": "completed",
        }
        namespace = namespaces.get(c.name)
        if namespace:
            item |= {"name": c.name.removeprefix(f"{namespace}__"), "namespace": namespace}
        output.append(item)
    return output


def openai_responses_json(reply: Reply, tools: Sequence[ToolSpec] = ()) -> dict[str, Any]:
    output = _responses_output(reply, tools)
    t = reply.tokens
    return {
        "id": reply.id,
        "object": "response",
        "created_at": reply.created,
        "status": "completed",
        "model": reply.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": t.prompt_tokens,
            "input_tokens_details": {"cached_tokens": t.cache_read_tokens},
            "output_tokens": t.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": t.prompt_tokens + t.output_tokens,
        },
    }


def openai_responses_events(
    reply: Reply, tools: Sequence[ToolSpec] = ()
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events of a streamed response, as the Responses API sends them: created, each
    output item added, its text or arguments in pieces, the item done, then completed with
    the whole response and its usage."""
    whole = openai_responses_json(reply, tools)
    sequence = iter(range(1_000_000))

    def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **data}

    started = whole | {"status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(whole["output"]):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event(
                "response.output_item.added",
                output_index=index,
                item=item | {"status": "in_progress", "content": []},
            )
            empty = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", **where, content_index=0, part=empty)
            for piece in _pieces(text):
                yield event("response.output_text.delta", **where, content_index=0, delta=piece)
            yield event("response.output_text.done", **where, content_index=0, text=text)
            yield event(
                "response.content_part.done", **where, content_index=0, part=item["content"][0]
            )
        else:
            yield event(
                "response.output_item.added",
                output_index=index,
                item=item | {"status": "in_progress", "arguments": ""},
            )
            for piece in _pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event(
                "response.function_call_arguments.done", **where, arguments=item["arguments"]
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=whole)


# --- rendering: Anthropic Messages ----------------------------------------------------------
def anthropic_usage(tokens: TokenCount, output_tokens: int | None = None) -> dict[str, Any]:
    return {
        "input_tokens": tokens.input_tokens,
        "cache_creation_input_tokens": tokens.cache_write_tokens,
        "cache_read_input_tokens": tokens.cache_read_tokens,
        "output_tokens": tokens.output_tokens if output_tokens is None else output_tokens,
    }


def _anthropic_blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text is not None and (reply.text or not reply.calls):
        blocks.append({"type": "text", "text": reply.text})
    for c in reply.calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args})
    return blocks


def anthropic_json(reply: Reply) -> dict[str, Any]:
    return {
        "id": reply.id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": _anthropic_blocks(reply),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(reply.tokens),
    }


def anthropic_events(reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(event name, data)`` pairs of a streamed message, in the order the API sends them.

    As the real API does, ``message_start`` carries the input-side usage with a token of
    output, and ``message_delta`` the final (cumulative, not incremental) output count.
    """
    start = {**anthropic_json(reply), "content": [], "stop_reason": None}
    start["usage"] = anthropic_usage(reply.tokens, output_tokens=min(1, reply.tokens.output_tokens))
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(_anthropic_blocks(reply)):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        else:
            opened = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(args_json(block["input"]))
            ]
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opened},
        )
        for d in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": "tool_use" if reply.calls else "end_turn",
                "stop_sequence": None,
            },
            "usage": anthropic_usage(reply.tokens),
        },
    )
    yield "message_stop", {"type": "message_stop"}


def named_sse(events: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[bytes]:
    """Server-sent events with an ``event:`` line each, as Anthropic Messages and OpenAI
    Responses stream them."""
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


# --- errors -----------------------------------------------------------------------------------
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}


def error_body(anthropic_style: bool, status: int, message: str) -> dict[str, Any]:
    if anthropic_style:
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def models_body(models: list[str]) -> dict[str, Any]:
    """``GET /v1/models`` in a shape both SDKs accept: OpenAI's fields plus Anthropic's."""
    data = [
        {
            "id": m,
            "object": "model",
            "created": 0,
            "owned_by": "scripted",
            "type": "model",
            "display_name": m,
            "created_at": "2025-01-01T00:00:00Z",
        }
        for m in models
    ]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }

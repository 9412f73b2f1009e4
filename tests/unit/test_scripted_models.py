"""The scripted model server against the real clients' wire formats.

Three kinds of referee: the captured request bodies of the real programs
(``tests/fixtures``, recorded by ``tests/fixtures/record.py``: Claude Code's streamed
Messages requests, Lightpanda's chat completions and Messages requests) replayed byte for
byte; the official ``openai`` and
``anthropic`` SDKs, whose strict models and stream accumulators must accept every reply; and
the server's own ledger and request log, which must agree with what the clients saw.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import TypeAdapter

from agent_benchmarks.localweb.models import (
    API_KEY,
    Action,
    Call,
    Conversation,
    Fault,
    FaultPlan,
    FaultRule,
    FinalAnswer,
    PolicyError,
    ScriptedModelServer,
    ScriptedPolicy,
    StepPolicy,
    TokenRules,
    ToolCallAction,
    call,
)
from agent_benchmarks.localweb.models.tokens import canonical_json
from agent_benchmarks.localweb.models.wire import parse_request
from agent_benchmarks.records.schema import Usage
from tests.fixtures import CLAUDE_CODE, LIGHTPANDA, captured_requests, read_json, read_jsonl

# The recorded runs (a fixed list: a recording that goes missing fails, never vanishes).
CLAUDE_RUNS = (
    "agent_browser_mcp_lightpanda",
    "disallow_search",
    "lightpanda_mcp",
    "max_turns_1",
    "no_allowed_tools",
)
MODEL = "scripted-model"
GOTO_TOOL_OPENAI = {
    "type": "function",
    "function": {
        "name": "goto",
        "description": "Navigate",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
}
GOTO_TOOL_ANTHROPIC = {
    "name": "goto",
    "description": "Navigate",
    "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}},
}
# Headers of a captured request that describe the original connection, not the request.
_HOP_HEADERS = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}


# --- helpers --------------------------------------------------------------------------------
@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(models=[MODEL, "other-model"]) as s:
        yield s


def _openai(server: ScriptedModelServer, task: str, **kw: Any) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url(task, "openai"), api_key=API_KEY, **kw)


def _anthropic(server: ScriptedModelServer, task: str, **kw: Any) -> anthropic.Anthropic:
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=server.base_url(task, "anthropic"), api_key=API_KEY, **kw)


def _usage_of(entries: list[dict[str, int]]) -> Usage:
    return Usage(
        input_tokens=sum(e["input"] for e in entries),
        cache_read_tokens=sum(e["cached"] for e in entries),
        cache_write_tokens=sum(e["cache_write"] for e in entries),
        output_tokens=sum(e["output"] for e in entries),
        turns=len(entries),
    )


def _from_openai_usage(u: Any) -> dict[str, int]:
    """Neutral counts from OpenAI usage: prompt_tokens includes the cached part."""
    cached = u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else 0
    return {
        "input": u.prompt_tokens - cached,
        "cached": cached,
        "cache_write": 0,
        "output": u.completion_tokens,
    }


def _from_anthropic_usage(u: Any) -> dict[str, int]:
    return {
        "input": u.input_tokens,
        "cached": u.cache_read_input_tokens or 0,
        "cache_write": u.cache_creation_input_tokens or 0,
        "output": u.output_tokens,
    }


def _sse(raw: str) -> list[tuple[str | None, str]]:
    """``(event, data)`` of each SSE event; every event must end with a blank line."""
    assert raw.endswith("\n\n"), "the stream must end with a complete event"
    events = []
    for block in raw.split("\n\n")[:-1]:
        name, data = None, []
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        events.append((name, "\n".join(data)))
    return events


_ANTHROPIC_EVENT = TypeAdapter(anthropic.types.RawMessageStreamEvent)


def _check_anthropic_stream(raw: str) -> dict[str, Any]:
    """Validate a Messages SSE stream event by event (order and schema) and assemble it."""
    events = _sse(raw)
    names = [n for n, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    message: dict[str, Any] = {}
    open_block: int | None = None
    buffers: dict[int, str] = {}
    for name, data in events:
        obj = json.loads(data)
        assert obj["type"] == name
        if name == "ping":
            continue
        _ANTHROPIC_EVENT.validate_python(obj)  # the SDK's own strict schema
        if name == "message_start":
            message = obj["message"]
            assert message["content"] == [] and message["stop_reason"] is None
        elif name == "content_block_start":
            assert open_block is None, "blocks must not interleave"
            assert obj["index"] == len(message["content"])
            open_block = obj["index"]
            message["content"].append(obj["content_block"])
            buffers[open_block] = ""
        elif name == "content_block_delta":
            assert obj["index"] == open_block
            delta = obj["delta"]
            block = message["content"][open_block]
            if delta["type"] == "text_delta":
                assert block["type"] == "text"
                block["text"] += delta["text"]
            else:
                assert delta["type"] == "input_json_delta" and block["type"] == "tool_use"
                buffers[open_block] += delta["partial_json"]
        elif name == "content_block_stop":
            assert obj["index"] == open_block
            block = message["content"][open_block]
            if block["type"] == "tool_use":
                block["input"] = json.loads(buffers[open_block] or "{}")
            open_block = None
        elif name == "message_delta":
            assert open_block is None
            message["stop_reason"] = obj["delta"]["stop_reason"]
            message["usage"] = {**message["usage"], **obj["usage"]}
    return message


def _check_openai_stream(raw: str) -> dict[str, Any]:
    """Validate a chat-completions SSE stream chunk by chunk and assemble the message."""
    events = _sse(raw)
    assert all(name is None for name, _ in events)
    assert events[-1][1] == "[DONE]"
    text: str | None = None
    calls: dict[int, dict[str, Any]] = {}
    finish = usage = None
    for _, data in events[:-1]:
        chunk = ChatCompletionChunk.model_validate(json.loads(data))
        if chunk.usage is not None:
            assert chunk.choices == []
            usage = chunk.usage
            continue
        (choice,) = chunk.choices
        if choice.delta.content is not None:
            text = (text or "") + choice.delta.content
        for tc in choice.delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": tc.id, "name": None, "arguments": ""})
            if tc.function and tc.function.name:
                entry["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                entry["arguments"] += tc.function.arguments
        finish = choice.finish_reason or finish
    return {
        "text": text,
        "calls": [calls[i] for i in sorted(calls)],
        "finish": finish,
        "usage": usage,
    }


# --- neutral pieces -------------------------------------------------------------------------
def test_tool_call_action_shorthands() -> None:
    assert ToolCallAction("goto", {"url": "u"}) == call("goto", url="u")
    assert ToolCallAction(name="goto", args={"url": "u"}).calls == [
        Call(name="goto", args={"url": "u"})
    ]
    assert call("fill", text="x").calls[0].args == {"text": "x"}
    assert FinalAnswer("42") == FinalAnswer(text="42")
    with pytest.raises(ValueError):
        ToolCallAction(calls=[])


def _conv(messages: list[dict[str, Any]], tools: Sequence[str] = ()) -> Conversation:
    body = {
        "model": MODEL,
        "messages": messages,
        "tools": [{**GOTO_TOOL_OPENAI, "function": {"name": t}} for t in tools],
    }
    return parse_request("openai_chat", body, task_id="t", request_number=1).conversation


_AFTER_ONE_CALL: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "goto", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "page"},
]


def test_scripted_policy_keys_on_turn_so_retries_repeat_the_same_action() -> None:
    policy = ScriptedPolicy([call("goto", url="u"), FinalAnswer("done")])
    first = _conv([{"role": "user", "content": "hi"}])
    assert policy.next_action(first) == call("goto", url="u")
    assert policy.next_action(first) == call("goto", url="u")  # a retry: same history
    second = _conv(_AFTER_ONE_CALL)
    assert second.turn == 1 and second.last_tool_result.name == "goto"
    assert policy.next_action(second) == FinalAnswer("done")
    third = _conv([*_AFTER_ONE_CALL, {"role": "assistant", "content": "x"}])
    with pytest.raises(PolicyError, match="exhausted"):
        policy.next_action(third)
    repeat = ScriptedPolicy([FinalAnswer("a")], on_exhausted="repeat_last")
    assert repeat.next_action(third) == FinalAnswer("a")
    final = ScriptedPolicy([], on_exhausted="final", exhausted_text="z")
    assert final.next_action(third) == FinalAnswer("z")
    resolving = ScriptedPolicy([call("goto", url="u")], resolve_names=True)
    mcp = _conv([{"role": "user", "content": "hi"}], tools=["mcp__lp__goto"])
    assert resolving.next_action(mcp) == call("mcp__lp__goto", url="u")


class ReadCode(StepPolicy):
    """The oracle shape the later piece will use: navigate, read, answer by regex."""

    def __init__(self, url: str) -> None:
        self.url = url

    def step(self, conv: Conversation) -> Action:
        if conv.turn == 0:
            return self.call(conv, "goto", url=self.url)
        if conv.turn == 1:
            return self.call(conv, "markdown")
        m = re.search(r"code is (\S+?)\.", conv.last_tool_text or "")
        return self.answer(m.group(1) if m else "not found")


def test_step_policy_resolves_mcp_prefixed_names_and_reads_the_last_result() -> None:
    policy = ReadCode("http://x/")
    conv = _conv([{"role": "user", "content": "q"}], tools=["mcp__lp__goto", "mcp__lp__markdown"])
    assert policy.next_action(conv) == call("mcp__lp__goto", url="http://x/")
    with pytest.raises(PolicyError, match="not offered"):
        policy.next_action(_conv([{"role": "user", "content": "q"}], tools=["click"]))
    done = _conv(
        [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "mcp__lp__goto", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "b",
                        "type": "function",
                        "function": {"name": "mcp__lp__markdown", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "b", "content": "The code is ZETA-9. Bye"},
        ],
        tools=["mcp__lp__goto", "mcp__lp__markdown"],
    )
    assert done.results_of("markdown")[0].text.startswith("The code")
    assert policy.next_action(done) == FinalAnswer("ZETA-9")


def test_token_rules_arithmetic() -> None:
    rules = TokenRules(chars_per_token=4, cache_read_share=0.25, cache_write_share=0.125)
    t = rules.count(401, 9, cache_write=True)  # prompt ceil(401/4) = 101
    assert (t.input_tokens, t.cache_read_tokens, t.cache_write_tokens, t.output_tokens) == (
        101 - 25 - 12,
        25,
        12,
        3,
    )
    assert t.prompt_tokens == 101
    assert rules.count(401, 9, cache_write=False).cache_write_tokens == 0
    with pytest.raises(ValueError):
        TokenRules(cache_read_share=0.8, cache_write_share=0.3)


def test_fault_plan_first_matching_rule_wins() -> None:
    plan = FaultPlan.on({1: Fault.rate_limit(2), 3: Fault.hang()}, task_id="a").plus(
        [FaultRule(fault=Fault.server_error(503))]
    )
    assert plan.fault_for("a", 1) == Fault.rate_limit(2)
    assert plan.fault_for("a", 2) == Fault.server_error(503)
    assert plan.fault_for("a", 3) == Fault.hang()
    assert plan.fault_for("b", 1) == Fault.server_error(503)
    assert FaultPlan().fault_for("a", 1) is None


def test_base_urls_per_client(server: ScriptedModelServer) -> None:
    root = server.root_url
    assert server.base_url("t-1", "openai") == f"{root}/task/t-1/v1"
    assert server.base_url("t-1", "anthropic") == f"{root}/task/t-1"
    assert server.base_url("t-1", "gateway") == f"{root}/task/t-1"
    for bad in ("", "a/b", "a b", "../x"):
        with pytest.raises(ValueError):
            server.base_url(bad, "openai")


# --- the SDKs as referees -------------------------------------------------------------------
def test_openai_chat_tool_round_trip_non_streaming(server: ScriptedModelServer) -> None:
    server.set_policy("t", ScriptedPolicy([call("goto", url="http://x/"), FinalAnswer("42")]))
    client = _openai(server, "t")
    messages: list[Any] = [{"role": "user", "content": "what?"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=[GOTO_TOOL_OPENAI])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (tc,) = choice.message.tool_calls
    assert tc.function.name == "goto" and json.loads(tc.function.arguments) == {"url": "http://x/"}
    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": tc.id, "content": "page says 42"},
    ]
    second = client.chat.completions.create(
        model=MODEL, messages=messages, tools=[GOTO_TOOL_OPENAI]
    )
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "42"
    seen = [_from_openai_usage(r.usage) for r in (first, second)]
    assert server.usage("t") == _usage_of(seen)
    conv = server.model_requests("t")[1].conversation
    assert conv.last_tool_result.name == "goto" and conv.unmatched_tool_results() == []
    # The counting rule, recomputed from the request as sent.
    prompt = canonical_json({"messages": messages, "tools": [GOTO_TOOL_OPENAI]})
    assert second.usage.prompt_tokens == math.ceil(len(prompt) / 4)
    assert second.usage.completion_tokens == 1  # ceil(len("42") / 4)


def test_openai_chat_streaming_with_usage(server: ScriptedModelServer) -> None:
    long_args = {"url": "http://127.0.0.1/" + "p" * 60}
    server.set_policy(
        "t",
        ScriptedPolicy(
            [
                ToolCallAction(
                    calls=[Call(name="goto", args=long_args), Call(name="goto", args={"url": "b"})],
                    text="Opening two pages for you now.",
                ),
                FinalAnswer("The answer is forty-two, as the page says."),
            ]
        ),
    )
    client = _openai(server, "t")
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with client.chat.completions.stream(
        model=MODEL,
        messages=messages,
        tools=[GOTO_TOOL_OPENAI],
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        first = stream.get_final_completion()
    msg = first.choices[0].message
    assert msg.content == "Opening two pages for you now."
    assert [json.loads(t.function.arguments) for t in msg.tool_calls] == [long_args, {"url": "b"}]
    messages.append(msg.model_dump(exclude_none=True, exclude={"parsed"}))
    messages += [{"role": "tool", "tool_call_id": t.id, "content": "ok"} for t in msg.tool_calls]
    with client.chat.completions.stream(
        model=MODEL,
        messages=messages,
        tools=[GOTO_TOOL_OPENAI],
        stream_options={"include_usage": True},
    ) as stream:
        second = stream.get_final_completion()
    assert second.choices[0].message.content == "The answer is forty-two, as the page says."
    assert server.usage("t") == _usage_of([_from_openai_usage(c.usage) for c in (first, second)])


def test_openai_stream_without_include_usage_matches_agent_browser_chat(
    server: ScriptedModelServer,
) -> None:
    """agent-browser's chat sends ``stream: true`` and no stream_options (its source shows it
    reading only ``choices[0].delta``), so no usage chunk must appear."""
    server.set_policy("ab", ScriptedPolicy([call("agent_browser", command="open http://x/")]))
    url = server.base_url("ab", "gateway") + "/v1/chat/completions"
    body = {
        "model": "anthropic/claude-sonnet-4.6",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "open x"}],
        "tools": [{**GOTO_TOOL_OPENAI, "function": {"name": "agent_browser"}}],
        "stream": True,
    }
    r = httpx.post(url, json=body, headers={"Authorization": f"Bearer {API_KEY}"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = _check_openai_stream(r.text)
    assert got["usage"] is None and got["finish"] == "tool_calls"
    assert got["calls"][0]["name"] == "agent_browser"
    assert json.loads(got["calls"][0]["arguments"]) == {"command": "open http://x/"}
    assert got["calls"][0]["id"]  # the first delta of each call carries its id and name


def test_openai_responses_round_trip(server: ScriptedModelServer) -> None:
    server.set_policy(
        "r",
        ScriptedPolicy([ToolCallAction("goto", {"url": "http://x/"}), FinalAnswer("done")]),
    )
    client = _openai(server, "r")
    tools = [
        {"type": "function", "name": "goto", "parameters": GOTO_TOOL_ANTHROPIC["input_schema"]}
    ]
    first = client.responses.create(model=MODEL, input="go", tools=tools)
    (fc,) = [o for o in first.output if o.type == "function_call"]
    assert fc.name == "goto" and json.loads(fc.arguments) == {"url": "http://x/"}
    second = client.responses.create(
        model=MODEL,
        input=[
            {"role": "user", "content": "go"},
            {
                "type": "function_call",
                "call_id": fc.call_id,
                "name": fc.name,
                "arguments": fc.arguments,
            },
            {"type": "function_call_output", "call_id": fc.call_id, "output": "page"},
        ],
        tools=tools,
    )
    assert second.output_text == "done"
    seen = [
        {
            "input": r.usage.input_tokens - r.usage.input_tokens_details.cached_tokens,
            "cached": r.usage.input_tokens_details.cached_tokens,
            "cache_write": 0,
            "output": r.usage.output_tokens,
        }
        for r in (first, second)
    ]
    assert server.usage("r") == _usage_of(seen)
    assert server.model_requests("r")[1].conversation.last_tool_result.name == "goto"


def test_openai_responses_streamed_with_namespaced_tools(server: ScriptedModelServer) -> None:
    """Codex streams the Responses API and offers an MCP server's tools inside a namespace
    tool (``mcp__browser``): the policy sees Claude Code's name for the tool, and the call
    goes back under the namespace, as the SDK's stream assembles it."""
    server.set_policy(
        "ns",
        ScriptedPolicy([call("mcp__browser__goto", url="http://x/"), FinalAnswer("done and done")]),
    )
    client = _openai(server, "ns")
    goto = {"type": "function", "name": "goto", "parameters": GOTO_TOOL_ANTHROPIC["input_schema"]}
    tools = [{"type": "namespace", "name": "mcp__browser", "description": "d", "tools": [goto]}]
    with client.responses.stream(model=MODEL, input="go", tools=tools) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    (fc,) = first.output
    assert fc.type == "function_call" and fc.name == "goto"
    assert fc.model_dump().get("namespace") == "mcp__browser"
    assert json.loads(fc.arguments) == {"url": "http://x/"}
    offered = server.model_requests("ns")[0].conversation
    assert offered.stream and offered.tool_names == ["mcp__browser__goto"]
    history = [
        {"role": "user", "content": "go"},
        {
            "type": "function_call",
            "call_id": fc.call_id,
            "name": "goto",
            "namespace": "mcp__browser",
            "arguments": fc.arguments,
        },
        {"type": "function_call_output", "call_id": fc.call_id, "output": "page"},
    ]
    with client.responses.stream(model=MODEL, input=history, tools=tools) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        second = stream.get_final_response()
    assert "".join(deltas) == second.output_text == "done and done"
    assert second.usage is not None and second.usage.output_tokens > 0
    result = server.model_requests("ns")[1].conversation.last_tool_result
    assert result.name == "mcp__browser__goto" and result.text == "page"


def test_anthropic_tool_round_trip_plain_and_streamed(server: ScriptedModelServer) -> None:
    server.token_rules = TokenRules(cache_read_share=0.25, cache_write_share=0.125)
    server.set_policy(
        "a",
        ScriptedPolicy(
            [
                ToolCallAction(
                    calls=[Call(name="goto", args={"url": "http://127.0.0.1/" + "q" * 50})],
                    text="Let me open the page first.",
                ),
                FinalAnswer("The price is 99.99 USD according to the table."),
            ]
        ),
    )
    client = _anthropic(server, "a")
    messages: list[Any] = [{"role": "user", "content": "price?"}]
    first = client.messages.create(
        model=MODEL, max_tokens=100, messages=messages, tools=[GOTO_TOOL_ANTHROPIC]
    )
    assert first.stop_reason == "tool_use"
    text, tool = first.content
    assert text.text == "Let me open the page first." and tool.name == "goto"
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "t"}],
        },
    ]
    with client.messages.stream(
        model=MODEL, max_tokens=100, messages=messages, tools=[GOTO_TOOL_ANTHROPIC]
    ) as stream:
        second = stream.get_final_message()
    assert second.stop_reason == "end_turn"
    assert second.content[0].text == "The price is 99.99 USD according to the table."
    seen = [_from_anthropic_usage(m.usage) for m in (first, second)]
    assert server.usage("a") == _usage_of(seen)
    assert server.usage("a").cache_write_tokens > 0
    # Streamed first turn too: the SDK's accumulator rebuilds the tool input from deltas.
    server.set_policy("a2", ScriptedPolicy([call("goto", url="http://127.0.0.1/" + "z" * 70)]))
    with _anthropic(server, "a2").messages.stream(
        model=MODEL, max_tokens=100, messages=messages[:1], tools=[GOTO_TOOL_ANTHROPIC]
    ) as stream:
        streamed = stream.get_final_message()
    assert streamed.content[0].input == {"url": "http://127.0.0.1/" + "z" * 70}


def test_anthropic_count_tokens_and_models(server: ScriptedModelServer) -> None:
    client = _anthropic(server, "m")
    counted = client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    prompt = canonical_json(
        {"system": None, "messages": [{"role": "user", "content": "hi"}], "tools": []}
    )
    assert counted.input_tokens == math.ceil(len(prompt) / 4)
    assert [m.id for m in client.models.list()] == [MODEL, "other-model"]
    assert [m.id for m in _openai(server, "m").models.list()] == [MODEL, "other-model"]
    assert _openai(server, "m").models.retrieve(MODEL).id == MODEL
    assert server.usage("m") == Usage()  # side requests are not billed


def test_strict_models_rejects_unlisted_model() -> None:
    with ScriptedModelServer(
        lambda t: ScriptedPolicy([FinalAnswer("x")]), models=["m1"], strict_models=True
    ) as s:
        with pytest.raises(openai.NotFoundError):
            _openai(s, "t").chat.completions.create(
                model="nope", messages=[{"role": "user", "content": "hi"}]
            )
        ok = _openai(s, "t").chat.completions.create(
            model="m1", messages=[{"role": "user", "content": "hi"}]
        )
        assert ok.choices[0].message.content == "x"


def test_concurrent_tasks_do_not_mix() -> None:
    def policy_for(task_id: str) -> ScriptedPolicy:
        return ScriptedPolicy(
            [call("goto", url=f"http://x/{task_id}"), FinalAnswer(f"answer {task_id}")]
        )

    def run(server: ScriptedModelServer, task_id: str) -> str:
        client = _openai(server, task_id)
        messages: list[Any] = [{"role": "user", "content": "go"}]
        with client.chat.completions.stream(
            model=MODEL, messages=messages, tools=[GOTO_TOOL_OPENAI]
        ) as stream:
            msg = stream.get_final_completion().choices[0].message
        assert json.loads(msg.tool_calls[0].function.arguments) == {"url": f"http://x/{task_id}"}
        messages += [
            msg.model_dump(exclude_none=True, exclude={"parsed"}),
            {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "p"},
        ]
        final = client.chat.completions.create(model=MODEL, messages=messages)
        return final.choices[0].message.content or ""

    tasks = [f"task-{i}" for i in range(12)]
    with ScriptedModelServer(policy_for) as server, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda t: run(server, t), tasks))
        assert answers == [f"answer {t}" for t in tasks]
        for t in tasks:
            assert [r.request_number for r in server.model_requests(t)] == [1, 2]
            assert all(r.path.startswith(f"/task/{t}/") for r in server.requests(t))
            assert server.usage(t).turns == 2


def test_request_without_prefix_is_the_default_task(server: ScriptedModelServer) -> None:
    server.set_policy("default", ScriptedPolicy([FinalAnswer("d")]))
    r = httpx.post(
        f"{server.root_url}/v1/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert r.json()["choices"][0]["message"]["content"] == "d"
    assert server.requests("default")[0].route == "chat_completions"


def test_bad_requests_get_protocol_shaped_400s(server: ScriptedModelServer) -> None:
    server.set_policy("b", ScriptedPolicy([FinalAnswer("x")]))
    base = server.base_url("b", "anthropic")
    r = httpx.post(
        f"{base}/v1/messages", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["type"] == "error"
    r = httpx.post(f"{base}/v1/chat/completions", json={"model": MODEL})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match="script exhausted"):
        _anthropic(server, "b").messages.create(
            model=MODEL,
            max_tokens=5,
            messages=[
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ],
        )
    bad_shape = {
        "model": MODEL,
        "max_tokens": "many",
        "messages": [{"role": "user", "content": "x"}],
    }
    r = httpx.post(f"{base}/v1/messages", json=bad_shape)
    assert r.status_code == 400 and "invalid anthropic request" in r.json()["error"]["message"]
    r = httpx.post(
        f"{base}/v1/chat/completions", json={"model": MODEL, "messages": [{"role": "x"}]}
    )
    assert r.status_code == 400 and "role" in r.json()["error"]["message"]
    assert httpx.get(f"{base}/nowhere").status_code == 200  # GET/HEAD probes always succeed
    assert httpx.post(f"{base}/v1/nowhere", json={}).status_code == 404


# --- faults ---------------------------------------------------------------------------------
def test_rate_limit_retry_after_is_seen_and_honoured_by_both_sdks(
    server: ScriptedModelServer,
) -> None:
    server.set_policy("o", ScriptedPolicy([FinalAnswer("ok")]))
    server.set_policy("a", ScriptedPolicy([FinalAnswer("ok")]))
    server.fault_on("o", {1: Fault.rate_limit(0.5), 3: Fault.rate_limit(7)})
    server.fault_on("a", {1: Fault.rate_limit(0.5)})
    hi = [{"role": "user", "content": "hi"}]
    started = time.monotonic()
    assert (
        _openai(server, "o", max_retries=1)
        .chat.completions.create(model=MODEL, messages=hi)
        .choices[0]
        .message.content
        == "ok"
    )
    assert time.monotonic() - started >= 0.5
    with pytest.raises(openai.RateLimitError) as err:
        _openai(server, "o").chat.completions.create(model=MODEL, messages=hi)
    assert err.value.response.headers["retry-after"] == "7"
    started = time.monotonic()
    msg = _anthropic(server, "a", max_retries=1).messages.create(
        model=MODEL, max_tokens=5, messages=hi
    )
    assert msg.content[0].text == "ok" and time.monotonic() - started >= 0.5
    assert [r.status for r in server.model_requests("a")] == [429, 200]
    assert server.model_requests("a")[0].fault == "rate_limit"
    assert server.usage("a").turns == 1  # the 429 is not billed


def test_server_error(server: ScriptedModelServer) -> None:
    server.set_policy("e", ScriptedPolicy([FinalAnswer("ok")]))
    server.add_faults(FaultPlan.always(Fault.server_error(), task_id="e"))
    with pytest.raises(openai.InternalServerError):
        _openai(server, "e").chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(anthropic.InternalServerError):
        _anthropic(server, "e").messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert server.usage("e") == Usage()


def test_slow_reply_arrives_late_but_whole(server: ScriptedModelServer) -> None:
    server.set_policy("s", ScriptedPolicy([FinalAnswer("late")]))
    server.fault_on("s", {1: Fault.slow(0.6)})
    started = time.monotonic()
    with _anthropic(server, "s").messages.stream(
        model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        assert stream.get_final_message().content[0].text == "late"
    assert time.monotonic() - started >= 0.6
    assert server.usage("s").turns == 1


def test_hang_times_the_client_out_and_does_not_block_stop() -> None:
    server = ScriptedModelServer(lambda t: ScriptedPolicy([FinalAnswer("x")])).start()
    try:
        server.add_faults(FaultPlan.always(Fault.hang()))
        with pytest.raises(openai.APITimeoutError):
            _openai(server, "h", timeout=0.4).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "x"}]
            )
        # A second client that would wait 30 s: stop() must cut it loose at once.
        outcome: list[BaseException | None] = []

        def wait_forever() -> None:
            try:
                httpx.post(
                    server.base_url("h2", "openai") + "/chat/completions",
                    json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
                    timeout=30,
                )
                outcome.append(None)
            except httpx.HTTPError as e:
                outcome.append(e)

        waiter = threading.Thread(target=wait_forever)
        waiter.start()
        deadline = time.monotonic() + 5
        while server.request_count("h2") == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # let the handler reach its hang loop
    finally:
        started = time.monotonic()
        server.stop()
        stopped_in = time.monotonic() - started
    waiter.join(timeout=5)
    assert stopped_in < 1.0
    assert not waiter.is_alive() and isinstance(outcome[0], httpx.HTTPError)
    (rec,) = server.model_requests("h")
    assert rec.fault == "hang" and rec.status is None and rec.duration_s < 5
    (rec2,) = server.model_requests("h2")
    assert rec2.fault == "hang" and rec2.status is None
    assert server.usage("h") == Usage()


def test_malformed_body_makes_the_sdks_raise(server: ScriptedModelServer) -> None:
    server.set_policy("m", ScriptedPolicy([FinalAnswer("x")]))
    server.add_faults(FaultPlan.always(Fault.malformed(), task_id="m"))
    hi = [{"role": "user", "content": "x"}]
    with pytest.raises(json.JSONDecodeError):
        _openai(server, "m").chat.completions.create(model=MODEL, messages=hi)
    with pytest.raises(json.JSONDecodeError):
        list(_openai(server, "m").chat.completions.create(model=MODEL, messages=hi, stream=True))
    with pytest.raises(json.JSONDecodeError):
        _anthropic(server, "m").messages.create(model=MODEL, max_tokens=5, messages=hi)
    with pytest.raises(json.JSONDecodeError):
        list(
            _anthropic(server, "m").messages.create(
                model=MODEL, max_tokens=5, messages=hi, stream=True
            )
        )
    assert server.usage("m") == Usage()


def test_disconnect_is_a_connection_error(server: ScriptedModelServer) -> None:
    server.set_policy("d", ScriptedPolicy([FinalAnswer("x")]))
    server.fault_on("d", {1: Fault.disconnect()})
    hi = [{"role": "user", "content": "x"}]
    with pytest.raises(anthropic.APIConnectionError):
        _anthropic(server, "d").messages.create(model=MODEL, max_tokens=5, messages=hi)
    assert (
        _anthropic(server, "d")
        .messages.create(model=MODEL, max_tokens=5, messages=hi)
        .content[0]
        .text
        == "x"
    )


def test_empty_and_no_content_answers(server: ScriptedModelServer) -> None:
    server.set_policy("e", ScriptedPolicy([FinalAnswer("never sent")]))
    server.fault_on(
        "e", {1: Fault.empty(), 2: Fault.no_content(), 3: Fault.empty(), 4: Fault.no_content()}
    )
    hi = [{"role": "user", "content": "x"}]
    oc, ac = _openai(server, "e"), _anthropic(server, "e")
    empty = oc.chat.completions.create(model=MODEL, messages=hi).choices[0]
    assert (
        empty.message.content == ""
        and empty.finish_reason == "stop"
        and not empty.message.tool_calls
    )
    assert oc.chat.completions.create(model=MODEL, messages=hi).choices[0].message.content is None
    assert [b.text for b in ac.messages.create(model=MODEL, max_tokens=5, messages=hi).content] == [
        ""
    ]
    with ac.messages.stream(model=MODEL, max_tokens=5, messages=hi) as stream:
        none = stream.get_final_message()
    assert none.content == [] and none.stop_reason == "end_turn"
    usage = server.usage("e")
    assert usage.turns == 4 and usage.output_tokens == 0  # billed, with no output


# --- replays of captured real requests ------------------------------------------------------
def _script(run: Path) -> ScriptedPolicy:
    """The policy a recording's model followed, from its ``script.json``."""
    script = read_json(run / "script.json")
    actions: list[Action] = [
        FinalAnswer(step["final"])
        if "final" in step
        else ToolCallAction(
            calls=[Call(name=c["name"], args=c["args"]) for c in step["calls"]],
            text=step["text"],
        )
        for step in script["actions"]
    ]
    return ScriptedPolicy(actions, on_exhausted=script["on_exhausted"])


def _captured_ids(body: dict[str, Any], block_type: str, key: str) -> list[str]:
    return [
        b[key]
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == block_type
    ]


@pytest.mark.parametrize("name", CLAUDE_RUNS)
def test_claude_code_captured_requests_replay(server: ScriptedModelServer, name: str) -> None:
    """Each recorded Claude Code request, sent as Claude Code sent it (headers, ``?beta=true``,
    ``stream: true``, 12-32 tools, thinking and context_management fields), with the tool_use
    ids of the recording's server swapped for the ids this server issued."""
    run = CLAUDE_CODE / name
    task = f"cc-{name}"
    script = _script(run)
    server.set_policy(task, script)
    requests = captured_requests(run)
    # The recording's log: one streamed Messages request per model turn, nothing else.
    log = read_jsonl(run / "requests.jsonl")
    assert [(r["method"], r["route"], r["stream"]) for r in log] == [
        ("POST", "messages", True)
    ] * len(requests)
    issued: list[str] = []
    for turn, req in enumerate(requests):
        assert req["method"] == "POST" and req["path"] == "/v1/messages?beta=true"
        text = json.dumps(req["body"])
        captured = _captured_ids(req["body"], "tool_use", "id")
        assert len(captured) == len(issued)
        for old, new in zip(captured, issued, strict=True):
            text = text.replace(old, new)
        headers = {k: v for k, v in req["headers"].items() if k.lower() not in _HOP_HEADERS}
        r = httpx.post(
            server.base_url(task, "anthropic") + req["path"], content=text, headers=headers
        )
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        message = _check_anthropic_stream(r.text)
        expected = script.actions[turn]
        uses = [b for b in message["content"] if b["type"] == "tool_use"]
        if isinstance(expected, FinalAnswer):
            assert message["stop_reason"] == "end_turn" and uses == []
            assert message["content"] == [{"type": "text", "text": expected.text}]
        else:
            assert message["stop_reason"] == "tool_use"
            assert [(u["name"], u["input"]) for u in uses] == [
                (c.name, c.args) for c in expected.calls
            ]
            issued += [u["id"] for u in uses]
        # What the server parsed: the right turn, every tool result matched to its call.
        rec = server.model_requests(task)[-1]
        conv = rec.conversation
        assert conv.turn == turn and conv.stream and conv.unmatched_tool_results() == []
        assert len(conv.tools) == len(req["body"]["tools"])
        if turn:
            assert conv.last_tool_result.name == script.actions[turn - 1].calls[-1].name
        assert "Kestrel Binoculars" in conv.task_text
        usage = message["usage"]
        assert _from_anthropic_usage(anthropic.types.Usage.model_validate(usage)) == {
            "input": rec.usage.input_tokens,
            "cached": rec.usage.cache_read_tokens,
            "cache_write": rec.usage.cache_write_tokens,
            "output": rec.usage.output_tokens,
        }
    assert server.usage(task).turns == len(requests)


@pytest.mark.parametrize("run_name", ["table", "form"])
def test_lightpanda_openai_compatible_captured_requests_replay(
    server: ScriptedModelServer, run_name: str
) -> None:
    run = LIGHTPANDA / run_name
    script = _script(run)
    actions = script.actions
    task = f"lp-{run_name}"
    server.set_policy(task, script)
    requests = captured_requests(run)
    base = server.base_url(task, "openai")
    # Lightpanda lists the models first and exits unless --model is among them.
    assert (requests[0]["method"], requests[0]["path"]) == ("GET", "/v1/models")
    listed = httpx.get(base + "/models", headers={"Authorization": "Bearer x"}).json()
    body0 = requests[1]["body"]
    assert body0["model"] in [m["id"] for m in listed["data"]]  # "scripted-model"
    issued: list[str] = []
    for turn, req in enumerate(requests[1:]):
        assert (req["method"], req["path"]) == ("POST", "/v1/chat/completions")
        text = json.dumps(req["body"])
        captured = [tc["id"] for m in req["body"]["messages"] for tc in (m.get("tool_calls") or [])]
        for old, new in zip(captured, issued, strict=True):
            text = text.replace(f'"{old}"', f'"{new}"')
        headers = {k: v for k, v in req["headers"].items() if k.lower() not in _HOP_HEADERS}
        r = httpx.post(base + "/chat/completions", content=text, headers=headers)
        assert r.status_code == 200
        completion = ChatCompletion.model_validate(r.json())
        (choice,) = completion.choices
        expected = actions[turn]
        if isinstance(expected, FinalAnswer):
            assert choice.finish_reason == "stop" and choice.message.content == expected.text
        else:
            assert choice.finish_reason == "tool_calls"
            assert [
                (t.function.name, json.loads(t.function.arguments))
                for t in choice.message.tool_calls
            ] == [(c.name, c.args) for c in expected.calls]
            issued += [t.id for t in choice.message.tool_calls]
        conv = server.model_requests(task)[-1].conversation
        assert conv.turn == turn and not conv.stream and conv.unmatched_tool_results() == []
        assert len(conv.tools) == 28 and "Lightpanda" in conv.system
    ledger = server.usage(task)
    assert ledger.turns == len(requests) - 1 and ledger.input_tokens > 0


def test_lightpanda_anthropic_captured_requests_replay(server: ScriptedModelServer) -> None:
    run = LIGHTPANDA / "anthropic"
    task = "lp-anthropic"
    server.set_policy(task, _script(run))
    issued: list[str] = []
    requests = captured_requests(run)
    assert len(requests) == 2
    for turn, req in enumerate(requests):
        assert (req["method"], req["path"]) == ("POST", "/v1/messages")
        text = json.dumps(req["body"])
        for old, new in zip(_captured_ids(req["body"], "tool_use", "id"), issued, strict=True):
            text = text.replace(old, new)
        headers = {k: v for k, v in req["headers"].items() if k.lower() not in _HOP_HEADERS}
        r = httpx.post(
            server.base_url(task, "anthropic") + req["path"], content=text, headers=headers
        )
        message = anthropic.types.Message.model_validate(r.json())
        issued += [b.id for b in message.content if b.type == "tool_use"]
        assert message.stop_reason == ("tool_use" if turn == 0 else "end_turn")
        conv = server.model_requests(task)[-1].conversation
        assert conv.turn == turn and conv.unmatched_tool_results() == []
    assert message.content[0].text == "The shop is called Lakeside Goods."
    assert server.model_requests(task)[-1].conversation.last_tool_result.name == "markdown"


# --- the fixture recorder's capture (tests/fixtures/record.py) ------------------------------
def test_recorder_keeps_each_request_as_received(tmp_path: Path) -> None:
    """The recorder's server answers like the scripted one and also keeps every request's
    raw body and headers; it writes them with credentials redacted, the task prefix and the
    port and temp path replaced, and an index of the server's log."""
    from types import SimpleNamespace

    from tests.fixtures.record import CapturingServer, Cleaner, write_requests

    task = "rec-capture"
    with CapturingServer(models=[MODEL]) as cap:
        cap.set_policy(task, ScriptedPolicy([call("goto", url="u"), FinalAnswer("done")]))
        base = cap.base_url(task, "openai")
        raw = b'{"model": "scripted-model",  "messages": [{"role": "user", "content": "hi"}]}'
        headers = {"Authorization": "Bearer sk-test", "X-Path": str(tmp_path / "w")}
        assert httpx.get(base + "/models").status_code == 200
        r = httpx.post(base + "/chat/completions", content=raw, headers=headers)
        assert r.status_code == 200
        # The handler keeps a request once it has answered it: the reply can arrive first.
        deadline = time.monotonic() + 5
        while len(cap.captured) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(rec.method, rec.route, body) for rec, _, body in cap.captured] == [
            ("GET", "models", b""),
            ("POST", "chat_completions", raw),
        ]
        out = tmp_path / "out"
        out.mkdir()
        scenario = SimpleNamespace(keep_requests=lambda n: [n])  # keep only the last file
        run = SimpleNamespace(server=cap, task_id=task)
        clean = Cleaner(tmp_path, cap.port)
        assert write_requests(scenario, run, clean, out) == 2  # type: ignore[arg-type]
    index = read_jsonl(out / "requests.jsonl")
    assert [(i["n"], i["method"], i["path"], i["file"]) for i in index] == [
        (1, "GET", "/v1/models", None),
        (2, "POST", "/v1/chat/completions", "requests/req_002.json"),
    ]
    assert index[1]["usage"] == cap.model_requests(task)[0].usage.model_dump()
    [req] = captured_requests(out)
    assert (req["n"], req["method"], req["path"]) == (2, "POST", "/v1/chat/completions")
    assert req["body"] == json.loads(raw)
    assert req["headers"]["Authorization"] == "<redacted>"
    assert req["headers"]["X-Path"] == "/tmp/RECORD_TMP/w"
    lowered = {k.lower(): v for k, v in req["headers"].items()}
    assert lowered["host"] == "127.0.0.1:MODEL_PORT"
    assert "sk-test" not in (out / "requests" / "req_002.json").read_text()

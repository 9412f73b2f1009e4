"""The model meter (episode/meter.py) between the real provider SDKs and the scripted model:
it passes requests and replies through, reads each reply's tool calls and tokens in every
protocol (streamed or not), withholds the reply past the budget with an error the client
does not retry, sets the temperature, calls the fault hook with the calls made, and logs
numbers only."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import pytest

from agent_benchmarks.episode.budget import Budget, budget_record
from agent_benchmarks.episode.meter import LOG_NAME, ModelMeter
from agent_benchmarks.episode.wire import (
    adjust_request,
    calls_in_request,
    protocol_of,
    read_reply,
    sse_events,
)
from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    call,
)
from agent_benchmarks.records.pricing import load_price_table

MODEL = "claude-haiku-4-5"  # priced in the built-in table
ASK = [{"role": "user", "content": "x"}]
TOOL = {"name": "goto", "description": "open a page", "input_schema": {"type": "object"}}
OPENAI_TOOL = {
    "type": "function",
    "function": {"name": "goto", "parameters": {"type": "object", "properties": {}}},
}


def looping_policy() -> ScriptedPolicy:
    """A tool call every turn (the agent never stops on its own)."""
    return ScriptedPolicy([call("goto", url="http://x/")], on_exhausted="repeat_last")


@pytest.fixture
def upstream():
    with ScriptedModelServer(lambda task: looping_policy(), models=[MODEL]) as server:
        yield server


def anthropic_turns(client: anthropic.Anthropic, turns: int, stream: bool) -> list[object]:
    """Play an agent: each reply's tool calls answered, ``turns`` requests at most; the
    exception that ended it, if any, last."""
    messages: list[dict] = [{"role": "user", "content": "go"}]
    replies: list[object] = []
    for _ in range(turns):
        try:
            if stream:
                with client.messages.stream(
                    model=MODEL, max_tokens=100, messages=messages, tools=[TOOL]
                ) as events:
                    reply = events.get_final_message()
            else:
                reply = client.messages.create(
                    model=MODEL, max_tokens=100, messages=messages, tools=[TOOL]
                )
        except anthropic.APIStatusError as exc:
            replies.append(exc)
            return replies
        replies.append(reply)
        uses = [b for b in reply.content if b.type == "tool_use"]
        messages.append({"role": "assistant", "content": [b.model_dump() for b in uses]})
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": b.id, "content": "ok"} for b in uses
                ],
            }
        )
    return replies


@pytest.mark.parametrize("stream", [False, True])
def test_a_step_budget_withholds_the_reply_asking_for_the_call_past_it(
    upstream: ScriptedModelServer, tmp_path: Path, stream: bool
) -> None:
    seen: list[int] = []
    with ModelMeter(Budget(max_steps=3), load_price_table(None)) as meter:
        metered = meter.attempt(upstream.base_url("t1", "anthropic"), tmp_path, seen.append)
        client = anthropic.Anthropic(base_url=metered.url, api_key=API_KEY, max_retries=0)
        replies = anthropic_turns(client, 6, stream)
        summary = meter.finish(metered)
    # three replies with a call each reached the agent; the fourth was withheld
    assert len(replies) == 4 and isinstance(replies[-1], anthropic.BadRequestError)
    assert "budget exhausted (steps)" in str(replies[-1])
    assert summary["tool_calls"] == 3 and summary["budget_exhausted"] == "steps"
    assert summary["withheld"] == {"model_request": 4, "tool_calls_asked": ["goto"]}
    # the upstream answered four requests: the withheld one was billed, and is counted
    assert upstream.request_count("t1") == 4
    assert summary["tokens"] == upstream.usage("t1").total_tokens
    assert summary["cost_usd"] is not None and summary["cost_usd"] > 0
    # the hook saw the calls made before each request
    assert seen == [0, 1, 2, 3]
    log = [json.loads(line) for line in (tmp_path / LOG_NAME).read_text().splitlines()]
    assert [e["calls_before"] for e in log] == [0, 1, 2, 3]
    assert log[-1]["withheld"] == "budget steps exhausted"
    # numbers and names only: no key, no header, no body
    text = (tmp_path / LOG_NAME).read_text()
    assert API_KEY not in text and "http://x/" not in text


def test_a_request_after_the_budget_is_spent_never_reaches_the_model(
    upstream: ScriptedModelServer, tmp_path: Path
) -> None:
    with ModelMeter(Budget(max_steps=1), None) as meter:
        metered = meter.attempt(upstream.base_url("t2", "anthropic"), tmp_path)
        client = anthropic.Anthropic(base_url=metered.url, api_key=API_KEY, max_retries=0)
        assert len(anthropic_turns(client, 5, stream=False)) == 2
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
        meter.finish(metered)
    assert upstream.request_count("t2") == 2


def test_a_dollar_budget_ends_a_priced_attempt_and_says_when_it_could_not_be_held(
    upstream: ScriptedModelServer, tmp_path: Path
) -> None:
    budget = Budget(max_cost_usd=0.000001)
    with ModelMeter(budget, load_price_table(None)) as meter:
        metered = meter.attempt(upstream.base_url("t4", "anthropic"), tmp_path / "priced")
        client = anthropic.Anthropic(base_url=metered.url, api_key=API_KEY, max_retries=0)
        replies = anthropic_turns(client, 3, stream=False)
        priced = meter.finish(metered)
    assert isinstance(replies[-1], anthropic.BadRequestError) and len(replies) == 1
    assert priced["budget_exhausted"] == "cost_usd" and "cost_budget" not in priced
    # no price for the model: its dollars are unknown, so the budget could not be held
    with ModelMeter(budget, None) as meter:
        metered = meter.attempt(upstream.base_url("t5", "anthropic"), tmp_path / "unpriced")
        client = anthropic.Anthropic(base_url=metered.url, api_key=API_KEY, max_retries=0)
        replies = anthropic_turns(client, 3, stream=False)
        unpriced = meter.finish(metered)
    assert len(replies) == 3 and unpriced["budget_exhausted"] is None
    assert unpriced["cost_budget"] == f"not enforced: no price for {MODEL} (--prices)"


def test_a_token_budget_ends_the_attempt_at_the_reply_past_it(
    upstream: ScriptedModelServer, tmp_path: Path
) -> None:
    with ModelMeter(Budget(max_tokens=1), None) as meter:
        metered = meter.attempt(upstream.base_url("t3", "openai"), tmp_path)
        client = openai.OpenAI(base_url=metered.url, api_key=API_KEY, max_retries=0)
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "go"}], tools=[OPENAI_TOOL]
            )
        summary = meter.finish(metered)
    assert refused.value.status_code == 400 and "budget" in str(refused.value)
    assert summary["budget_exhausted"] == "tokens" and summary["tool_calls"] == 0
    assert summary["cost_usd"] is None and summary["unpriced_models"] == [MODEL]


def test_the_temperature_is_set_on_every_request_and_streams_report_usage(
    upstream: ScriptedModelServer, tmp_path: Path
) -> None:
    upstream.set_policy("t4", ScriptedPolicy([FinalAnswer("done")]))
    with ModelMeter(Budget(temperature=0.0), None) as meter:
        metered = meter.attempt(upstream.base_url("t4", "openai"), tmp_path)
        client = openai.OpenAI(base_url=metered.url, api_key=API_KEY, max_retries=0)
        chunks = list(
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True,
                temperature=0.9,
            )
        )  # fmt: skip
        # the model list and other requests pass through untouched
        assert [m.id for m in client.models.list()] == [MODEL]
        summary = meter.finish(metered)
    [request] = upstream.model_requests("t4")
    assert request.conversation is not None and request.conversation.temperature == 0.0
    # the meter asked the stream for its usage, which this client did not
    assert any(c.usage is not None for c in chunks)
    assert summary["tokens"] == upstream.usage("t4").total_tokens > 0


def test_codex_s_responses_stream_is_read(upstream: ScriptedModelServer, tmp_path: Path) -> None:
    with ModelMeter(Budget(max_steps=1), None) as meter:
        metered = meter.attempt(upstream.base_url("t5", "openai"), tmp_path)
        client = openai.OpenAI(base_url=metered.url, api_key=API_KEY, max_retries=0)
        tools = [{"type": "function", "name": "goto", "parameters": {"type": "object"}}]
        with client.responses.stream(model=MODEL, input="go", tools=tools) as stream:
            first = stream.get_final_response()
        calls = [item for item in first.output if item.type == "function_call"]
        history = [
            {"role": "user", "content": "go"},
            *(c.model_dump() for c in calls),
            *(
                {"type": "function_call_output", "call_id": c.call_id, "output": "ok"}
                for c in calls
            ),
        ]
        with pytest.raises(openai.BadRequestError):
            client.responses.create(model=MODEL, input=history, tools=tools, stream=True)
        summary = meter.finish(metered)
    assert len(calls) == 1 and summary["tool_calls"] == 1
    assert summary["withheld"]["tool_calls_asked"] == ["goto"]


def test_an_upstream_that_cannot_be_reached_is_a_502_in_the_protocol_s_shape(
    tmp_path: Path,
) -> None:
    with ModelMeter(Budget(max_steps=5), None) as meter:
        metered = meter.attempt("http://127.0.0.1:9", tmp_path)  # discard: nothing listens
        client = anthropic.Anthropic(base_url=metered.url, api_key=API_KEY, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as failed:
            client.messages.create(
                model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        summary = meter.finish(metered)
    assert failed.value.status_code == 502 and "did not answer" in str(failed.value)
    assert summary["upstream_errors"] and summary["budget_exhausted"] is None


# --- the wire, alone ---------------------------------------------------------------------


def sse(events: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def test_protocols_by_path() -> None:
    assert protocol_of("/v1/messages?beta=true") == "anthropic"
    assert protocol_of("/responses") == "openai_responses"
    assert protocol_of("/v1/chat/completions") == "openai_chat"
    assert protocol_of("/v1/messages/count_tokens") is None
    assert protocol_of("/v1/models") is None


def test_calls_made_are_read_from_each_protocol_s_history() -> None:
    said = [{"type": "text", "text": "ok"}, {"type": "tool_use"}, {"type": "tool_use"}]
    results = [{"type": "tool_result"}, {"type": "tool_result"}]
    anthropic_body = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": said},
            {"role": "user", "content": results},
        ]
    }
    assert calls_in_request("anthropic", anthropic_body) == 2
    responses = {
        "input": [{"type": "message"}, {"type": "function_call"}, {"type": "function_call_output"}]
    }
    assert calls_in_request("openai_responses", responses) == 1
    chat = {"messages": [{"role": "assistant", "tool_calls": [{}, {}, {}]}, {"role": "tool"}]}
    assert calls_in_request("openai_chat", chat) == 3
    assert calls_in_request("openai_chat", {"messages": "not a list"}) == 0


def test_replies_are_read_streamed_and_whole() -> None:
    start = {"model": "m", "usage": {"input_tokens": 10, "cache_read_input_tokens": 5}}
    events = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "content_block": {"type": "tool_use", "name": "click"}},
        {"type": "message_delta", "usage": {"output_tokens": 7}},
    ]
    stream = sse(events)
    facts = read_reply("anthropic", "text/event-stream", stream)
    assert facts.calls == ["click"] and facts.model == "m"
    assert facts.usage is not None and facts.usage.total_tokens == 22
    named = {"tool_calls": [{"index": 0, "function": {"name": "goto"}}]}
    argued = {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}
    chat = (
        sse([{"choices": [{"delta": named}]}, {"choices": [{"delta": argued}]}])
        + b"data: [DONE]\n\n"
    )
    assert read_reply("openai_chat", "text/event-stream", chat).calls == ["goto"]
    assert read_reply("openai_chat", "application/json", b"not json").readable is False
    assert sse_events(b": comment\ndata: [DONE]\n") == []


def test_the_request_gets_the_temperature_and_a_stream_its_usage() -> None:
    body = {"stream": True, "temperature": 1.0}
    assert adjust_request("openai_chat", body, 0.2) is True
    assert body == {"stream": True, "temperature": 0.2, "stream_options": {"include_usage": True}}
    assert adjust_request("openai_chat", body, 0.2) is False
    untouched = {"stream": True}
    assert adjust_request("anthropic", untouched, None) is False and untouched == {"stream": True}


# --- the budget's record ------------------------------------------------------------------


def test_the_manifest_records_one_budget_in_the_same_fields_for_every_agent() -> None:
    budget = Budget(max_steps=3, temperature=0.0)
    # Codex has no cap of its own; Claude Code with --max-turns 10; Lightpanda's 100 turns
    codex = budget_record(budget, {"max_turns": None, "max_tokens": None, "max_cost_usd": None})
    claude = budget_record(budget, {"max_turns": 10, "max_tokens": None, "max_cost_usd": None})
    native = budget_record(Budget(), {"max_turns": 100, "max_tokens": None, "max_cost_usd": None})
    keys = ("max_steps", "max_tokens", "max_cost_usd", "temperature")
    assert [codex[k] for k in keys] == [claude[k] for k in keys] == [3, None, None, 0.0]
    assert codex["enforced_by"]["max_steps"] == claude["enforced_by"]["max_steps"] == "harness"
    assert claude["agent"]["max_steps"] == 10 and "how" in claude
    # with no harness budget, the agent's own cap is the budget, and says so
    assert native["max_steps"] == 100 and native["enforced_by"]["max_steps"] == "agent"
    assert "how" not in native
    # a harness budget looser than the agent's own does not hide it
    assert budget_record(Budget(max_steps=500), {"max_turns": 100})["max_steps"] == 100


def test_the_budget_says_which_limit_was_passed() -> None:
    budget = Budget(max_steps=3, max_tokens=1000, max_cost_usd=0.5)
    assert budget.exhausted(3, 1000, 0.5) is None
    assert budget.exhausted(4, 5000, 9.0) == "steps"
    assert budget.exhausted(3, 1001, 9.0) == "tokens"
    assert budget.exhausted(3, 10, 0.51) == "cost_usd"
    assert budget.exhausted(3, 10, None) is None  # an unpriced model's dollars are unknown
    assert not Budget().any() and Budget(temperature=0.0).any()

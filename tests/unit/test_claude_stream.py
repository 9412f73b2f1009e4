"""The Claude Code stream-json reader, on the project's recordings and on synthetic streams.

The recordings (``tests/fixtures/claude-code``, made by ``tests/fixtures/record.py``) are of
the real ``claude -p`` 2.1.330 driven by the project's scripted Anthropic server, browsing
the localweb site with the real ``lightpanda mcp`` or agent-browser; every number asserted
here was read from them. They are required: a missing file fails the test, never skips it.
"""

from __future__ import annotations

import json

import pytest

from agent_benchmarks.backends.claude_stream import (
    Audit,
    ClaudeRun,
    audit_calls,
    parse_stream,
)
from agent_benchmarks.records.pricing import load_price_table
from agent_benchmarks.records.schema import ToolCall, Usage
from tests.fixtures import CLAUDE_CODE, SITE, captured_requests, fixture, read_jsonl

RUNS = (
    "lightpanda_mcp",
    "no_allowed_tools",
    "max_turns_1",
    "agent_browser_mcp_lightpanda",
    "disallow_search",
    "refused_calls",
)
CATALOGUE = {"url": f"{SITE}/catalogue"}
EXTRACT_ARGS = {
    "schema": json.dumps(
        {
            "rows": [
                {
                    "selector": "#catalogue tbody tr",
                    "fields": {"sku": "td:nth-child(1)", "price": "td:nth-child(4)"},
                }
            ]
        }
    )
}
ANSWER = "FINAL ANSWER: The Kestrel Binoculars (LW-1011) cost $129.00."
LP_TOOLS = [
    "click",
    "consoleLogs",
    "detectForms",
    "evaluate",
    "extract",
    "fill",
    "findElement",
    "getCookies",
    "getEnv",
    "getUrl",
    "goto",
    "hover",
    "html",
    "interactiveElements",
    "links",
    "markdown",
    "nodeDetails",
    "press",
    "save",
    "screenshot",
    "scroll",
    "search",
    "selectOption",
    "session_close",
    "session_list",
    "session_new",
    "setChecked",
    "structuredData",
    "tree",
    "waitForScript",
    "waitForSelector",
    "waitForState",
]
# What disallow_search passed to --disallowed-tools: gone from init.tools and the request.
LP_DISALLOWED = {"search", "save", "session_close", "session_list", "session_new"}
# The project's agent-browser MCP wrapper (competitors/agent-browser-mcp), as server "ab".
AB_TOOLS = [
    "back",
    "click",
    "close",
    "eval",
    "fill",
    "find",
    "forward",
    "get",
    "open",
    "press",
    "reload",
    "snapshot",
    "wait",
]


def parse_sample(run: str) -> ClaudeRun:
    return parse_stream(fixture(CLAUDE_CODE / run / "stream.jsonl").read_text(encoding="utf-8"))


def server_log(run: str) -> list[dict]:
    """The scripted server's log of the recording's requests (``requests.jsonl``)."""
    return read_jsonl(CLAUDE_CODE / run / "requests.jsonl")


def model_requests(run: str) -> list[dict]:
    """The model calls the scripted server answered, from its request log."""
    return [r for r in server_log(run) if r["route"] == "messages"]


def returncode(run: str) -> str:
    return fixture(CLAUDE_CODE / run / "rc.txt").read_text().strip()


# --- the recordings ---------------------------------------------------------------------------


def test_lightpanda_run_with_built_in_tools_offered() -> None:
    r = parse_sample("lightpanda_mcp")
    assert returncode("lightpanda_mcp") == "rc=0"
    assert r.problems == []
    assert (r.result_text, r.subtype, r.is_error, r.num_turns) == (ANSWER, "success", False, 3)
    assert r.total_cost_usd == 0.11780489999999999
    # The scripted server's deterministic counts for three requests (half of each prompt
    # billed as a cache read), as the result event reports them.
    assert r.usage == Usage(input_tokens=35385, cache_read_tokens=35383, output_tokens=69, turns=3)
    markdown, extract = r.calls
    assert (markdown.name, markdown.args) == ("mcp__lp__markdown", CATALOGUE)
    # 2.1.330 stamps assistant events too: latency is the tool_use to tool_result gap.
    assert (markdown.error, markdown.result_bytes, markdown.latency_ms) == (None, 2105, 55.0)
    assert markdown.output is not None
    assert "| LW\\-1011 | Kestrel Binoculars | Outdoor | $129.00 |" in markdown.output
    assert len(markdown.output.encode()) == 2105
    assert (extract.name, extract.args) == ("mcp__lp__extract", EXTRACT_ARGS)
    assert (extract.error, extract.result_bytes, extract.latency_ms) == (None, 1063, 19.0)
    assert extract.output is not None
    assert json.loads(extract.output)["rows"][10] == {"sku": "LW-1011", "price": "$129.00"}
    assert r.permission_denials == []
    assert r.errors == []
    assert r.mcp_servers == [{"name": "lp", "status": "connected"}]
    assert r.init is not None
    assert (r.init["model"], r.init["claude_code_version"], r.init["permissionMode"]) == (
        "claude-sonnet-4-6",
        "2.1.330",
        "default",
    )
    assert r.init["session_id"] == "589ab694-6762-40ff-b305-ce2f77b46af8"
    assert set(r.init) == {
        "session_id",
        "model",
        "claude_code_version",
        "permissionMode",
        "cwd",
        "tools",
        "mcp_servers",
    }
    # Recorded without --tools "": the built-ins were offered beside the 32 MCP tools.
    tools = r.init["tools"]
    assert len(tools) == 61
    assert {"Bash", "WebFetch", "WebSearch", "Task", "Read", "ToolSearch"} <= set(tools)
    assert [t for t in tools if t.startswith("mcp__")] == [f"mcp__lp__{t}" for t in LP_TOOLS]
    # With the built-ins on, 2.1.330 defers the MCP tools: the request names none of them
    # (ToolSearch would fetch them), yet the scripted calls to them ran.
    body = captured_requests(CLAUDE_CODE / "lightpanda_mcp")[0]["body"]
    sent = [t["name"] for t in body["tools"]]
    assert "ToolSearch" in sent and not any(t.startswith("mcp__") for t in sent)
    assert audit_calls(r.calls, "lp") == Audit(contaminated=False, foreign_calls=[])


def test_calls_without_permission_are_denied_but_listed() -> None:
    r = parse_sample("no_allowed_tools")
    assert r.problems == []
    # The scripted model answers regardless; the run is a "success" with two denials.
    assert (r.result_text, r.subtype, r.is_error, r.num_turns) == (ANSWER, "success", False, 3)
    assert r.total_cost_usd == 0.082914
    assert r.usage == Usage(input_tokens=24812, cache_read_tokens=24810, output_tokens=69, turns=3)
    assert [(c.name, c.args) for c in r.calls] == [
        ("mcp__lp__markdown", CATALOGUE),
        ("mcp__lp__extract", EXTRACT_ARGS),
    ]
    for call in r.calls:
        message = (
            f"Claude requested permissions to use {call.name}, but you haven't granted it yet."
        )
        assert (call.error, call.output) == (message, message)
        assert call.result_bytes == len(message)
    assert [c.result_bytes for c in r.calls] == [86, 85]
    assert [c.latency_ms for c in r.calls] == [28.0, 11.0]
    assert r.permission_denials == [
        {
            "tool_name": "mcp__lp__markdown",
            "tool_use_id": "toolu_280ac16ca3c663457b73c6a4",
            "tool_input": CATALOGUE,
        },
        {
            "tool_name": "mcp__lp__extract",
            "tool_use_id": "toolu_882a5915a5e394a589a70ab8",
            "tool_input": EXTRACT_ARGS,
        },
    ]
    assert r.init is not None
    assert r.init["tools"] == [f"mcp__lp__{t}" for t in LP_TOOLS]


def test_max_turns_ends_in_error_max_turns() -> None:
    r = parse_sample("max_turns_1")
    assert returncode("max_turns_1") == "rc=1"
    assert r.problems == []
    assert (r.result_text, r.subtype, r.is_error) == (None, "error_max_turns", True)
    # num_turns counts the refused second turn; only one model response happened.
    assert (r.num_turns, r.usage.turns) == (2, 1)
    assert r.errors == ["Reached maximum number of turns (1)"]
    assert r.total_cost_usd == 0.0273396
    assert r.usage == Usage(input_tokens=8203, cache_read_tokens=8202, output_tokens=18, turns=1)
    # The tool of the one allowed turn still ran before the cap stopped the loop.
    [markdown] = r.calls
    assert (markdown.name, markdown.args, markdown.error) == (
        "mcp__lp__markdown",
        CATALOGUE,
        None,
    )
    assert (markdown.result_bytes, markdown.latency_ms) == (2105, 53.0)


def test_agent_browser_run() -> None:
    r = parse_sample("agent_browser_mcp_lightpanda")
    assert r.problems == []
    assert (r.result_text, r.subtype, r.is_error, r.num_turns) == (
        "FINAL ANSWER: $129.00",
        "success",
        False,
        4,
    )
    assert r.total_cost_usd == 0.06253320000000001
    assert r.usage == Usage(input_tokens=18804, cache_read_tokens=18804, output_tokens=32, turns=4)
    assert [(c.name, c.args) for c in r.calls] == [
        ("mcp__ab__open", CATALOGUE),
        ("mcp__ab__get", {"what": "text", "target": "#catalogue"}),
        ("mcp__ab__close", {}),
    ]
    # The wrapper hands back agent-browser's own JSON reply, as upstream's wrapper does.
    assert [c.result_bytes for c in r.calls] == [408, 1777, 362]
    assert [c.error for c in r.calls] == [None, None, None]
    assert [c.latency_ms for c in r.calls] == [354.0, 115.0, 114.0]
    opened, get_text, closed = (json.loads(c.output or "") for c in r.calls)
    assert opened["success"] is True and opened["error"] is None
    assert (opened["data"]["url"], opened["data"]["title"]) == (
        CATALOGUE["url"],
        "Catalogue \u00b7 Lakeside Goods",
    )
    assert opened["data"]["lifecycle"]["effectiveLaunch"]["engine"] == "lightpanda"
    assert "LW-1011\tKestrel Binoculars\tOutdoor\t$129.00" in get_text["data"]["text"]
    assert closed["data"]["closed"] is True
    assert r.mcp_servers == [{"name": "ab", "status": "connected"}]
    assert r.init is not None
    assert r.init["tools"] == [f"mcp__ab__{t}" for t in AB_TOOLS]
    assert audit_calls(r.calls, "ab").contaminated is False
    assert audit_calls(r.calls, "lp").contaminated is True


def test_disallowed_tools_vanish_instead_of_being_denied() -> None:
    r = parse_sample("disallow_search")
    assert r.problems == []
    assert (r.result_text, r.subtype, r.num_turns, r.total_cost_usd) == (
        ANSWER,
        "success",
        3,
        0.0775257,
    )
    assert r.usage == Usage(input_tokens=23179, cache_read_tokens=23179, output_tokens=69, turns=3)
    assert [c.name for c in r.calls] == ["mcp__lp__markdown", "mcp__lp__extract"]
    assert [c.error for c in r.calls] == [None, None]
    assert [c.latency_ms for c in r.calls] == [55.0, 19.0]
    assert r.permission_denials == []
    assert r.init is not None
    assert r.init["tools"] == [f"mcp__lp__{t}" for t in LP_TOOLS if t not in LP_DISALLOWED]
    for request in captured_requests(CLAUDE_CODE / "disallow_search"):
        assert [t["name"] for t in request["body"]["tools"]] == r.init["tools"]


@pytest.mark.parametrize("run", RUNS)
def test_every_sample_agrees_with_the_server_and_the_price_table(run: str) -> None:
    r = parse_sample(run)
    assert r.problems == []
    # One distinct message id per model request the scripted server answered, and the
    # result's usage is exactly the server's ledger of those requests.
    ledger = [m["usage"] for m in model_requests(run)]
    assert r.usage.turns == len(ledger)
    assert r.usage == Usage(
        input_tokens=sum(u["input_tokens"] for u in ledger),
        cache_read_tokens=sum(u["cache_read_tokens"] for u in ledger),
        cache_write_tokens=sum(u["cache_write_tokens"] for u in ledger),
        output_tokens=sum(u["output_tokens"] for u in ledger),
        turns=len(ledger),
    )
    # The result's usage, priced at list price, is exactly Claude Code's own cost: the
    # result's output count is the real one, the assistant events' is not. The table
    # rounds to a millionth of a dollar; unrounded, the sum is the very same number.
    table = load_price_table(None)
    assert r.init is not None
    assert r.total_cost_usd is not None
    assert table.cost(r.usage, r.init["model"]) == round(r.total_cost_usd, 6)
    price = table.price_for(r.init["model"])
    assert price is not None
    unrounded = (
        r.usage.input_tokens * price.input
        + r.usage.cache_read_tokens * price.cache_read
        + r.usage.cache_write_tokens * price.cache_write
        + r.usage.output_tokens * price.output
    ) / 1_000_000
    assert unrounded == pytest.approx(r.total_cost_usd, abs=1e-12)
    # Every tool_use got its tool_result, and both events carry a timestamp (2.1.330), so
    # every call has a latency.
    assert r.calls
    assert all(c.result_bytes is not None and c.latency_ms is not None for c in r.calls)
    assert all(c.latency_ms >= 0 for c in r.calls if c.latency_ms is not None)


@pytest.mark.parametrize("run", RUNS)
def test_the_model_id_and_its_usage_come_from_init_and_model_usage(run: str) -> None:
    """Recorded with --model claude-sonnet-4-6: init names it, and the result's modelUsage
    holds the same four counts as its usage, under that id."""
    r = parse_sample(run)
    assert r.model == "claude-sonnet-4-6"
    assert list(r.model_usage) == ["claude-sonnet-4-6"]
    assert r.model_usage["claude-sonnet-4-6"] == r.usage.model_copy(update={"turns": 0})


# --- synthetic streams ----------------------------------------------------------------------

INIT = {
    "type": "system",
    "subtype": "init",
    "tools": ["mcp__lp__goto", "mcp__lp__markdown"],
    "mcp_servers": [{"name": "lp", "status": "failed", "error": "spawn ENOENT"}],
    "model": "m",
    "claude_code_version": "9.9.9",
    "slash_commands": ["clear"],
}


def usage(input: int, output: int = 1, read: int = 0, write: int = 0) -> dict:
    return {
        "input_tokens": input,
        "output_tokens": output,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


def assistant(msg_id: str, blocks: list[dict], tokens: dict, **kw) -> dict:
    message = {"id": msg_id, "role": "assistant", "content": blocks, "usage": tokens}
    return {"type": "assistant", "message": message, **kw}


def tool_use(use_id: str, name: str, **args) -> dict:
    return {"type": "tool_use", "id": use_id, "name": name, "input": args}


def tool_result(use_id: str, content, is_error: bool | None = None, **kw) -> dict:
    block = {"type": "tool_result", "tool_use_id": use_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return {"type": "user", "message": {"role": "user", "content": [block]}, **kw}


def result(tokens: dict, **kw) -> dict:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "result": "done",
        "total_cost_usd": 0.5,
        "usage": tokens,
        "permission_denials": [],
        **kw,
    }


def stream(*events: dict, tail: str = "") -> str:
    return "".join(json.dumps(e) + "\n" for e in events) + tail


def test_repeated_message_ids_count_once() -> None:
    text_block = {"type": "text", "text": "looking"}
    events = [
        INIT,
        assistant("msg_1", [text_block], usage(100, read=40, write=7)),
        assistant(
            "msg_1", [tool_use("t1", "mcp__lp__goto", url="u")], usage(100, read=40, write=7)
        ),
        tool_result("t1", "ok"),
        assistant("msg_2", [text_block], usage(120, read=50)),
        result(usage(220, output=25, read=90, write=7)),
    ]
    r = parse_stream(stream(*events))
    assert r.problems == []
    assert r.usage == Usage(
        input_tokens=220, cache_read_tokens=90, cache_write_tokens=7, output_tokens=25, turns=2
    )
    assert r.usage.cost_usd is None
    assert [c.name for c in r.calls] == ["mcp__lp__goto"]
    # init keeps the run's fields only, and the server list its name and status.
    assert r.init == {
        k: v for k, v in INIT.items() if k not in {"type", "subtype", "slash_commands"}
    }
    assert r.mcp_servers == [{"name": "lp", "status": "failed"}]


def test_result_usage_disagreeing_with_the_responses_is_noted() -> None:
    events = [INIT, assistant("msg_1", [], usage(100)), result(usage(150, output=9, read=3))]
    r = parse_stream(stream(*events))
    assert r.usage == Usage(input_tokens=150, cache_read_tokens=3, output_tokens=9, turns=1)
    assert r.problems == [
        "result usage input_tokens=150, cache_read_tokens=3, cache_write_tokens=0 differs from "
        "the sum over assistant responses input_tokens=100, cache_read_tokens=0, "
        "cache_write_tokens=0"
    ]


def test_model_usage_lists_each_model_with_its_own_counts() -> None:
    per_model = {
        "claude-sonnet-5-5": {
            "inputTokens": 100,
            "outputTokens": 9,
            "cacheReadInputTokens": 3,
            "cacheCreationInputTokens": 2,
            "costUSD": 0.4,
        },
        "claude-haiku-4-5": {"inputTokens": 7, "outputTokens": 1, "costUSD": 0.1},
        "broken": "not counts",
    }
    init = INIT | {"model": "claude-sonnet-5-5"}
    events = [init, assistant("msg_1", [], usage(100)), result(usage(107), modelUsage=per_model)]
    r = parse_stream(stream(*events))
    assert r.model == "claude-sonnet-5-5"
    assert r.model_usage == {
        "claude-sonnet-5-5": Usage(
            input_tokens=100, cache_read_tokens=3, cache_write_tokens=2, output_tokens=9
        ),
        "claude-haiku-4-5": Usage(input_tokens=7, output_tokens=1),
    }


def test_result_without_usage_falls_back_on_the_responses() -> None:
    end = result({})
    del end["usage"]
    r = parse_stream(stream(INIT, assistant("msg_1", [], usage(100, read=4)), end))
    assert r.problems == [
        "usage summed from assistant events: their output_tokens is a lower bound"
    ]
    assert r.usage == Usage(input_tokens=100, cache_read_tokens=4, output_tokens=1, turns=1)
    assert (r.result_text, r.subtype, r.is_error, r.total_cost_usd) == (
        "done",
        "success",
        False,
        0.5,
    )


def test_torn_last_line_and_no_result() -> None:
    events = [
        INIT,
        assistant("msg_1", [tool_use("t1", "mcp__lp__goto", url="u")], usage(100, read=5)),
        tool_result("t1", [{"type": "text", "text": "Navigated."}]),
        assistant("msg_2", [tool_use("t2", "mcp__lp__markdown")], usage(110, read=5, write=2)),
        assistant("msg_2", [tool_use("t2", "mcp__lp__markdown")], usage(110, 3, read=5, write=2)),
    ]
    r = parse_stream(stream(*events, tail='{"type":"user","message":{"role":"us'))
    assert r.problems == [
        "line 6: not JSON (torn last line?)",
        "tool_use mcp__lp__markdown (t2) has no tool_result",
        "no result event (claude killed before finishing?)",
        "usage summed from assistant events: their output_tokens is a lower bound",
    ]
    # Per message id, the largest count of its events, summed over the two responses.
    assert r.usage == Usage(
        input_tokens=210, cache_read_tokens=10, cache_write_tokens=2, output_tokens=4, turns=2
    )
    assert (r.result_text, r.subtype, r.is_error, r.num_turns, r.total_cost_usd) == (
        None,
        None,
        True,
        None,
        None,
    )
    goto, markdown = r.calls
    assert (goto.output, goto.result_bytes, goto.error) == ("Navigated.", 10, None)
    assert (markdown.output, markdown.result_bytes, markdown.error) == (None, None, None)


def test_empty_stream() -> None:
    r = parse_stream("")
    assert r.problems == [
        "no system/init event",
        "no result event (claude killed before finishing?)",
        "usage summed from assistant events: their output_tokens is a lower bound",
    ]
    assert (r.calls, r.usage, r.init, r.mcp_servers, r.is_error) == ([], Usage(), None, [], True)


def test_tool_result_error_and_blocks() -> None:
    events = [
        INIT,
        assistant("msg_1", [tool_use("t1", "mcp__lp__click", selector="#no")], usage(10)),
        tool_result("t1", [{"type": "text", "text": "No element"}], is_error=True),
        assistant("msg_2", [tool_use("t2", "mcp__lp__click")], usage(11)),
        tool_result("t2", "", is_error=True),
        assistant("msg_3", [tool_use("t3", "mcp__lp__screenshot")], usage(12)),
        tool_result("t3", [{"type": "text", "text": "Caf\u00e9"}, {"type": "image", "source": {}}]),
        result(usage(33, output=3)),
    ]
    failed, silent, shot = parse_stream(stream(*events)).calls
    assert (failed.error, failed.output, failed.args) == (
        "No element",
        "No element",
        {"selector": "#no"},
    )
    assert (silent.error, silent.output, silent.result_bytes) == ("error", "", 0)
    # Bytes, not characters; an image block leaves a marker in the text.
    assert (shot.error, shot.output, shot.result_bytes) == (None, "Caf\u00e9\n[image block]", 19)


def test_output_truncation() -> None:
    events = [
        INIT,
        assistant("msg_1", [tool_use("t1", "mcp__lp__markdown")], usage(10)),
        tool_result("t1", "x" * 30, is_error=True),
        result(usage(10)),
    ]
    [call] = parse_stream(stream(*events), max_output_chars=10).calls
    assert call.output == "x" * 10 + "\n[... truncated 20 chars]"
    assert call.error == call.output
    assert call.result_bytes == 30
    [whole] = parse_stream(stream(*events), max_output_chars=30).calls
    assert whole.output == "x" * 30


def test_latency_when_both_events_carry_a_timestamp() -> None:
    events = [
        INIT,
        assistant(
            "msg_1",
            [tool_use("t1", "mcp__lp__goto"), tool_use("t2", "mcp__lp__goto")],
            usage(10),
            timestamp="2026-11-21T22:35:15.023Z",
        ),
        tool_result("t1", "ok", timestamp="2026-11-21T22:35:15.273Z"),
        tool_result("t2", "ok", timestamp="not a time"),
        result(usage(10)),
    ]
    first, second = parse_stream(stream(*events)).calls
    assert first.latency_ms == pytest.approx(250.0)
    assert second.latency_ms is None


def test_odd_events_are_noted_or_skipped() -> None:
    events = [
        INIT,
        {"type": "system", "subtype": "api_retry", "attempt": 1},
        {"type": "rate_limit_event"},
        assistant("msg_1", [tool_use("t1", "mcp__lp__goto")], usage(10)),
        tool_result("t1", "ok"),
        tool_result("t1", "again"),
        tool_result("t9", "who?"),
        result(usage(10), is_error="yes", subtype="error_during_execution", num_turns=True),
    ]
    r = parse_stream(stream(*events, tail="[1]\n\n"))
    assert r.problems == [
        "line 6: unexpected tool_result for t1",
        "line 7: unexpected tool_result for t9",
        "line 9: not a JSON object",
    ]
    assert [c.output for c in r.calls] == ["ok"]
    # A malformed is_error falls back on the subtype; a boolean is no turn count.
    assert (r.subtype, r.is_error, r.num_turns) == ("error_during_execution", True, None)


# --- audit ------------------------------------------------------------------------------------


def call(name: str, **args) -> ToolCall:
    return ToolCall(name=name, args=args)


def test_audit_clean_run() -> None:
    calls = [call("mcp__lp__goto", url="u"), call("mcp__lp__markdown")]
    assert audit_calls(calls, "lp") == Audit(contaminated=False, foreign_calls=[])
    assert audit_calls([], "lp") == Audit(contaminated=False, foreign_calls=[])


def test_audit_flags_built_ins() -> None:
    calls = [
        call("mcp__lp__goto", url="u"),
        call("Bash", command="curl http://example.org"),
        call("WebSearch", query="green gadget price"),
    ]
    assert audit_calls(calls, "lp") == Audit(
        contaminated=True,
        foreign_calls=[
            {"name": "Bash", "args": {"command": "curl http://example.org"}},
            {"name": "WebSearch", "args": {"query": "green gadget price"}},
        ],
    )


def test_audit_flags_another_server_and_a_tool_outside_the_allowed_set() -> None:
    calls = [
        call("mcp__lp__markdown"),
        call("mcp__lp__search", text="gadget"),
        call("mcp__lpx__goto"),
        call("mcp__other__lp__goto"),
    ]
    audit = audit_calls(calls, "lp", allowed_tools={"markdown", "goto"})
    assert audit.contaminated
    assert audit.foreign_calls == [
        {"name": "mcp__lp__search", "args": {"text": "gadget"}},
        {"name": "mcp__lpx__goto", "args": {}},
        {"name": "mcp__other__lp__goto", "args": {}},
    ]
    # Without an allowed set every tool of the server is fine.
    assert [c["name"] for c in audit_calls(calls, "lp").foreign_calls] == [
        "mcp__lpx__goto",
        "mcp__other__lp__goto",
    ]


def test_audit_ignores_tool_search_and_counts_denied_calls() -> None:
    calls = [call("ToolSearch", query="select:mcp__lp__goto"), call("mcp__lp__goto")]
    assert audit_calls(calls, "lp", allowed_tools={"goto"}).contaminated is False
    # no_allowed_tools' calls were all denied: attempts, recorded as refused, not foreign.
    denied = parse_sample("no_allowed_tools")
    assert all(c.error for c in denied.calls)
    audit = audit_calls(denied.calls, "lp", allowed_tools={"goto"}, refusals=denied.refusals)
    not_granted = "Claude requested permissions to use {}, but you haven't granted it yet."
    assert audit == Audit(
        contaminated=False,
        foreign_calls=[],
        refused_calls=[
            {
                "name": "mcp__lp__markdown",
                "args": CATALOGUE,
                "why": not_granted.format("mcp__lp__markdown") + " (user-rejected)",
            },
            {
                "name": "mcp__lp__extract",
                "args": EXTRACT_ARGS,
                "why": not_granted.format("mcp__lp__extract") + " (user-rejected)",
            },
        ],
    )
    # Without what the stream says of them, the same calls cannot be told refused.
    assert audit_calls(denied.calls, "lp", allowed_tools={"goto"}).contaminated


# The refused_calls recording: the MCP backend's lockdown on the upstream surface (see
# record.py), lightpanda mcp as server `browser`.
LOCKDOWN_ALLOWED = {"goto", "markdown", "extract", "tree", "links", "getUrl"}
LOCKDOWN_BUILT_INS = {"TodoWrite", "LS"}


def test_claude_codes_refusals_are_read_from_the_recording() -> None:
    """Claude Code 2.1.330's words for each kind of refusal, exactly as recorded; the
    goto that ran and failed on its own and the markdown that worked are not refusals."""
    r = parse_sample("refused_calls")
    assert [c.name for c in r.calls] == [
        "WebSearch",
        "Bash",
        "mcp__browser__screenshot",
        "mcp__browser__nodeDetails",
        "mcp__browser__noSuchTool",
        "mcp__browser__goto",
        "mcp__browser__markdown",
    ]
    disabled = (
        "No such tool available: {0}. {0} is disabled for this session, in subagents as "
        "well as here."
    )
    assert r.refusals == {
        0: disabled.format("WebSearch"),
        1: disabled.format("Bash"),
        2: "No such tool available: mcp__browser__screenshot",
        3: "Claude requested permissions to use mcp__browser__nodeDetails, but you haven't "
        "granted it yet. (user-rejected)",
        4: "No such tool available: mcp__browser__noSuchTool",
    }
    # Every refused call came back as an error, and so did the goto that ran and failed.
    assert all(r.calls[i].error for i in range(6))
    assert (
        r.calls[0].output
        == f"<tool_use_error>Error: {disabled.format('WebSearch')}</tool_use_error>"
    )
    assert r.calls[5].error == "navigation failed: CouldntConnect"
    assert r.calls[6].error is None and "$129.00" in (r.calls[6].output or "")
    assert [d["tool_name"] for d in r.permission_denials] == ["mcp__browser__nodeDetails"]
    # The refused tools were never offered to the model (nodeDetails was: not allowed).
    assert r.init is not None
    offered = set(r.init["tools"])
    assert not {"WebSearch", "Bash", "mcp__browser__screenshot"} & offered
    assert "mcp__browser__nodeDetails" in offered
    assert r.result_text == ANSWER and r.is_error is False


def test_a_refused_web_search_is_refused_not_contamination() -> None:
    r = parse_sample("refused_calls")
    audit = audit_calls(r.calls, "browser", LOCKDOWN_ALLOWED, LOCKDOWN_BUILT_INS, r.refusals)
    assert audit.contaminated is False
    assert audit.foreign_calls == []
    assert [(c["name"], c["args"]) for c in audit.refused_calls] == [
        ("WebSearch", {"query": "Kestrel Binoculars LW-1011 price"}),
        ("Bash", {"command": "echo refused"}),
        ("mcp__browser__screenshot", {}),
        ("mcp__browser__nodeDetails", {"backendNodeId": 1}),
        ("mcp__browser__noSuchTool", {"x": 1}),
    ]
    assert audit.refused_calls[0]["why"].startswith("No such tool available: WebSearch.")


def test_an_mcp_tools_own_error_is_neither_refused_nor_foreign() -> None:
    """goto on a port where nothing listens ran (Claude Code accepted the call) and failed
    inside lightpanda: an allowed tool's failure, so the audit says nothing of it; on a
    surface where goto is not allowed, it ran all the same, so it contaminates."""
    r = parse_sample("refused_calls")
    goto = r.calls[5]
    assert goto.name == "mcp__browser__goto" and 5 not in r.refusals
    audit = audit_calls(r.calls, "browser", LOCKDOWN_ALLOWED, LOCKDOWN_BUILT_INS, r.refusals)
    assert "mcp__browser__goto" not in [c["name"] for c in audit.refused_calls]
    narrower = audit_calls(r.calls, "browser", LOCKDOWN_ALLOWED - {"goto"}, refusals=r.refusals)
    assert narrower.contaminated
    assert narrower.foreign_calls == [
        {"name": "mcp__browser__goto", "args": {"url": "http://127.0.0.1:9/nothing-listens-here"}}
    ]
    assert len(narrower.refused_calls) == 5


def test_a_foreign_call_that_ran_still_contaminates() -> None:
    """lightpanda_mcp's markdown ran and returned the catalogue: with markdown outside the
    allowed tools it is foreign, refused or not being no question."""
    r = parse_sample("lightpanda_mcp")
    assert r.refusals == {} and r.calls[0].error is None
    audit = audit_calls(r.calls, "lp", allowed_tools={"extract"}, refusals=r.refusals)
    assert audit == Audit(
        contaminated=True,
        foreign_calls=[{"name": "mcp__lp__markdown", "args": CATALOGUE}],
        refused_calls=[],
    )


def _tool_result_stream(result: dict, denials: list | None = None, **user_fields) -> str:
    """A synthetic stream: one tool_use of mcp__lp__goto, its tool_result, a result."""
    use = {"type": "tool_use", "id": "t1", "name": "mcp__lp__goto", "input": {}}
    events = [
        INIT,
        {"type": "assistant", "message": {"id": "m1", "content": [use], "usage": usage(5)}},
    ]
    if result:
        block = {"type": "tool_result", "tool_use_id": "t1", **result}
        events.append({"type": "user", "message": {"content": [block]}, **user_fields})
    events.append({"type": "result", "subtype": "success", "permission_denials": denials or []})
    return "\n".join(json.dumps(e) for e in events)


NO_SUCH_GOTO = "<tool_use_error>Error: No such tool available: mcp__lp__goto</tool_use_error>"
NO_SUCH_OTHER = "<tool_use_error>Error: No such tool available: mcp__lp__x</tool_use_error>"
NOT_EXECUTED = {"tool_result_meta": [{"id": "t1", "non_execution_kind": "user-rejected"}]}
ACCEPTED = {"tool_result_meta": [{"id": "t1", "permission_decision": {"decision": "accept"}}]}


@pytest.mark.parametrize(
    ("result", "user_fields", "refused"),
    [
        # Claude Code's wrapper is what tells its refusal from a tool's own text.
        ({"is_error": True, "content": NO_SUCH_GOTO}, {}, True),
        ({"is_error": True, "content": "No such tool available: mcp__lp__goto"}, {}, False),
        # not an error, whatever it says
        ({"is_error": False, "content": NO_SUCH_GOTO}, {}, False),
        # the wrapper naming another tool
        ({"is_error": True, "content": NO_SUCH_OTHER}, {}, False),
        # Claude Code's meta says the call never executed
        ({"is_error": True, "content": "denied"}, NOT_EXECUTED, True),
        # accepted and run: the tool's own error
        ({"is_error": True, "content": "navigation failed: CouldntConnect"}, ACCEPTED, False),
        # accepted and run, though its own text reads like Claude Code's permission refusal
        (
            {"is_error": True, "content": "Claude requested permissions to use mcp__lp__goto, x"},
            ACCEPTED,
            False,
        ),
    ],
)
def test_only_claude_codes_own_refusals_count(result: dict, user_fields: dict, refused: bool):
    r = parse_stream(_tool_result_stream(result, **user_fields))
    assert (0 in r.refusals) is refused
    audit = audit_calls(r.calls, "lp", allowed_tools=set(), refusals=r.refusals)
    assert audit.contaminated is not refused


def test_a_denied_call_without_its_tool_result_is_refused_an_unanswered_one_is_not() -> None:
    denial = {"tool_name": "mcp__lp__goto", "tool_use_id": "t1", "tool_input": {}}
    r = parse_stream(_tool_result_stream({}, denials=[denial]))
    assert r.refusals == {0: "listed in the result's permission_denials"}
    assert not audit_calls(r.calls, "lp", allowed_tools=set(), refusals=r.refusals).contaminated
    # No tool_result and no denial: it may have run (a killed run), so it counts as foreign.
    r = parse_stream(_tool_result_stream({}))
    assert r.refusals == {}
    assert audit_calls(r.calls, "lp", allowed_tools=set(), refusals=r.refusals).contaminated

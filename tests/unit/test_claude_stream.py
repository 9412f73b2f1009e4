"""The Claude Code stream-json reader, on the real wire samples and on synthetic streams.

The samples (``../shared/wire-samples/claude-code``) were recorded from ``claude -p`` 2.1.197
driven by a scripted Anthropic server; every number asserted here was read from those
files. They are required: a missing sample fails the test rather than skipping it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.backends.claude_stream import (
    Audit,
    ClaudeRun,
    audit_calls,
    parse_stream,
)
from agent_benchmarks.pricing import load_price_table
from agent_benchmarks.records import ToolCall, Usage
from tests.support import SHARED

SAMPLES = SHARED / "wire-samples" / "claude-code"
RUNS = (
    "run1_scripted_lightpanda",
    "run3_no_allow",
    "run4_maxturns1",
    "run5_agent_browser_mcp_lightpanda",
    "run6_disallow_search",
)
SITE = "http://127.0.0.1:8765"
PRODUCTS = {"url": f"{SITE}/products.html"}
EXTRACT_ARGS = {
    "schema": json.dumps(
        {
            "rows": [
                {
                    "selector": "#products tbody tr",
                    "fields": {"sku": "td:nth-child(1)", "price": "td:nth-child(3)"},
                }
            ]
        }
    )
}
ANSWER = "FINAL ANSWER: The Green Gadget (B-300) costs 99.99 USD."
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
# What run6 passed to --disallowed-tools: gone from init.tools and from the request.
LP_DISALLOWED = {"search", "save", "session_close", "session_list", "session_new"}


def sample(rel: str) -> Path:
    path = SAMPLES / rel
    if not path.exists():
        pytest.fail(f"wire sample missing: {path}")
    return path


def parse_sample(run: str) -> ClaudeRun:
    return parse_stream(sample(f"{run}/stream.jsonl").read_text(encoding="utf-8"))


def model_requests(run: str) -> int:
    """How many model calls the scripted server answered, from its request index."""
    lines = sample(f"{run}/requests_index.log").read_text(encoding="utf-8").splitlines()
    return sum(" POST /v1/messages" in line for line in lines)


# --- the real samples -------------------------------------------------------------------------


def test_lightpanda_run_with_built_in_tools_offered() -> None:
    r = parse_sample("run1_scripted_lightpanda")
    assert r.problems == []
    assert (r.result_text, r.subtype, r.is_error, r.num_turns) == (ANSWER, "success", False, 3)
    assert r.total_cost_usd == 0.001377
    # Three responses of 102, 103 and 104 input tokens; the assistant events show 1 output
    # token each (the stream's opening count), the result the true 10 each.
    assert r.usage == Usage(input_tokens=309, output_tokens=30, turns=3)
    markdown, extract = r.calls
    assert (markdown.name, markdown.args) == ("mcp__lp__markdown", PRODUCTS)
    assert (markdown.error, markdown.result_bytes, markdown.latency_ms) == (None, 295, None)
    assert markdown.output is not None
    assert "| B\\-300 | Green Gadget | 99.99 | 7 |" in markdown.output
    assert (extract.name, extract.args) == ("mcp__lp__extract", EXTRACT_ARGS)
    assert (extract.error, extract.result_bytes, extract.latency_ms) == (None, 137, None)
    assert extract.output is not None
    assert json.loads(extract.output)["rows"][2] == {"sku": "B-300", "price": "99.99"}
    assert r.permission_denials == []
    assert r.errors == []
    assert r.mcp_servers == [{"name": "lp", "status": "connected"}]
    assert r.init is not None
    assert (r.init["model"], r.init["claude_code_version"], r.init["permissionMode"]) == (
        "claude-sonnet-4-5",
        "2.1.197",
        "default",
    )
    assert r.init["session_id"] == "179d86aa-4267-4848-b0e0-9c4984049e03"
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
    assert len(tools) == 59
    assert {"Bash", "WebFetch", "WebSearch", "Task", "Read"} <= set(tools)
    assert [t for t in tools if t.startswith("mcp__")] == [f"mcp__lp__{t}" for t in LP_TOOLS]
    assert audit_calls(r.calls, "lp") == Audit(contaminated=False, foreign_calls=[])


def test_calls_without_permission_are_denied_but_listed() -> None:
    r = parse_sample("run3_no_allow")
    assert r.problems == []
    # The scripted model answers regardless; the run is a "success" with two denials.
    assert (r.result_text, r.subtype, r.is_error, r.num_turns) == (ANSWER, "success", False, 3)
    assert r.total_cost_usd == 0.001377
    assert r.usage == Usage(input_tokens=309, output_tokens=30, turns=3)
    assert [(c.name, c.args) for c in r.calls] == [
        ("mcp__lp__markdown", PRODUCTS),
        ("mcp__lp__extract", EXTRACT_ARGS),
    ]
    for call in r.calls:
        message = (
            f"Claude requested permissions to use {call.name}, but you haven't granted it yet."
        )
        assert (call.error, call.output) == (message, message)
        assert call.result_bytes == len(message)
    assert r.permission_denials == [
        {
            "tool_name": "mcp__lp__markdown",
            "tool_use_id": "toolu_c9fa66b7115d4c26ae5e",
            "tool_input": PRODUCTS,
        },
        {
            "tool_name": "mcp__lp__extract",
            "tool_use_id": "toolu_3cea43125d04499cbd5e",
            "tool_input": EXTRACT_ARGS,
        },
    ]
    assert r.init is not None
    assert r.init["tools"] == [f"mcp__lp__{t}" for t in LP_TOOLS]


def test_max_turns_ends_in_error_max_turns() -> None:
    r = parse_sample("run4_maxturns1")
    assert sample("run4_maxturns1/rc.txt").read_text().strip() == "rc=1"
    assert r.problems == []
    assert (r.result_text, r.subtype, r.is_error) == (None, "error_max_turns", True)
    # num_turns counts the refused second turn; only one model response happened.
    assert (r.num_turns, r.usage.turns) == (2, 1)
    assert r.errors == ["Reached maximum number of turns (1)"]
    assert r.total_cost_usd == 0.000456
    assert r.usage == Usage(input_tokens=102, output_tokens=10, turns=1)
    # The tool of the one allowed turn still ran before the cap stopped the loop.
    [markdown] = r.calls
    assert (markdown.name, markdown.args, markdown.error) == ("mcp__lp__markdown", PRODUCTS, None)
    assert markdown.result_bytes == 295


def test_agent_browser_run() -> None:
    r = parse_sample("run5_agent_browser_mcp_lightpanda")
    assert r.problems == []
    assert (r.result_text, r.subtype, r.is_error, r.num_turns) == (
        "FINAL ANSWER: 99.99 USD",
        "success",
        False,
        4,
    )
    assert r.total_cost_usd == 0.0018419999999999999
    assert r.usage == Usage(input_tokens=414, output_tokens=40, turns=4)
    assert [(c.name, c.args) for c in r.calls] == [
        ("mcp__ab__agent_browser_open", PRODUCTS),
        ("mcp__ab__agent_browser_get_text", {"selector": "#products"}),
        ("mcp__ab__agent_browser_close", {}),
    ]
    # agent-browser returns its result as a plain string, not a list of text blocks.
    assert [c.result_bytes for c in r.calls] == [874, 1120, 820]
    assert [c.error for c in r.calls] == [None, None, None]
    get_text = r.calls[1].output
    assert get_text is not None
    assert "B-300\\tGreen Gadget\\t99.99" in json.loads(get_text)["stdout"]
    assert r.mcp_servers == [{"name": "ab", "status": "connected"}]
    assert r.init is not None
    assert len(r.init["tools"]) == 29
    assert all(t.startswith("mcp__ab__agent_browser_") for t in r.init["tools"])
    assert audit_calls(r.calls, "ab").contaminated is False
    assert audit_calls(r.calls, "lp").contaminated is True


def test_disallowed_tools_vanish_instead_of_being_denied() -> None:
    r = parse_sample("run6_disallow_search")
    assert r.problems == []
    assert (r.result_text, r.subtype, r.num_turns, r.total_cost_usd) == (
        ANSWER,
        "success",
        3,
        0.001377,
    )
    assert r.usage == Usage(input_tokens=309, output_tokens=30, turns=3)
    assert [c.name for c in r.calls] == ["mcp__lp__markdown", "mcp__lp__extract"]
    assert [c.error for c in r.calls] == [None, None]
    assert r.permission_denials == []
    assert r.init is not None
    assert r.init["tools"] == [f"mcp__lp__{t}" for t in LP_TOOLS if t not in LP_DISALLOWED]
    body = json.loads(sample("run6_disallow_search/req_002.json").read_text())["body"]
    assert [t["name"] for t in body["tools"]] == r.init["tools"]


@pytest.mark.parametrize("run", RUNS)
def test_every_sample_agrees_with_the_server_and_the_price_table(run: str) -> None:
    r = parse_sample(run)
    assert r.problems == []
    # One distinct message id per model request the scripted server answered.
    assert r.usage.turns == model_requests(run)
    # The result's usage, priced at list price, is exactly Claude Code's own cost: the
    # result's output count is the real one, the assistant events' is not.
    table = load_price_table(None)
    assert r.init is not None
    assert table.cost(r.usage, r.init["model"]) == pytest.approx(r.total_cost_usd, abs=1e-9)
    # Every tool_use got its tool_result, and the stream has no timestamps on assistant
    # events, so no latency can be measured.
    assert all(c.result_bytes is not None and c.latency_ms is None for c in r.calls)


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
    # run3's calls were all denied; they are still attempts and would be audited as such.
    denied = parse_sample("run3_no_allow").calls
    assert all(c.error for c in denied)
    assert audit_calls(denied, "lp", allowed_tools={"goto"}).foreign_calls == [
        {"name": "mcp__lp__markdown", "args": PRODUCTS},
        {"name": "mcp__lp__extract", "args": EXTRACT_ARGS},
    ]

"""The oracle's tool surfaces: how abstract steps become tool calls, and how what a tool
returned is read. Conversations are built the way the scripted server builds them from the
wire, so the policy replays real-shaped histories (retries included)."""

from __future__ import annotations

import json

import pytest

from agent_benchmarks.localweb.models import (
    Conversation,
    FinalAnswer,
    Message,
    ToolCallAction,
    ToolResult,
    ToolSpec,
    ToolUse,
)
from agent_benchmarks.localweb.oracle import (
    AGENT_BROWSER,
    BROWSER_USE,
    ORACLES,
    Answer,
    Check,
    Click,
    Fill,
    Go,
    Oracle,
    OraclePolicy,
    OracleStuck,
    Read,
    Select,
    StepDone,
    ToolRequest,
    WaitFor,
    WaitForText,
    html_reading,
    snapshot_reading,
)

ROOT = "http://127.0.0.1:9/t/x.a1/"

PAGE = """<html><body>
<header><a href="/t/x.a1/">Home</a><a href="/t/x.a1/cart">Cart (0)</a></header>
<form><input id="name" type="text"><input type="hidden" name="csrf" value="1">
<input id="email" type="email"><select id="topic"><option value="">Choose</option>
<option value="bulk-order">Bulk order</option></select>
<input id="terms" type="checkbox"><button id="send">Send enquiry</button></form>
</body></html>"""

STATE = {
    "url": ROOT,
    "interactive_elements": [
        {"index": 7, "tag": "a", "text": "Home", "href": "/t/x.a1/"},
        {"index": 9, "tag": "a", "text": "Cart (\n0\n)", "href": "/t/x.a1/cart"},
        {"index": 2, "tag": "input", "text": ""},
        {"index": 3, "tag": "input", "text": ""},
        {"index": 4, "tag": "select", "text": "Choose\nBulk order"},
        {"index": 5, "tag": "input", "text": ""},
        {"index": 11, "tag": "button", "text": "Send enquiry"},
    ],
}


def _conversation(tools: list[str], exchanges: list[tuple[str, dict, str]]) -> Conversation:
    """A history of (tool, args, result text) exchanges, one call per assistant turn."""
    messages = [Message(role="user", text="task")]
    for n, (name, args, text) in enumerate(exchanges):
        messages.append(
            Message(role="assistant", tool_calls=[ToolUse(id=f"c{n}", name=name, args=args)])
        )
        messages.append(
            Message(role="user", tool_results=[ToolResult(id=f"c{n}", text=text, name=name)])
        )
    return Conversation(
        protocol="anthropic",
        task_id="x",
        request_number=len(exchanges) + 1,
        model="m",
        messages=messages,
        tools=[ToolSpec(name=f"mcp__browser__{t}") for t in tools],
    )


def _play(policy: OraclePolicy, tools: list[str], replies: dict[str, str]) -> tuple[list, str]:
    """Run the policy against canned tool replies (keyed by tool name) to its answer."""
    exchanges: list[tuple[str, dict, str]] = []
    for _ in range(60):
        action = policy.step(_conversation(tools, exchanges))
        if isinstance(action, FinalAnswer):
            return exchanges, action.text
        assert isinstance(action, ToolCallAction)
        call = action.calls[0]
        short = call.name.removeprefix("mcp__browser__")
        exchanges.append((short, call.args, replies[short]))
    raise AssertionError("the policy never answered")


def test_html_reading_gives_markdown_tables_links_and_headings() -> None:
    html = (
        "<h1>Kettle</h1><table><tr><th>SKU</th><th>Name</th></tr>"
        "<tr><td>LW-1</td><td>A_b</td></tr></table><a href='/p/2'>Next page</a>"
    )
    text = html_reading(html)
    assert "# Kettle" in text
    assert "| LW-1 | A_b |" in text  # markdown escapes undone
    assert "[Next page](/p/2)" in text


def test_snapshot_reading_keeps_text_and_heading_levels() -> None:
    snapshot = (
        '- main\n  - heading "Specs" [level=1, ref=e4]\n  - paragraph\n'
        '    - StaticText "Battery life: 38 hours, \\"quoted\\"."\n'
        '  - link "Cart (0)" [ref=e3]\n  - Iframe "Pickup" [ref=e15]'
    )
    assert snapshot_reading(snapshot).splitlines() == [
        "# Specs",
        'Battery life: 38 hours, "quoted".',
        "Cart (0)",
        "Pickup",
    ]


def _ab_reply(**data: object) -> ToolResult:
    """A reply of our agent-browser wrapper: agent-browser's JSON, as it printed it."""
    return ToolResult(id="r", text=json.dumps({"success": True, "data": data, "error": None}))


def test_agent_browser_reads_elements_through_outer_html() -> None:
    first = AGENT_BROWSER.advance(Read("table"), None, [])
    assert isinstance(first, ToolRequest) and first.name == "eval"
    assert "outerHTML" in first.args["js"]
    returned = _ab_reply(result="<table><tr><td>LW-9</td></tr></table>", origin="x")
    done = AGENT_BROWSER.advance(Read("table"), None, [returned])
    assert isinstance(done, StepDone) and "| LW-9 |" in done.text
    plain = _ab_reply(result="<p>Units left: 4</p>")
    assert AGENT_BROWSER.advance(Read("#deal"), None, [plain]) == StepDone("Units left: 4")
    # Claude Code may add a line of its own after the tool's text
    trailed = ToolResult(id="3", text=plain.text + "\n(note)")
    assert AGENT_BROWSER.advance(Read("#deal"), None, [trailed]) == StepDone("Units left: 4")


def test_agent_browser_steps_use_upstreams_tool_and_argument_names() -> None:
    """The wrapper's surface is upstream's: target, js, by; no select or check tool."""
    url = ROOT + "deal"
    calls = {
        Go("/deal"): ("open", {"url": url}),
        Read(): ("snapshot", {}),  # the whole tree: the wrapper's default
        Click("#buy"): ("click", {"target": "#buy"}),
        Fill("#name", "Ada"): ("fill", {"target": "#name", "text": "Ada"}),
        Check("#terms"): ("find", {"by": "first", "value": "#terms", "action": "check"}),
        WaitFor("#notice"): ("wait", {"target": "#notice"}),
    }
    for step, expected in calls.items():
        request = AGENT_BROWSER.advance(step, url if isinstance(step, Go) else None, [])
        assert (request.name, request.args) == expected
    select = AGENT_BROWSER.advance(Select("#topic", "bulk-order"), None, [])
    assert select.name == "eval" and '"bulk-order"' in select.args["js"]
    assert "change" in select.args["js"]


def test_agent_browser_reads_a_whole_page_from_the_snapshot_in_the_reply() -> None:
    tree = '- heading "Specs" [level=1, ref=e1]\n- StaticText "Battery: 38 hours"'
    done = AGENT_BROWSER.advance(Read(), None, [_ab_reply(snapshot=tree, refs={})])
    assert done == StepDone("# Specs\nBattery: 38 hours")


def test_agent_browser_is_stuck_on_a_failed_reply() -> None:
    failed = ToolResult(
        id="1", text=json.dumps({"success": False, "data": None, "error": "Element not found"})
    )
    with pytest.raises(OracleStuck, match="Element not found"):
        AGENT_BROWSER.advance(Read("#x"), None, [failed])


def test_agent_browser_waits_for_text_by_polling_an_eval() -> None:
    step = WaitForText("#restock", "Next restock")
    first = AGENT_BROWSER.advance(step, None, [])
    assert first.name == "eval" and first.pause_s == 0 and "Next restock" in first.args["js"]
    no, yes = _ab_reply(result=None), _ab_reply(result=True)
    again = AGENT_BROWSER.advance(step, None, [no])
    assert again.name == "eval" and again.pause_s == AGENT_BROWSER.poll_pause_s
    assert AGENT_BROWSER.max_polls * AGENT_BROWSER.poll_pause_s >= 4
    assert isinstance(AGENT_BROWSER.advance(step, None, [no, yes]), StepDone)
    with pytest.raises(OracleStuck, match="did not appear"):
        AGENT_BROWSER.advance(step, None, [no] * AGENT_BROWSER.max_polls)


@pytest.mark.parametrize(
    ("selector", "expected_index"),
    [("#name", 2), ("#email", 3), ("#terms", 5), ("#send", 11), ('a[href$="/cart"]', 9)],
)
def test_browser_use_finds_the_state_index_of_a_selector(selector: str, expected_index: int):
    results = [
        ToolResult(id="1", text=PAGE),
        # Claude Code may append text after the JSON
        ToolResult(id="2", text=json.dumps(STATE) + "\n(note)"),
    ]
    request = BROWSER_USE.advance(Click(selector), None, results)
    assert request == ToolRequest("browser_click", {"index": expected_index})


def test_browser_use_selects_by_typing_the_option_label() -> None:
    results = [ToolResult(id="1", text=PAGE), ToolResult(id="2", text=json.dumps(STATE))]
    request = BROWSER_USE.advance(Select("#topic", "bulk-order"), None, results)
    assert request == ToolRequest("browser_type", {"index": 4, "text": "Bulk order"})


def test_browser_use_reads_again_while_the_element_is_missing_then_is_stuck() -> None:
    """A page still loading is read again (paced); an element that never appears leaves
    the step stuck after as many reads as a wait takes."""
    page = ToolResult(id="1", text=PAGE)
    loading = ToolResult(id="0", text="<html><body>Loading</body></html>")
    assert BROWSER_USE.advance(Click("#send"), None, [loading]) == ToolRequest(
        "browser_get_html", {}, BROWSER_USE.poll_pause_s
    )
    # found on the second read: the state next, then the click on the state's index
    assert BROWSER_USE.advance(Click("#send"), None, [loading, page]) == ToolRequest(
        "browser_get_state", {}
    )
    state = ToolResult(id="2", text=json.dumps(STATE))
    assert BROWSER_USE.advance(Click("#send"), None, [loading, page, state]) == ToolRequest(
        "browser_click", {"index": 11}
    )
    with pytest.raises(OracleStuck, match="no element matches #nope after 20 reads"):
        BROWSER_USE.advance(Click("#nope"), None, [page] * BROWSER_USE.max_polls)


def test_browser_use_waits_by_polling_until_the_text_appears() -> None:
    step = WaitForText("#restock", "Next restock")
    empty = ToolResult(id="1", text='<p id="restock"></p>')
    full = ToolResult(id="2", text='<p id="restock">Next restock: 3 May 2027</p>')
    # the first read goes at once; every further one after a pause, so the page gets
    # time to change however fast the client turns requests around
    assert BROWSER_USE.advance(step, None, []) == ToolRequest(
        "browser_get_html", {"selector": "#restock"}
    )
    assert BROWSER_USE.advance(step, None, [empty]) == ToolRequest(
        "browser_get_html", {"selector": "#restock"}, BROWSER_USE.poll_pause_s
    )
    assert BROWSER_USE.max_polls * BROWSER_USE.poll_pause_s >= 4
    assert isinstance(BROWSER_USE.advance(step, None, [empty, full]), StepDone)
    with pytest.raises(OracleStuck, match="did not appear"):
        BROWSER_USE.advance(step, None, [empty] * BROWSER_USE.max_polls)


def test_the_policy_replays_multi_call_steps_to_an_answer() -> None:
    oracle = Oracle((Go("/enquiry"), Click("#send"), Read("main")), Answer(r"(LW-\d+)"))
    policy = OraclePolicy(oracle, BROWSER_USE, ROOT)
    tools = ["browser_navigate", "browser_get_html", "browser_get_state", "browser_click"]
    replies = {
        "browser_navigate": "Navigated",
        "browser_get_html": PAGE.replace("</form>", "</form><main>Reference LW-42</main>"),
        "browser_get_state": json.dumps(STATE),
        "browser_click": "Clicked element 11",
    }
    exchanges, answer = _play(policy, tools, replies)
    assert [name for name, _, _ in exchanges] == [
        "browser_navigate",
        "browser_get_html",
        "browser_get_state",
        "browser_click",
        "browser_get_html",
    ]
    assert exchanges[0][1] == {"url": ROOT + "enquiry"}
    assert exchanges[3][1] == {"index": 11}
    assert answer == "LW-42"


def test_a_retried_request_gets_the_same_call_again() -> None:
    policy = OraclePolicy(ORACLES["cookie-offer"], BROWSER_USE, ROOT)
    tools = ["browser_navigate", "browser_get_html", "browser_get_state", "browser_click"]
    history = [("browser_navigate", {"url": ROOT + "offers"}, "Navigated")]
    first = policy.step(_conversation(tools, history))
    again = policy.step(_conversation(tools, history))
    assert first == again
    assert isinstance(first, ToolCallAction)
    assert first.calls[0].name == "mcp__browser__browser_get_html"


def test_a_stuck_surface_answers_instead_of_failing_the_request() -> None:
    oracle = Oracle((Go("/"), Click("#missing")), Answer("(x)"))
    policy = OraclePolicy(oracle, BROWSER_USE, ROOT)
    tools = ["browser_navigate", "browser_get_html", "browser_get_state", "browser_click"]
    replies = {
        "browser_navigate": "Navigated",
        "browser_get_html": PAGE,
        "browser_get_state": json.dumps(STATE),
        "browser_click": "Clicked",
    }
    _, answer = _play(policy, tools, replies)
    assert answer.startswith("stuck: no element matches #missing")

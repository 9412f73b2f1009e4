"""The oracle's Press step on every MCP tool surface, and :func:`play`, the step loop the
scripted model and the engine benchmark's scripted MCP client both drive."""

from __future__ import annotations

import pytest

from agent_benchmarks.localweb.models import ToolResult
from agent_benchmarks.localweb.oracle import (
    AGENT_BROWSER,
    AGENT_BROWSER_CHAT,
    BROWSER_USE,
    CHROME_DEVTOOLS,
    LIGHTPANDA,
    PLAYWRIGHT,
    SERVER_SURFACES,
    Answer,
    Fill,
    Follow,
    Go,
    LinkMissing,
    Oracle,
    OracleStuck,
    Press,
    Read,
    StepDone,
    ToolRequest,
    play,
)

ROOT = "http://127.0.0.1:9/t/x.a1/"
ENTER = Press("#password", "Enter")


def _reply(text: str, is_error: bool = False) -> ToolResult:
    return ToolResult(id="r", text=text, is_error=is_error)


@pytest.mark.parametrize(
    ("surface", "call"),
    [
        (LIGHTPANDA, ToolRequest("press", {"key": "Enter", "selector": "#password"})),
        (AGENT_BROWSER, ToolRequest("press", {"key": "Enter"})),
        (PLAYWRIGHT, ToolRequest("browser_press_key", {"key": "Enter"})),
        (CHROME_DEVTOOLS, ToolRequest("press_key", {"pageId": 1, "key": "Enter"})),
        (
            AGENT_BROWSER_CHAT,
            ToolRequest("agent_browser", {"command": "agent-browser press Enter"}),
        ),
    ],
)
def test_a_press_is_the_servers_own_key_tool(surface, call: ToolRequest) -> None:
    assert surface.advance(ENTER, None, []) == call
    done = '{"success": true, "data": {}}'  # agent-browser's reply; any text for the others
    assert isinstance(surface.advance(ENTER, None, [_reply(done)]), StepDone)


def test_browser_use_which_has_no_key_tool_submits_the_fields_form_with_its_button() -> None:
    page = (
        '<form><input id="username"><input id="password" type="password">'
        '<button type="submit" id="login-button">Sign in</button></form>'
    )
    state = (
        '{"interactive_elements": [{"index": 1, "tag": "input", "text": ""}, '
        '{"index": 2, "tag": "input", "text": ""}, '
        '{"index": 5, "tag": "button", "text": "Sign in"}]}'
    )
    first = BROWSER_USE.advance(ENTER, None, [])
    assert first == ToolRequest("browser_get_html", {})
    second = BROWSER_USE.advance(ENTER, None, [_reply(page)])
    assert second == ToolRequest("browser_get_state", {})
    third = BROWSER_USE.advance(ENTER, None, [_reply(page), _reply(state)])
    assert third == ToolRequest("browser_click", {"index": 5})


def test_every_mcp_server_has_a_surface() -> None:
    from agent_benchmarks.backends.mcp_servers import SERVERS

    assert set(SERVER_SURFACES) == {n for n in SERVERS if n != "cli"} | {"cli-agent-browser"}


def test_play_yields_each_call_and_returns_what_the_reads_read() -> None:
    steps = (Go("/account/login"), Fill("#password", "pw"), ENTER, Read("#profile"))
    calls = play(steps, LIGHTPANDA, ROOT)
    made = [next(calls)]
    try:
        while True:
            text = "| Points | 250 |" if made[-1].name == "markdown" else "ok"
            made.append(calls.send(_reply(text)))
    except StopIteration as done:
        reads = done.value
    assert [c.name for c in made] == ["goto", "fill", "press", "markdown"]
    assert made[0].args == {"url": ROOT + "account/login"}
    assert reads == ["| Points | 250 |"]
    assert Answer(r"Points\W+(\d+)")(reads) == "250"


def test_play_stops_at_a_link_it_cannot_find_and_at_a_step_it_cannot_do() -> None:
    calls = play((Go("/"), Read("main"), Follow(r"\[Nowhere\]\(([^)]+)\)")), LIGHTPANDA, ROOT)
    next(calls)
    calls.send(_reply("ok"))
    with pytest.raises(LinkMissing, match="could not find a link"):
        calls.send(_reply("[Home](/t/x.a1/)"))
    stuck = play((Go("/"), Press("#password", "Tab")), BROWSER_USE, ROOT)
    next(stuck)
    with pytest.raises((OracleStuck, ValueError)):
        stuck.send(_reply("navigated"))


def test_the_policy_still_answers_as_before_on_a_missing_link() -> None:
    from agent_benchmarks.localweb.models import Conversation, FinalAnswer, Message, ToolUse
    from agent_benchmarks.localweb.oracle import OraclePolicy

    oracle = Oracle((Go("/"), Read("main"), Follow(r"\[Nowhere\]\(([^)]+)\)")), Answer("(x)"))
    messages = [Message(role="user", text="task")]
    for n, (name, text) in enumerate([("goto", "ok"), ("markdown", "[Home](/)")]):
        messages.append(Message(role="assistant", tool_calls=[ToolUse(id=f"c{n}", name=name)]))
        messages.append(
            Message(role="user", tool_results=[ToolResult(id=f"c{n}", text=text, name=name)])
        )
    conv = Conversation(
        protocol="anthropic", task_id="x", request_number=3, model="m", messages=messages
    )
    answer = OraclePolicy(oracle, LIGHTPANDA, ROOT).step(conv)
    assert isinstance(answer, FinalAnswer)
    assert answer.text.startswith("could not find a link matching")

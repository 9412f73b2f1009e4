"""The oracle's surfaces for Playwright's and Chrome DevTools' MCP servers and for the cli
backend's shell, read against the servers' real replies (tests/fixtures/mcp-servers,
recorded by tests/fixtures/record_mcp_servers.py)."""

from __future__ import annotations

import json

import pytest

from agent_benchmarks.localweb.models import ToolResult
from agent_benchmarks.localweb.oracle import (
    AGENT_BROWSER_CLI,
    CHROME_DEVTOOLS,
    PLAYWRIGHT,
    Check,
    Click,
    Fill,
    Go,
    OracleStuck,
    Read,
    ReadHtml,
    Select,
    StepDone,
    ToolRequest,
    WaitFor,
    WaitForText,
)
from tests.fixtures import FIXTURES, SITE, fixture

SERVERS = FIXTURES / "mcp-servers"


def _reply(server: str, name: str, is_error: bool = False) -> ToolResult:
    text = fixture(SERVERS / server / name).read_text(encoding="utf-8")
    return ToolResult(id="r", text=text, is_error=is_error)


def test_playwright_reads_the_whole_page_from_its_yaml_snapshot() -> None:
    request = PLAYWRIGHT.advance(Read(), None, [])
    assert (request.name, request.args) == ("browser_snapshot", {})
    done = PLAYWRIGHT.advance(Read(), None, [_reply("playwright", "02_browser_snapshot.txt")])
    assert isinstance(done, StepDone)
    lines = done.text.splitlines()
    # the shadow root's card is in Playwright's tree; /url lines and refs are not text
    assert "# Headphone specs" in lines and "### Vale Noise-Cancelling Headphones" in lines
    assert "Battery life: 38 hours with noise cancelling on." in lines
    assert not any("ref=" in line or line.startswith("/t/") for line in lines)


def test_playwright_reads_an_element_from_its_evaluate_result() -> None:
    request = PLAYWRIGHT.advance(ReadHtml("#cart-link"), None, [])
    assert request.name == "browser_evaluate" and "outerHTML" in request.args["function"]
    done = PLAYWRIGHT.advance(
        ReadHtml("#cart-link"), None, [_reply("playwright", "03_browser_evaluate.txt")]
    )
    assert done == StepDone(
        '<a id="cart-link" href="/t/fx/cart">Cart (<span id="cart-count">0</span>)</a>'
    )
    read = PLAYWRIGHT.advance(
        Read("#cart-link"), None, [_reply("playwright", "03_browser_evaluate.txt")]
    )
    assert read == StepDone("[Cart (0)](/t/fx/cart)")


def test_playwright_waits_by_polling_and_undefined_is_not_true() -> None:
    step = WaitForText("#nope", "x")
    missing = _reply("playwright", "04_browser_evaluate.txt")  # the script returned undefined
    again = PLAYWRIGHT.advance(step, None, [missing])
    assert again.name == "browser_evaluate" and again.pause_s == PLAYWRIGHT.poll_pause_s
    with pytest.raises(OracleStuck, match="did not appear"):
        PLAYWRIGHT.advance(step, None, [missing] * PLAYWRIGHT.max_polls)
    assert "querySelector" in PLAYWRIGHT.advance(WaitFor("#x"), None, []).args["function"]


def test_playwright_acts_by_selector_and_is_stuck_on_a_tool_error() -> None:
    url = SITE + "/enquiry"
    calls = {
        Go("/enquiry"): ("browser_navigate", {"url": url}),
        Click("#send"): ("browser_click", {"target": "#send"}),
        Check("#terms"): ("browser_click", {"target": "#terms"}),
        Fill("#name", "Ada"): ("browser_type", {"target": "#name", "text": "Ada"}),
        Select("#topic", "bulk-order"): (
            "browser_select_option",
            {"target": "#topic", "values": ["bulk-order"]},
        ),
    }
    for step, expected in calls.items():
        request = PLAYWRIGHT.advance(step, url, [])
        assert (request.name, request.args) == expected
    selected = _reply("playwright", "06_browser_select_option.txt")
    assert isinstance(PLAYWRIGHT.advance(Select("#topic", "x"), None, [selected]), StepDone)
    failed = _reply("playwright", "07_browser_click.txt", is_error=True)
    with pytest.raises(OracleStuck, match="does not match any elements"):
        PLAYWRIGHT.advance(Click("#nope"), None, [failed])


def test_chrome_devtools_reads_its_snapshot_and_evaluate_replies() -> None:
    request = CHROME_DEVTOOLS.advance(Read(), None, [])
    assert (request.name, request.args) == ("take_snapshot", {"pageId": 1})
    done = CHROME_DEVTOOLS.advance(
        Read(), None, [_reply("chrome-devtools", "03_take_snapshot.txt")]
    )
    assert isinstance(done, StepDone)
    lines = done.text.splitlines()
    assert "# Headphone specs" in lines
    assert "Battery life: 38 hours with noise cancelling on." in lines
    html = CHROME_DEVTOOLS.advance(
        ReadHtml("#cart-link"), None, [_reply("chrome-devtools", "04_evaluate_script.txt")]
    )
    assert html == StepDone(
        '<a id="cart-link" href="/t/fx/cart">Cart (<span id="cart-count">0</span>)</a>'
    )
    missing = _reply("chrome-devtools", "05_evaluate_script.txt")
    assert CHROME_DEVTOOLS.value(missing) is None


def _described(tag: str, name: str, **extra: object) -> ToolResult:
    """An evaluate_script reply, as chrome-devtools-mcp words it, of the describe script."""
    value = {"tag": tag, "type": "", "name": name, "href": "", "options": {}} | extra
    return ToolResult(
        id="d", text=f"Script ran on page and returned:\n```json\n{json.dumps(value)}\n```"
    )


@pytest.mark.parametrize(
    ("step", "element", "expected"),
    [
        (Fill("#name", "Ada"), _described("input", "Name", type="text"), ("fill", "2_25", "Ada")),
        (
            Check("#terms"),
            _described("input", "I accept the terms of sale", type="checkbox"),
            ("click", "2_37", None),
        ),
        (Click("#send"), _described("button", "Send enquiry"), ("click", "2_38", None)),
        (
            Select("#topic", "bulk-order"),
            _described("select", "Topic", options={"": "Choose…", "bulk-order": "Bulk order"}),
            ("fill", "2_29", "Bulk order"),
        ),
        (
            Click('a[href$="/cart"]'),
            _described("a", "Cart (0)", href=SITE + "/cart"),
            ("click", "2_15", None),
        ),
    ],
)  # fmt: skip
def test_chrome_devtools_acts_on_the_snapshot_node_of_the_element(
    step: object, element: ToolResult, expected: tuple[str, str, str | None]
) -> None:
    first = CHROME_DEVTOOLS.advance(step, None, [])
    assert first.name == "evaluate_script" and "querySelector" in first.args["function"]
    snapshot = _reply("chrome-devtools", "07_take_snapshot.txt")
    second = CHROME_DEVTOOLS.advance(step, None, [element])
    assert (second.name, second.args) == ("take_snapshot", {"pageId": 1})
    act = CHROME_DEVTOOLS.advance(step, None, [element, snapshot])
    assert isinstance(act, ToolRequest)
    tool, uid, value = expected
    assert act.name == tool and act.args["uid"] == uid and act.args["pageId"] == 1
    assert act.args.get("value") == value
    assert isinstance(CHROME_DEVTOOLS.advance(step, None, [element, snapshot, element]), StepDone)


def test_chrome_devtools_is_stuck_on_a_missing_or_unknown_element() -> None:
    snapshot = _reply("chrome-devtools", "07_take_snapshot.txt")
    absent = ToolResult(id="d", text="Script ran on page and returned:\n```json\nnull\n```")
    with pytest.raises(OracleStuck, match="no element matches"):
        CHROME_DEVTOOLS.advance(Click("#x"), None, [absent, snapshot])
    with pytest.raises(OracleStuck, match="no node in the snapshot"):
        CHROME_DEVTOOLS.advance(Click("#x"), None, [_described("button", "Buy"), snapshot])
    with pytest.raises(OracleStuck, match="no option"):
        CHROME_DEVTOOLS.advance(
            Select("#topic", "nope"), None, [_described("select", "Topic"), snapshot]
        )


def test_the_cli_surface_is_the_chat_command_lines_through_the_shell_tool() -> None:
    request = AGENT_BROWSER_CLI.advance(Click("#accept-cookies"), None, [])
    assert (request.name, request.args) == (
        "shell",
        {"command": "agent-browser click '#accept-cookies'"},
    )
    go = AGENT_BROWSER_CLI.advance(Go("/"), SITE + "/", [])
    assert go.args == {"command": f"agent-browser open {SITE}/"}

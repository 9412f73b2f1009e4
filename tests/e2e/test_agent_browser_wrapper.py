"""The agent-browser MCP wrapper (``competitors/agent-browser-mcp``) as a real stdio MCP server.

The mcp SDK's client starts the wrapper, which runs the real agent-browser CLI (pinned in the
root package.json) on Debian Chromium or on Lightpanda, against the localweb site. Every
session ends with the checks a benchmark relies on: once the client has closed, nothing the
wrapper started is left running or unreaped, and Chromium's throwaway profile is gone.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from agent_benchmarks.localweb.site import LocalSite, confirmation_number
from tests.support import REPO, chromium_binary, lightpanda_binary

pytestmark = pytest.mark.e2e

WRAPPER = REPO / "competitors" / "agent-browser-mcp" / "agent_browser_mcp.py"
AGENT_BROWSER = REPO / "node_modules" / ".bin" / "agent-browser"
# Upstream's wrapper (lightpanda-io/agent-benchmarks, competitors/agent-browser-mcp/server.py):
# each tool with its argument names, required ones marked *.
UPSTREAM_TOOLS = {
    "open": ["url*"],
    "snapshot": ["interactive", "urls", "compact", "depth", "selector"],
    "click": ["target*"],
    "fill": ["target*", "text*"],
    "press": ["key*"],
    "find": ["by*", "value*", "action*", "value_after", "name", "exact"],
    "wait": ["target*", "state"],
    "get": ["what*", "target", "attr"],
    "eval": ["js*"],
    "back": [],
    "forward": [],
    "reload": [],
    "close": [],
}
UPSTREAM_ENUMS = {
    ("find", "by"): [
        "role",
        "text",
        "label",
        "placeholder",
        "alt",
        "title",
        "testid",
        "first",
        "last",
    ],
    ("find", "action"): ["click", "fill", "type", "hover", "focus", "check", "uncheck", "text"],
    ("get", "what"): ["text", "html", "value", "attr", "title", "url", "count", "box", "styles"],
}


def _arguments(schema: dict) -> list[str]:
    required = set(schema.get("required") or ())
    return [f"{n}*" if n in required else n for n in schema.get("properties") or {}]


def _enum(schema: dict, name: str) -> list[str]:
    prop = schema["properties"][name]
    if "enum" in prop:
        return prop["enum"]
    return next(o["enum"] for o in prop.get("anyOf", []) if "enum" in o)


def reply(text: str) -> dict:
    """One of agent-browser's JSON replies, which every tool returns as printed."""
    return json.loads(text)


def data(text: str) -> dict:
    parsed = reply(text)
    assert parsed["success"] is True, parsed
    return parsed["data"]


@pytest.fixture(scope="module")
def site() -> Iterator[LocalSite]:
    with LocalSite() as s:
        yield s


@pytest.fixture(params=["chrome", "lightpanda"])
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def server_env(engine: str) -> Iterator[dict[str, str]]:
    if not AGENT_BROWSER.exists():
        pytest.fail(f"{AGENT_BROWSER} missing: run `npm ci` in {REPO}")
    env = {"AGENT_BROWSER_SESSION": f"abmcp-test-{engine}-{secrets.token_hex(3)}"}
    if engine == "lightpanda":
        lightpanda = lightpanda_binary()
        env |= {"AGENT_BROWSER_ENGINE": "lightpanda", "AGENT_BROWSER_EXECUTABLE_PATH": lightpanda}
    else:
        chromium_binary()  # agent-browser finds it by itself; this fails early if it is missing
    # Short: agent-browser keeps its Unix socket under HOME and refuses paths over 103 bytes.
    home = tempfile.mkdtemp(prefix="abh-")
    # TMPDIR too, as the harness gives each attempt its own: Chromium killed by the call
    # timeout leaves its org.chromium.Chromium.* folder in the temp folder.
    yield env | {"HOME": home, "TMPDIR": home, "AGENT_BROWSER_BIN": str(AGENT_BROWSER)}
    shutil.rmtree(home, ignore_errors=True)


class Wrapper:
    """A connected client; remembers every process the server had, to check cleanup later."""

    def __init__(self, session: ClientSession, server: psutil.Process) -> None:
        self.session = session
        self.server = server
        self.seen: set[psutil.Process] = set()
        self.profiles: set[str] = set()

    async def call(self, tool: str, **args: object) -> tuple[bool, str]:
        result = await self.session.call_tool(tool, args)
        for proc in set(self.server.children(recursive=True)) - self.seen:
            self.seen.add(proc)
            try:
                cmdline = proc.cmdline()
            except psutil.Error:
                continue
            self.profiles |= {a.partition("=")[2] for a in cmdline if "--user-data-dir=" in a}
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return result.is_error, text

    async def ok(self, tool: str, **args: object) -> dict:
        """The ``data`` of a successful call."""
        is_error, text = await self.call(tool, **args)
        assert not is_error, f"{tool}({args}) failed: {text}"
        return data(text)

    async def fails(self, tool: str, **args: object) -> str:
        """The error of a failed call: a reply like agent-browser's, not an MCP error."""
        is_error, text = await self.call(tool, **args)
        assert not is_error, f"{tool}({args}): an MCP error instead of a reply: {text}"
        parsed = reply(text)
        assert parsed["success"] is False, f"{tool}({args}) should have failed, got: {text}"
        return parsed["error"]


@asynccontextmanager
async def running_wrapper(env: dict[str, str]) -> AsyncIterator[Wrapper]:
    params = StdioServerParameters(command=sys.executable, args=[str(WRAPPER)], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        server = next(
            p for p in psutil.Process().children() if str(WRAPPER) in " ".join(p.cmdline())
        )
        wrapper = Wrapper(session, server)
        yield wrapper
    assert_cleaned_up(env["AGENT_BROWSER_SESSION"], wrapper)


def assert_cleaned_up(session: str, wrapper: Wrapper) -> None:
    # The wrapper adopts the daemon agent-browser detaches (it is a child subreaper), so the
    # daemon and its browser show up among the wrapper's descendants.
    assert wrapper.seen, "no agent-browser daemon ever appeared under the wrapper"
    # is_running() is true for a zombie too, so this also catches unreaped children.
    left = [(p.pid, p.name(), p.status()) for p in wrapper.seen if p.is_running()]
    assert not left, f"processes of session {session} outlived the wrapper: {left}"
    strays = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("AGENT_BROWSER_SESSION") == session:
                strays.append((proc.pid, proc.name()))
        except psutil.Error:
            continue
    assert not strays, f"processes still carry AGENT_BROWSER_SESSION={session}: {strays}"
    zombies = [c.pid for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE]
    assert not zombies, f"zombie children of the test process: {zombies}"
    assert not [p for p in wrapper.profiles if Path(p).exists()], "Chromium profile left behind"


def test_browse_read_and_navigate(site: LocalSite, engine: str, server_env: dict[str, str]):
    task = f"ab-browse-{engine}"

    async def scenario() -> None:
        async with running_wrapper(server_env) as ab:
            tools = {t.name: t.input_schema for t in (await ab.session.list_tools()).tools}
            assert {name: _arguments(schema) for name, schema in tools.items()} == UPSTREAM_TOOLS
            for (name, argument), values in UPSTREAM_ENUMS.items():
                assert _enum(tools[name], argument) == values

            url = site.task_url(task, "/catalogue")
            opened = await ab.ok("open", url=url)
            assert opened["url"] == url and opened["title"] == "Catalogue · Lakeside Goods"
            assert (await ab.ok("get", what="title"))["title"] == "Catalogue · Lakeside Goods"
            assert (await ab.ok("get", what="url"))["url"] == url

            # The whole tree by default: the table's text is in it.
            tree = (await ab.ok("snapshot"))["snapshot"]
            assert "LW-1001" in tree and "Alpine Coffee Grinder" in tree
            interactive = (await ab.ok("snapshot", interactive=True))["snapshot"]
            assert "Products" in interactive
            assert len(interactive.splitlines()) < len(tree.splitlines())
            with_urls = (await ab.ok("snapshot", urls=True, compact=True))["snapshot"]
            assert re.search(r'link "Products" \[[^]]*url=[^]]*/products', with_urls), with_urls
            table = (await ab.ok("snapshot", selector="#catalogue", depth=20))["snapshot"]
            assert "LW-1001" in table and "Products" not in table

            first_row = await ab.ok("get", what="text", target="#catalogue tbody tr")
            assert first_row["text"] == "LW-1001\tAlpine Coffee Grinder\tKitchen\t$49.00"
            assert (await ab.ok("get", what="count", target="#catalogue tbody tr"))["count"] == 30
            html = await ab.ok("get", what="html", target="#catalogue tbody tr")
            assert "<td>LW-1001</td>" in html["html"]
            if engine == "chrome":
                box = await ab.ok("get", what="box", target="#catalogue")
                assert box["width"] > 0 and box["height"] > 0
                await ab.ok("get", what="styles", target="#catalogue")
            assert (await ab.ok("eval", js="document.querySelectorAll('td').length"))[
                "result"
            ] == 120
            assert (await ab.ok("eval", js="({n: 1, s: 'x'})"))["result"] == {"n": 1, "s": "x"}

            # The agent's usual loop: a snapshot, then a click on a ref from it.
            ref = re.search(r'link "Products" \[ref=(e\d+)', interactive)
            assert ref, interactive
            await ab.ok("click", target=f"@{ref.group(1)}")
            assert (await ab.ok("get", what="url"))["url"] == site.task_url(task, "/products")
            assert "/catalogue" in (await ab.ok("back"))["url"]
            assert "/products" in (await ab.ok("forward"))["url"]
            assert "/products" in (await ab.ok("reload"))["url"]
            await ab.ok("press", key="Tab")
            await ab.ok("find", by="role", value="link", action="click", name="Today's deal")

            # /deal is filled in by fetch() and XMLHttpRequest after the load event.
            assert (await ab.ok("get", what="url"))["url"] == site.task_url(task, "/deal")
            await ab.ok("wait", target="#deal-stock")
            await ab.ok("wait", target="#deal", state="visible")
            await ab.ok("wait", target="300")  # milliseconds
            deal = (await ab.ok("get", what="text", target="#deal"))["text"]
            assert "DEAL-KETTLE-24" in deal and "Units left: 7" in deal
            text = await ab.ok("find", by="text", value="Units left", action="text")
            assert "Units left: 7" in text["text"]

            # Failures are agent-browser's own replies, passed on as they are.
            assert "Element not found: #no-such-element" in await ab.fails(
                "click", target="#no-such-element"
            )
            # Offered as upstream offers them; agent-browser 0.41.2 refuses type, focus and
            # uncheck for find.
            assert "Unknown action 'type'" in await ab.fails(
                "find", by="first", value="a", action="type", value_after="x"
            )
            assert "needs target" in await ab.fails("get", what="text")
            assert "option" in await ab.fails("fill", target="#q", text="--headed")
            closed = await ab.ok("close")
            assert closed["closed"] is True

    anyio.run(scenario)


def test_enquiry_form_is_submitted(site: LocalSite, engine: str, server_env: dict[str, str]):
    task = f"ab-form-{engine}"
    site.begin_task(task)

    async def scenario() -> None:
        async with running_wrapper(server_env) as ab:
            await ab.ok("open", url=site.task_url(task, "/enquiry"))
            await ab.ok("fill", target="#name", text="Ada Lovelace")
            await ab.ok(
                "find", by="label", value="Email", action="fill", value_after="ada@example.com"
            )
            # No select tool upstream: a model sets a <select> through eval.
            chosen = await ab.ok(
                "eval",
                js="(() => { const s = document.querySelector('#topic'); s.value = 'bulk-order';"
                " s.dispatchEvent(new Event('change', {bubbles: true})); return s.value; })()",
            )
            assert chosen["result"] == "bulk-order"
            await ab.ok("fill", target="#quantity", text="12")
            await ab.ok("find", by="first", value="#newsletter", action="check")
            await ab.ok("click", target="#newsletter")  # and untick it again
            await ab.ok("find", by="first", value="#terms", action="check")
            assert (await ab.ok("get", what="value", target="#topic"))["value"] == "bulk-order"
            name = await ab.ok("get", what="attr", target="#name", attr="name")
            assert name["value"] == "name"
            newsletter = await ab.ok("eval", js="document.querySelector('#newsletter').checked")
            assert newsletter["result"] is False
            await ab.ok("click", target="#submit-enquiry")
            await ab.ok("wait", target="#confirmation")
            number = (await ab.ok("get", what="text", target="#confirmation"))["text"]
            assert number == confirmation_number(
                "Ada Lovelace", "ada@example.com", "bulk-order", 12
            )

    anyio.run(scenario)
    [submission] = site.form_submissions(task)
    assert submission.fields == {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "topic": "bulk-order",
        "quantity": 12,
        "newsletter": False,
    }


def test_the_strict_surface_snapshots_interactive_elements_by_default(
    site: LocalSite, server_env: dict[str, str]
):
    task = "ab-strict"
    env = server_env | {"AGENT_BROWSER_MCP_SURFACE": "strict"}

    async def scenario() -> None:
        async with running_wrapper(env) as ab:
            tools = {t.name: t.input_schema for t in (await ab.session.list_tools()).tools}
            assert list(tools) == list(UPSTREAM_TOOLS)
            assert _arguments(tools["snapshot"]) == ["interactive", "compact", "depth", "selector"]
            await ab.ok("open", url=site.task_url(task, "/catalogue"))
            tree = (await ab.ok("snapshot"))["snapshot"]
            full = (await ab.ok("snapshot", interactive=False, compact=False))["snapshot"]
            assert "Products" in tree and "Alpine Coffee Grinder" in full
            assert len(tree.splitlines()) < len(full.splitlines())

    anyio.run(scenario)


def test_call_timeout_kills_the_call_and_restarts_the_browser(
    site: LocalSite, engine: str, server_env: dict[str, str]
):
    task = f"ab-timeout-{engine}"
    # agent-browser's own wait timeout is 25 s, so the wrapper's 3 s limit fires first.
    env = server_env | {"AGENT_BROWSER_MCP_CALL_TIMEOUT": "3"}

    async def scenario() -> None:
        async with running_wrapper(env) as ab:
            await ab.ok("open", url=site.task_url(task, "/deal"))
            with anyio.fail_after(15):
                message = await ab.fails("wait", target="#never-appears")
            assert "timed out after 3 s" in message and "AGENT_BROWSER_MCP_CALL_TIMEOUT" in message
            # The session is usable again straight away, on a fresh browser.
            await ab.ok("open", url=site.task_url(task, "/catalogue"))
            title = (await ab.ok("get", what="title"))["title"]
            assert title == "Catalogue · Lakeside Goods"

    anyio.run(scenario)

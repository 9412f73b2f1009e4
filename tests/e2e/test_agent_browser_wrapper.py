"""The agent-browser MCP wrapper (``competitors/agent-browser-mcp``) as a real stdio MCP server.

The mcp SDK's client starts the wrapper, which runs the real agent-browser CLI (pinned in the
root package.json) on Debian Chromium or on Lightpanda, against the localweb site. Every
session ends with the checks a benchmark relies on: once the client has closed, nothing the
wrapper started is left running or unreaped, and Chromium's throwaway profile is gone.
"""

from __future__ import annotations

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
TOOLS = {
    "open",
    "snapshot",
    "click",
    "fill",
    "select",
    "check",
    "uncheck",
    "press",
    "find",
    "wait",
    "get",
    "eval",
    "back",
    "forward",
    "reload",
    "close",
}


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
    yield env | {"HOME": home, "AGENT_BROWSER_BIN": str(AGENT_BROWSER)}
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

    async def ok(self, tool: str, **args: object) -> str:
        is_error, text = await self.call(tool, **args)
        assert not is_error, f"{tool}({args}) failed: {text}"
        return text

    async def fails(self, tool: str, **args: object) -> str:
        is_error, text = await self.call(tool, **args)
        assert is_error, f"{tool}({args}) should have failed, got: {text}"
        return text


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
            tools = await ab.session.list_tools()
            assert {t.name for t in tools.tools} == TOOLS

            opened = await ab.ok("open", url=site.task_url(task, "/catalogue"))
            assert "Title: Catalogue · Lakeside Goods" in opened
            assert site.task_url(task, "/catalogue") in opened
            assert await ab.ok("get", what="title") == "Catalogue · Lakeside Goods"

            table = await ab.ok("snapshot", interactive=False, selector="#catalogue")
            assert "LW-1001" in table and "Alpine Coffee Grinder" in table
            first_row = await ab.ok("get", what="text", selector="#catalogue tbody tr")
            assert first_row == "LW-1001\tAlpine Coffee Grinder\tKitchen\t$49.00"
            assert await ab.ok("get", what="count", selector="#catalogue tbody tr") == "30"
            assert await ab.ok("eval", script="document.querySelectorAll('td').length") == "120"
            assert await ab.ok("eval", script="({n: 1, s: 'x'})") == '{"n": 1, "s": "x"}'

            # The agent's usual loop: an interactive snapshot, then a click on a ref from it.
            tree = await ab.ok("snapshot")
            ref = re.search(r'link "Products" \[ref=(e\d+)\]', tree)
            assert ref, tree
            await ab.ok("click", selector=f"@{ref.group(1)}")
            assert await ab.ok("get", what="url") == site.task_url(task, "/products")
            assert "/catalogue" in await ab.ok("back")
            assert "/products" in await ab.ok("forward")
            assert "/products" in await ab.ok("reload")
            await ab.ok("find", locator="role", value="link", name="Today's deal", exact=True)

            # /deal is filled in by fetch() and XMLHttpRequest after the load event.
            assert await ab.ok("get", what="url") == site.task_url(task, "/deal")
            await ab.ok("wait", selector="#deal-stock")
            await ab.ok("wait", text="Units left", timeout_ms=5000)
            deal = await ab.ok("get", what="text", selector="#deal")
            assert "DEAL-KETTLE-24" in deal and "Units left: 7" in deal

            missing = await ab.fails("click", selector="#no-such-element")
            assert "Element not found: #no-such-element" in missing
            assert "option" in await ab.fails("fill", selector="#q", text="--headed")
            assert "exactly one" in await ab.fails("wait")

    anyio.run(scenario)


def test_enquiry_form_is_submitted(site: LocalSite, engine: str, server_env: dict[str, str]):
    task = f"ab-form-{engine}"
    site.begin_task(task)

    async def scenario() -> None:
        async with running_wrapper(server_env) as ab:
            await ab.ok("open", url=site.task_url(task, "/enquiry"))
            await ab.ok("fill", selector="#name", text="Ada Lovelace")
            await ab.ok(
                "find", locator="label", value="Email", action="fill", text="ada@example.com"
            )
            assert "Bulk order" in await ab.ok("select", selector="#topic", value="Bulk order")
            await ab.ok("fill", selector="#quantity", text="12")
            await ab.ok("check", selector="#newsletter")
            await ab.ok("uncheck", selector="#newsletter")
            await ab.ok("check", selector="#terms")
            assert await ab.ok("get", what="value", selector="#topic") == "bulk-order"
            newsletter = await ab.ok("eval", script="document.querySelector('#newsletter').checked")
            assert newsletter == "false"
            await ab.ok("click", selector="#submit-enquiry")
            await ab.ok("wait", url="**/enquiry/thanks*", timeout_ms=10000)
            number = await ab.ok("get", what="text", selector="#confirmation")
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
                message = await ab.fails("wait", selector="#never-appears")
            assert "timed out after 3 s" in message and "AGENT_BROWSER_MCP_CALL_TIMEOUT" in message
            # The session is usable again straight away, on a fresh browser.
            await ab.ok("open", url=site.task_url(task, "/catalogue"))
            assert await ab.ok("get", what="title") == "Catalogue · Lakeside Goods"

    anyio.run(scenario)

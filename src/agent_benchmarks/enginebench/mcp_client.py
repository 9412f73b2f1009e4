"""The MCP stacks without a model: a scripted MCP client performs a task's steps through a
browser MCP server's own tools, as the localweb oracle plays them for an agent
(:func:`agent_benchmarks.localweb.oracle.play`, on the server's tool surface), so an
execution costs what an agent's browsing costs on that stack with the model taken out.

Each server starts as the agent runners start it (``backends/mcp_servers.py``: the same
command, environment and web routing), over stdio, from the harness through the ``mcp``
SDK; the client is the harness, as an agent's client is the agent, so its own work is not
in the measured process tree (the server, its browser and whatever they start are). A
worker of a task is a session (a server process) of its own.

Sessions live on one event loop in a thread of its own (:func:`portal`), so that warm
sessions stay open between the benchmark's other executions. Cold, the server's start is
timed: its shell joins the execution's cgroup and stops before the timer, which starts
when it is let go; the session is closed after the timer, as upstream kills its browser.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from agent_benchmarks.backends.mcp_servers import SERVERS, McpServerDef, find_server_programs
from agent_benchmarks.enginebench.measure import Meter, let_go, wait_stopped
from agent_benchmarks.enginebench.tasks import EngineTask
from agent_benchmarks.localweb.models import ToolResult
from agent_benchmarks.localweb.oracle import SERVER_SURFACES, ToolSurface, play
from agent_benchmarks.web.service import AttemptWeb

# The MCP servers the benchmark drives, and the engine each one's browser is.
MCP_ENGINES = {
    "lightpanda": "lightpanda",
    "agent-browser": "chromium",
    "agent-browser-lightpanda": "lightpanda",
    "browser-use": "chromium",
    "playwright": "chromium",
    "chrome-devtools": "chromium",
}


@dataclass(frozen=True)
class ServerSettings:
    """What starting a server needs (backends/mcp_servers.py's ``ServerSettings``): its
    programs, and the upstream surface (the one the agent runners default to)."""

    lightpanda: str
    agent_browser: str | None
    browser_use_python: str | None
    server_program: str | None
    surface: str = "upstream"
    cli: str | None = None


class McpStack:
    """One browser MCP server, found on this machine (one clear error when it is not)."""

    def __init__(self, server: str, lightpanda: str):
        self.name = server
        self.definition: McpServerDef = SERVERS[server]
        programs = find_server_programs(self.definition)
        self.settings = ServerSettings(
            lightpanda=lightpanda,
            agent_browser=programs.agent_browser,
            browser_use_python=programs.browser_use_python,
            server_program=programs.server_program,
        )
        self.surface: ToolSurface = SERVER_SURFACES[server]

    def versions(self) -> dict[str, str]:
        return self.definition.programs(self.settings)

    def session_spec(
        self, meter: Meter, gate: bool, folder: Path, temp: Path, web: AttemptWeb | None
    ) -> SessionSpec:
        """How to start one session of the server, its processes members of ``meter``, its
        TMPDIR a new folder in ``temp`` (short: browsers put sockets there)."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "home").mkdir(exist_ok=True)
        tmpdir = Path(tempfile.mkdtemp(prefix="t-", dir=temp))
        entry = self.definition.server(self.settings, folder, tmpdir)
        if web is not None:
            assert self.definition.route_web is not None
            entry = self.definition.route_web(entry, web, tmpdir)
        env = {**os.environ, "TMPDIR": str(tmpdir), **entry.get("env", {}), **meter.env()}
        argv = meter.argv([entry["command"], *entry["args"]], gate)
        return SessionSpec(argv, env, folder, tmpdir)


@dataclass(frozen=True)
class SessionSpec:
    argv: list[str]
    env: dict[str, str]
    folder: Path  # its working folder: HOME, and the server's stderr
    tmpdir: Path  # its TMPDIR (short: browsers put sockets there)


@contextlib.contextmanager
def portal() -> Iterator[BlockingPortal]:
    """The event loop (in a thread of its own) every MCP session of a run lives on."""
    with start_blocking_portal() as loop:
        yield loop


@contextlib.asynccontextmanager
async def sessions(specs: list[SessionSpec]) -> AsyncIterator[list[Any]]:
    """One MCP session per spec, open (spawned, not yet initialised) inside the block."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with contextlib.AsyncExitStack() as stack:
        opened = []
        for spec in specs:
            errlog = stack.enter_context(open(spec.folder / "server.stderr", "w"))  # noqa: SIM115
            params = StdioServerParameters(
                command=spec.argv[0], args=spec.argv[1:], env=spec.env, cwd=str(spec.folder)
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            opened.append(await stack.enter_async_context(ClientSession(read, write)))
        yield opened


async def initialize(opened: list[Any], timeout_s: float) -> None:
    """The MCP handshake of every session, at once; TimeoutError past ``timeout_s``."""
    with anyio.fail_after(timeout_s):
        try:
            async with anyio.create_task_group() as group:
                for session in opened:
                    group.start_soon(session.initialize)
        except ExceptionGroup as failed:
            raise _first(failed) from None


def _text(result: Any) -> str:
    """A tool result's text parts, joined; other parts as a placeholder naming their kind."""
    parts = []
    for part in result.content:
        parts.append(part.text if getattr(part, "type", None) == "text" else f"[{part.type}]")
    return "\n".join(parts)


async def _worker(
    session: Any, surface: ToolSurface, steps: tuple, root: str, made: list[int]
) -> list[str]:
    calls = play(steps, surface, root)
    request = next(calls)
    while True:
        made[0] += 1
        if request.pause_s:
            await anyio.sleep(request.pause_s)
        result = await session.call_tool(request.name, request.args)
        reply = ToolResult(
            id=request.name, text=_text(result), name=request.name, is_error=bool(result.is_error)
        )
        try:
            request = calls.send(reply)
        except StopIteration as done:
            return done.value


async def run_task(
    opened: list[Any], surface: ToolSurface, task: EngineTask, root: str, timeout_s: float
) -> tuple[list[str], int]:
    """The task's workers, one per session, all at once: their reads, worker after worker,
    and the tool calls they made. Raises OracleStuck when a step cannot be done,
    TimeoutError past ``timeout_s``."""
    reads: list[list[str]] = [[] for _ in task.workers]
    made = [0]

    async def one(index: int) -> None:
        reads[index] = await _worker(opened[index], surface, task.workers[index], root, made)

    with anyio.fail_after(timeout_s):
        try:
            async with anyio.create_task_group() as group:
                for index in range(len(task.workers)):
                    group.start_soon(one, index)
        except ExceptionGroup as failed:
            raise _first(failed) from None
    return [text for worker in reads for text in worker], made[0]


def _first(group: BaseExceptionGroup) -> BaseException:
    """The first failure a task group gathered (a worker stuck, a session broken)."""
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def gated_shells(meter: Meter, expected: int) -> set[int]:
    """The server shells spawned at their gate, once all ``expected`` have stopped there
    (the caller starts its timer, then lets them go)."""
    deadline = time.monotonic() + 30
    while len(members := meter.members()) < expected:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expected} server(s) were spawned, {len(members)} joined")
        time.sleep(0.001)
    for pid in members:
        wait_stopped(pid)
    return members


def let_all_go(pids: set[int]) -> None:
    for pid in pids:
        let_go(pid)

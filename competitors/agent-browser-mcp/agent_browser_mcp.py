"""agent-browser behind a stdio MCP server: one tool per agent-browser CLI command.

Every tool call runs ``agent-browser --session S --json <command> <args...>`` (argument list,
no shell) and returns agent-browser's JSON reply as it printed it, failures included. The tool
and argument names are those of the wrapper lightpanda-io/agent-benchmarks published its
numbers with (``AGENT_BROWSER_MCP_SURFACE=strict`` narrows the snapshot's defaults).
agent-browser keeps one daemon (and its browser) per session, so page state carries over
between calls. See README.md beside this file for the tools and the environment.

Run: ``python competitors/agent-browser-mcp/agent_browser_mcp.py`` (Linux).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import psutil
from mcp.server.mcpserver import MCPServer
from pydantic import Field

# Run by the harness's Python, so its reaping helpers are importable (shared with the
# chat-loop attempt driver).
from agent_benchmarks.isolation.reaping import (
    become_subreaper,
    kill_descendants,
    reap_exited_children,
    wait_descendants_gone,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CALL_TIMEOUT_S = 60.0
# `close` takes about a second with Chromium; the MCP SDK's client sends SIGTERM to a server
# still running 2 s after it closed its stdin, and SIGKILL 2 s later.
_CLOSE_TIMEOUT_S = 3.0
# How long the daemon and its browser get to exit after `close` or SIGTERM before SIGKILL.
_EXIT_GRACE_S = 1.5
# agent-browser reads its global options (--headed, --executable-path, --session, ...)
# anywhere on the command line and has no `--` terminator, so a value shaped like an option
# would silently change the browser instead of reaching the page.
_OPTION_LIKE = re.compile(r"^--?[A-Za-z]")


@dataclass(frozen=True)
class Config:
    binary: str
    session: str
    call_timeout_s: float
    env: dict[str, str]
    temp_home: str | None  # a HOME this process created (and removes) because none was usable

    @classmethod
    def from_env(cls, environ: dict[str, str]) -> Config:
        binary = environ.get("AGENT_BROWSER_BIN") or _default_binary()
        session = environ.get("AGENT_BROWSER_SESSION") or (
            f"abmcp-{os.getpid()}-{secrets.token_hex(3)}"
        )
        raw_timeout = environ.get("AGENT_BROWSER_MCP_CALL_TIMEOUT") or str(DEFAULT_CALL_TIMEOUT_S)
        call_timeout_s = float(raw_timeout)
        if call_timeout_s <= 0:
            raise ValueError(f"AGENT_BROWSER_MCP_CALL_TIMEOUT must be > 0, got {raw_timeout!r}")
        env = dict(environ)
        # The version check fetches a Google blog page; offline it only costs time.
        env["AGENT_BROWSER_NO_VERSION_CHECK"] = "1"
        # Lightpanda (AGENT_BROWSER_ENGINE=lightpanda) would otherwise phone home.
        env.setdefault("LIGHTPANDA_DISABLE_TELEMETRY", "true")
        # agent-browser keeps its socket and pid files under ~/.agent-browser.
        temp_home = None
        home = env.get("HOME")
        if not home or not os.access(home, os.W_OK):
            temp_home = env["HOME"] = tempfile.mkdtemp(prefix="agent-browser-mcp-home-")
        return cls(binary, session, call_timeout_s, env, temp_home)


def _default_binary() -> str:
    local = REPO / "node_modules" / ".bin" / "agent-browser"
    if local.exists():
        return str(local)
    return shutil.which("agent-browser") or "agent-browser"


class AgentBrowser:
    """Runs agent-browser commands for one session, one at a time, and cleans up after it.

    Calls are serialised because the session's daemon executes one command at a time anyway;
    holding the lock also means no CLI child is running while orphans are reaped.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self.closing = False
        self._lock = threading.Lock()
        self._current: subprocess.Popen[str] | None = None
        self._daemon_started = False

    def run(self, command: str, *values: str, **options: str | bool | None) -> str:
        """agent-browser's reply to ``command *values --option value...``, as the JSON text it
        printed; a True option is a bare flag, None or False leaves it out. A failure is a
        reply too (``{"success": false, "error": ...}``), whoever reports it: agent-browser or
        this wrapper (no JSON printed, a value shaped like an option, the call timeout)."""
        args = [command, *values]
        for key, value in options.items():
            if value is True:
                args.append(f"--{key}")
            elif value not in (None, False):
                args += [f"--{key}", str(value)]
        for value in (*values, *options.values()):
            if isinstance(value, str) and _OPTION_LIKE.match(value):
                return failure(
                    f"{value!r} looks like a command-line option, and agent-browser would read "
                    "it as one: values starting with '-' and a letter cannot be passed"
                )
        with self._lock:
            if self.closing:
                return failure("the server is shutting down")
            try:
                return self._run_locked(tuple(args))
            finally:
                reap_exited_children()

    def _run_locked(self, args: tuple[str, ...]) -> str:
        command = args[0]
        try:
            result = self._invoke(args, self.config.call_timeout_s)
        except OSError as exc:
            return failure(
                f"cannot run agent-browser ({self.config.binary}): {exc}. Install it with "
                f"`npm ci` in {REPO}, or point AGENT_BROWSER_BIN at the binary"
            )
        self._daemon_started = True
        if result is None:
            if not self.closing:
                # The daemon is still executing the abandoned command and would make every
                # later command (close included) queue behind it, so start over instead.
                _stop_descendants()
                self._daemon_started = False
            return failure(
                f"agent-browser {command} timed out after {self.config.call_timeout_s:g} s "
                "(AGENT_BROWSER_MCP_CALL_TIMEOUT); the browser was restarted, so the page is "
                "gone: call open again"
            )
        returncode, out, err = result
        if command == "close" and returncode == 0:
            self._daemon_started = False
        return _reply_text(returncode, out, err)

    def _invoke(self, args: tuple[str, ...], timeout_s: float) -> tuple[int, str, str] | None:
        """(exit status, stdout, stderr), or None after killing a call that ran too long."""
        cmd = [self.config.binary, "--session", self.config.session, "--json", *args]
        # Own process group: a timeout kills the npm shim and the native CLI together, while
        # the daemon the CLI detaches (its own session) survives for the next call.
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.config.env,
            text=True,
            start_new_session=True,
        )
        self._current = proc
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.communicate()
            return None
        finally:
            self._current = None
        return proc.returncode, out, err

    def shutdown(self) -> None:
        """Close the session (daemon and browser exit), reap what they leave. Idempotent."""
        if self.closing:
            return
        self.closing = True
        current = self._current
        if current is not None:
            _kill_group(current.pid)
        with self._lock:
            closed = False
            # After a killed call the daemon is still busy with it and close would queue.
            if self._daemon_started and current is None:
                try:
                    result = self._invoke(("close",), _CLOSE_TIMEOUT_S)
                except OSError as exc:
                    result = (-1, "", str(exc))
                closed = result is not None and result[0] == 0
                if not closed:
                    print(f"agent-browser close failed: {result}", file=sys.stderr)
            if not closed or wait_descendants_gone(_EXIT_GRACE_S):
                _stop_descendants()
            if self.config.temp_home:
                shutil.rmtree(self.config.temp_home, ignore_errors=True)


def failure(message: str) -> str:
    """A failed call in agent-browser's own reply shape."""
    return json.dumps({"success": False, "data": None, "error": message})


def _reply_text(returncode: int, out: str, err: str) -> str:
    """What a call returns to the model: agent-browser's JSON reply exactly as printed, failed
    or not; when it printed nothing, a reply of the same shape with its stderr or status."""
    text = out.strip()
    if text:
        return text
    if returncode != 0:
        return failure(err.strip()[-2000:] or f"exit status {returncode}")
    return json.dumps({"success": True, "data": None, "error": None})


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _stop_descendants() -> None:
    """Stop the daemon and its browser: SIGTERM to our direct children (the daemon then shuts
    Chromium or Lightpanda down and removes its files), SIGKILL to whatever outlives that.
    A daemon busy with a command only acts on SIGTERM once the command ends."""
    for proc in psutil.Process().children():
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    if wait_descendants_gone(_EXIT_GRACE_S):
        kill_descendants(_EXIT_GRACE_S)


# --- the MCP tools ---------------------------------------------------------------------------

# The tool surface: "upstream" (default) is the one lightpanda-io/agent-benchmarks published
# its numbers with (its competitors/agent-browser-mcp/server.py): these tool and argument
# names, a snapshot of the whole tree unless asked otherwise, with link URLs on request.
# "strict" keeps the same tools but snapshots interactive elements, compacted, by default,
# and without URLs (what this wrapper offered before).
SURFACES = ("upstream", "strict")

Target = Annotated[
    str, Field(description="an element: a ref from the latest snapshot (@e12) or a CSS selector")
]
FIND_BY = Literal["role", "text", "label", "placeholder", "alt", "title", "testid", "first", "last"]
FIND_ACTIONS = Literal["click", "fill", "type", "hover", "focus", "check", "uncheck", "text"]
GET_WHAT = Literal["text", "html", "value", "attr", "title", "url", "count", "box", "styles"]
# get subcommands that read one element, so need a target
_GET_NEEDS_TARGET = frozenset({"text", "html", "value", "attr", "count", "box", "styles"})


def build_server(browser: AgentBrowser, surface: str = "upstream") -> MCPServer:
    if surface not in SURFACES:
        raise ValueError(f"unknown surface {surface!r}: one of {', '.join(SURFACES)}")
    server = MCPServer(
        "agent-browser-mcp",
        instructions=(
            "Browse with agent-browser. open a URL, then snapshot the page: an accessibility "
            "tree whose elements carry refs (@e1, @e2, ...) to pass as target to click, fill "
            "or get. Every reply is agent-browser's JSON. Take a new snapshot after the page "
            "changes: refs go stale."
        ),
        log_level="WARNING",
    )

    def tool(name: str) -> Callable[[Callable[..., str]], Callable[..., str]]:
        def register(fn: Callable[..., str]) -> Callable[..., str]:
            description = inspect.cleandoc(fn.__doc__ or "")
            server.add_tool(fn, name=name, description=description, structured_output=False)
            return fn

        return register

    @tool("open")
    def open_page(url: Annotated[str, Field(description="the address to load")]) -> str:
        """Load a URL in the browser (the first call starts the browser)."""
        return browser.run("open", url)

    if surface == "upstream":

        @tool("snapshot")
        def snapshot(
            interactive: Annotated[
                bool | None, Field(description="only inputs, buttons and links")
            ] = None,
            urls: Annotated[bool | None, Field(description="add each link's href")] = None,
            compact: Annotated[
                bool | None, Field(description="leave out empty structural nodes")
            ] = None,
            depth: Annotated[int | None, Field(description="how deep the tree goes")] = None,
            selector: Annotated[
                str | None, Field(description="only the part under this CSS selector")
            ] = None,
        ) -> str:
            """The page's accessibility tree, the whole page unless narrowed, elements tagged
            with refs (@eN) for click, fill and get. interactive=true keeps only what can be
            used (inputs, buttons, links); urls=true adds the links' targets."""
            return browser.run(
                "snapshot",
                interactive=bool(interactive),
                urls=bool(urls),
                compact=bool(compact),
                depth=None if depth is None else str(depth),
                selector=selector,
            )

    else:

        @tool("snapshot")
        def snapshot_strict(
            interactive: Annotated[
                bool, Field(description="only inputs, buttons and links")
            ] = True,
            compact: Annotated[bool, Field(description="leave out empty structural nodes")] = True,
            depth: Annotated[int | None, Field(description="how deep the tree goes")] = None,
            selector: Annotated[
                str | None, Field(description="only the part under this CSS selector")
            ] = None,
        ) -> str:
            """The page's accessibility tree, elements tagged with refs (@eN) for click, fill
            and get. By default only what can be used, compacted: set interactive=false to
            read the page's text (tables included)."""
            return browser.run(
                "snapshot",
                interactive=interactive,
                compact=compact,
                depth=None if depth is None else str(depth),
                selector=selector,
            )

    @tool("click")
    def click(target: Target) -> str:
        """Click an element."""
        return browser.run("click", target)

    @tool("fill")
    def fill(target: Target, text: Annotated[str, Field(description="what to type")]) -> str:
        """Empty an input and type text into it."""
        return browser.run("fill", target, text)

    @tool("press")
    def press(
        key: Annotated[str, Field(description="a key or chord: Enter, Tab, Control+a")],
    ) -> str:
        """Press a key."""
        return browser.run("press", key)

    @tool("find")
    def find(
        by: Annotated[FIND_BY, Field(description="how to locate the element")],
        value: Annotated[
            str,
            Field(
                description="the role, text, label, placeholder, alt text, title or test id to "
                "look for; a CSS selector for first and last"
            ),
        ],
        action: Annotated[FIND_ACTIONS, Field(description="what to do with the element")],
        value_after: Annotated[
            str | None, Field(description="the text to enter, for fill and type")
        ] = None,
        name: Annotated[str | None, Field(description="the accessible name, with by=role")] = None,
        exact: Annotated[bool | None, Field(description="match the text exactly")] = None,
    ) -> str:
        """Locate an element by what it is (role, visible text, label, ...) and act on it;
        action=text returns its text."""
        rest = (value_after,) if value_after else ()
        return browser.run("find", by, value, action, *rest, name=name or None, exact=bool(exact))

    @tool("wait")
    def wait(
        target: Annotated[
            str, Field(description="a CSS selector to wait for, or a number of milliseconds")
        ],
        state: Annotated[
            str | None,
            Field(description="for a selector: visible, hidden, attached or detached"),
        ] = None,
    ) -> str:
        """Wait until an element reaches a state (visible by default), or for a time."""
        return browser.run("wait", target, state=state or None)

    @tool("get")
    def get(
        what: Annotated[GET_WHAT, Field(description="what to read")],
        target: Annotated[
            str | None,
            Field(description="the element (@eN or CSS selector); not for title and url"),
        ] = None,
        attr: Annotated[str | None, Field(description="the attribute's name, for attr")] = None,
    ) -> str:
        """Read from the page: the title or URL, or an element's text, inner HTML, value,
        attribute, box or computed styles, or how many elements match."""
        values: list[str] = []
        if what in _GET_NEEDS_TARGET:
            if target is None:
                return failure(f"get {what} needs target")
            values.append(target)
        if what == "attr":
            if attr is None:
                return failure("get attr needs attr (the attribute's name)")
            values.append(attr)
        return browser.run("get", what, *values)

    @tool("eval")
    def eval_js(js: Annotated[str, Field(description="a JavaScript expression")]) -> str:
        """Evaluate JavaScript in the page; the reply carries its value."""
        return browser.run("eval", js)

    @tool("back")
    def back() -> str:
        """Go back one page."""
        return browser.run("back")

    @tool("forward")
    def forward() -> str:
        """Go forward one page."""
        return browser.run("forward")

    @tool("reload")
    def reload() -> str:
        """Load the page again."""
        return browser.run("reload")

    @tool("close")
    def close() -> str:
        """Close the browser; a later open starts a new one."""
        return browser.run("close")

    return server


def main() -> None:
    browser = AgentBrowser(Config.from_env(dict(os.environ)))
    if sys.platform.startswith("linux"):
        become_subreaper()

    def on_signal(signum: int, frame: object) -> None:
        if browser.closing:
            return  # the main thread is already shutting down; let it finish
        browser.shutdown()
        sys.stderr.flush()
        # Not sys.exit: unwinding the event loop would wait for the thread blocked reading
        # stdin, and the client kills us 2 s after its SIGTERM.
        os._exit(0)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    surface = os.environ.get("AGENT_BROWSER_MCP_SURFACE") or "upstream"
    try:
        build_server(browser, surface).run("stdio")
    finally:
        browser.shutdown()


if __name__ == "__main__":
    main()

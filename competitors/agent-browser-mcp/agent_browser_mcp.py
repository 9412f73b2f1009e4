"""agent-browser behind a stdio MCP server: one tool per agent-browser CLI command.

Every tool call runs ``agent-browser --session S --json <command> <args...>`` (argument list,
no shell) and turns the JSON reply into a short text result; failures come back as MCP tool
errors. agent-browser keeps one daemon (and its browser) per session, so page state carries
over between calls. See README.md beside this file for the tools and the environment.

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
from typing import Annotated, Any, Literal

import psutil
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

# Run by the harness's Python, so its reaping helpers are importable (shared with the
# chat-loop attempt driver).
from agent_benchmarks.runner.reaping import (
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

    def run(self, command: str, *values: str, **options: str | bool | None) -> dict[str, Any]:
        """``data`` of the JSON reply to ``command *values --option value...``; a True option
        is a bare flag, None or False leaves it out. Raises ToolError on any failure."""
        args = [command, *values]
        for key, value in options.items():
            if value is True:
                args.append(f"--{key}")
            elif value not in (None, False):
                args += [f"--{key}", str(value)]
        for value in (*values, *options.values()):
            if isinstance(value, str) and _OPTION_LIKE.match(value):
                raise ToolError(
                    f"{value!r} looks like a command-line option, and agent-browser would read "
                    "it as one: values starting with '-' and a letter cannot be passed"
                )
        with self._lock:
            if self.closing:
                raise ToolError("the server is shutting down")
            try:
                return self._run_locked(tuple(args))
            finally:
                reap_exited_children()

    def _run_locked(self, args: tuple[str, ...]) -> dict[str, Any]:
        command = args[0]
        try:
            result = self._invoke(args, self.config.call_timeout_s)
        except OSError as exc:
            raise ToolError(
                f"cannot run agent-browser ({self.config.binary}): {exc}. Install it with "
                f"`npm ci` in {REPO}, or point AGENT_BROWSER_BIN at the binary"
            ) from None
        self._daemon_started = True
        if result is None:
            if not self.closing:
                # The daemon is still executing the abandoned command and would make every
                # later command (close included) queue behind it, so start over instead.
                _stop_descendants()
                self._daemon_started = False
            raise ToolError(
                f"agent-browser {command} timed out after {self.config.call_timeout_s:g} s "
                "(AGENT_BROWSER_MCP_CALL_TIMEOUT); the browser was restarted, so the page is "
                "gone: call open again"
            )
        data = _parse_reply(command, *result)
        if command == "close":
            self._daemon_started = False
        return data

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


def _parse_reply(command: str, returncode: int, out: str, err: str) -> dict[str, Any]:
    try:
        reply = json.loads(out)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        detail = (err.strip() or out.strip())[-2000:] or f"exit status {returncode}"
        raise ToolError(f"agent-browser {command} gave no JSON reply: {detail}")
    if returncode != 0 or not reply.get("success"):
        message = reply.get("error") or err.strip() or f"exit status {returncode}"
        raise ToolError(f"agent-browser {command} failed: {message}")
    data = reply.get("data")
    return data if isinstance(data, dict) else {}


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

Selector = Annotated[
    str, Field(description="CSS selector, or an element ref from snapshot such as @e12")
]


def build_server(browser: AgentBrowser) -> MCPServer:
    server = MCPServer(
        "agent-browser-mcp",
        instructions=(
            "Browse with agent-browser. Call open, then snapshot to see the page as an "
            "accessibility tree whose elements carry refs (@e1, @e2, ...); pass a ref or a CSS "
            "selector to click, fill, select, check or get. Refs go stale after the page "
            "changes: take a new snapshot."
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
    def open_page(url: Annotated[str, Field(description="URL to load")]) -> str:
        """Navigate the browser to a URL (the first call starts the browser)."""
        data = browser.run("open", url)
        return f"Opened {data.get('url', url)}\nTitle: {data.get('title', '')}"

    @tool("snapshot")
    def snapshot(
        interactive: Annotated[bool, Field(description="only interactive elements")] = True,
        compact: Annotated[bool, Field(description="drop empty structural nodes")] = True,
        depth: Annotated[int | None, Field(description="limit tree depth", ge=1)] = None,
        selector: Annotated[str | None, Field(description="scope to a CSS selector")] = None,
    ) -> str:
        """Accessibility tree of the page, one element per line with refs like [ref=e5].
        interactive=true keeps mainly links, buttons, form fields and headings; set it to false
        to read the page's text (table contents included)."""
        data = browser.run(
            "snapshot",
            interactive=interactive,
            compact=compact,
            depth=None if depth is None else str(depth),
            selector=selector,
        )
        return data.get("snapshot") or "(nothing matched)"

    @tool("click")
    def click(selector: Selector) -> str:
        """Click an element."""
        browser.run("click", selector)
        return f"Clicked {selector}"

    @tool("fill")
    def fill(selector: Selector, text: str) -> str:
        """Clear a text field and type text into it."""
        browser.run("fill", selector, text)
        return f"Filled {selector}"

    @tool("select")
    def select(
        selector: Selector,
        value: Annotated[str, Field(description="option value or visible label")],
    ) -> str:
        """Choose an option of a <select> dropdown."""
        data = browser.run("select", selector, value)
        chosen = ", ".join(str(v) for v in data.get("selected") or [value])
        return f"Selected {chosen} in {selector}"

    @tool("check")
    def check(selector: Selector) -> str:
        """Tick a checkbox."""
        browser.run("check", selector)
        return f"Checked {selector}"

    @tool("uncheck")
    def uncheck(selector: Selector) -> str:
        """Clear a checkbox."""
        browser.run("uncheck", selector)
        return f"Unchecked {selector}"

    @tool("press")
    def press(
        key: Annotated[str, Field(description="key or chord: Enter, Tab, Control+a")],
    ) -> str:
        """Press a key in the focused element."""
        browser.run("press", key)
        return f"Pressed {key}"

    @tool("find")
    def find(
        locator: Annotated[
            Literal[
                "role",
                "text",
                "label",
                "placeholder",
                "alt",
                "title",
                "testid",
                "first",
                "last",
                "nth",
            ],
            Field(description="how to locate the element"),
        ],
        value: Annotated[
            str,
            Field(
                description="the role, text, label, placeholder, alt text, title or test id "
                "to look for; a CSS selector for first, last and nth"
            ),
        ],
        action: Annotated[
            Literal["click", "fill", "check", "hover", "text"],
            Field(description="what to do with the element; text returns its text"),
        ] = "click",
        text: Annotated[str | None, Field(description="text to type, for fill")] = None,
        name: Annotated[str | None, Field(description="accessible name filter, for role")] = None,
        exact: Annotated[bool, Field(description="exact, case-sensitive match")] = False,
        index: Annotated[int | None, Field(description="0-based index, for nth", ge=0)] = None,
    ) -> str:
        """Locate an element semantically (by role, visible text, label, ...) and act on it."""
        if (locator == "nth") != (index is not None):
            raise ToolError("index is required with locator nth, and only with it")
        if (action == "fill") != (text is not None):
            raise ToolError("text is required with action fill, and only with it")
        target = (str(index), value) if index is not None else (value,)
        rest = (text,) if text is not None else ()
        data = browser.run("find", locator, *target, action, *rest, name=name, exact=exact)
        if action == "text":
            return str(data.get("text", ""))
        return f"{action}: done"

    @tool("wait")
    def wait(
        selector: Annotated[
            str | None, Field(description="wait for this element to appear")
        ] = None,
        ms: Annotated[int | None, Field(description="just wait this long", ge=0)] = None,
        text: Annotated[str | None, Field(description="wait for this text on the page")] = None,
        url: Annotated[
            str | None, Field(description="wait for the URL to match, e.g. **/thanks*")
        ] = None,
        fn: Annotated[
            str | None, Field(description="wait for this JavaScript expression to be truthy")
        ] = None,
        load: Annotated[
            Literal["load", "domcontentloaded", "networkidle"] | None,
            Field(description="wait for a page load state"),
        ] = None,
        state: Annotated[
            Literal["visible", "hidden", "attached", "detached"] | None,
            Field(description="with selector: the state to wait for (default visible)"),
        ] = None,
        timeout_ms: Annotated[
            int | None,
            Field(description="give up after this long (agent-browser's default: 25 s)", ge=1),
        ] = None,
    ) -> str:
        """Wait for exactly one of: an element, a number of milliseconds, text, a URL pattern,
        a JavaScript condition or a load state."""
        modes = {
            "selector": selector,
            "ms": ms,
            "text": text,
            "url": url,
            "fn": fn,
            "load": load,
        }
        given = [k for k, v in modes.items() if v is not None]
        if len(given) != 1:
            raise ToolError(f"give exactly one of {', '.join(modes)} (got {given or 'none'})")
        if state is not None and selector is None:
            raise ToolError("state only applies to a selector wait")
        mode = given[0]
        positional = (str(modes[mode]),) if mode in ("selector", "ms") else ()
        flag = {} if positional else {mode: str(modes[mode])}
        timeout = None if timeout_ms is None else str(timeout_ms)
        browser.run("wait", *positional, state=state, timeout=timeout, **flag)
        return f"Done waiting ({mode} {modes[mode]})"

    @tool("get")
    def get(
        what: Literal["text", "html", "value", "attr", "title", "url", "count"],
        selector: Annotated[
            str | None,
            Field(description="element (CSS selector or @ref); not used for title and url"),
        ] = None,
        attr: Annotated[str | None, Field(description="attribute name, for what=attr")] = None,
    ) -> str:
        """Read from the page: an element's text, inner HTML, input value, attribute, the
        number of elements matching a selector, or the page title or URL."""
        if what in ("title", "url"):
            if selector is not None:
                raise ToolError(f"get {what} takes no selector")
            return str(browser.run("get", what).get(what, ""))
        if not selector:
            raise ToolError(f"get {what} needs a selector")
        if (what == "attr") != (attr is not None):
            raise ToolError("attr (the attribute name) is required with what=attr, and only then")
        if what == "attr":
            return str(browser.run("get", "attr", selector, attr).get("value", ""))
        # The reply names its field after the subcommand: {"text": ...}, {"count": ...}.
        return str(browser.run("get", what, selector).get(what, ""))

    @tool("eval")
    def eval_js(
        script: Annotated[str, Field(description="JavaScript expression to evaluate")],
    ) -> str:
        """Evaluate JavaScript in the page and return the result (JSON for objects)."""
        data = browser.run("eval", script)
        if "unserializable" in data:
            return str(data["unserializable"])
        result = data.get("result")
        return result if isinstance(result, str) else json.dumps(result)

    @tool("back")
    def back() -> str:
        """Go back in history."""
        return f"Now at {browser.run('back').get('url', '')}"

    @tool("forward")
    def forward() -> str:
        """Go forward in history."""
        return f"Now at {browser.run('forward').get('url', '')}"

    @tool("reload")
    def reload() -> str:
        """Reload the page."""
        return f"Now at {browser.run('reload').get('url', '')}"

    @tool("close")
    def close() -> str:
        """Close the browser. A later open starts a fresh one."""
        browser.run("close")
        return "Browser closed"

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
    try:
        build_server(browser).run("stdio")
    finally:
        browser.shutdown()


if __name__ == "__main__":
    main()

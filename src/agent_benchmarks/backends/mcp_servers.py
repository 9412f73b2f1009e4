"""The browser MCP servers an agent CLI is locked down to: how each one starts, which of its
tools are out of bounds (and why), how its browser is sent through a recorded-web run's
proxy, and which tools it really offers (asked over MCP). The agents (Claude Code,
:mod:`agent_benchmarks.backends.claude_mcp`; Codex, :mod:`agent_benchmarks.backends.codex_mcp`)
take a server from :data:`SERVERS` by its ``--backend`` name; adding a server is one entry
here.

Servers: ``lightpanda mcp``; our agent-browser wrapper (``competitors/agent-browser-mcp``)
on Chromium or on Lightpanda; browser-use's server; Playwright's (``@playwright/mcp``) and
Chrome DevTools' (``chrome-devtools-mcp``), both on Debian's Chromium, pinned in the npm
lockfile.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.cli_shell import EXECUTABLE_ENV as CLI_EXECUTABLE_ENV
from agent_benchmarks.backends.cli_shell import LOG_ENV as CLI_LOG_ENV
from agent_benchmarks.backends.cli_shell import PROGRAM_ENV as CLI_PROGRAM_ENV
from agent_benchmarks.backends.cli_shell import TOOL_NAME as CLI_TOOL
from agent_benchmarks.backends.cli_shell import read_refusals
from agent_benchmarks.backends.programs import (
    REPO,
    agent_browser_programs,
    node_binary,
    program_version,
    short_id,
)
from agent_benchmarks.backends.web_routing import (
    AGENT_BROWSER_LIGHTPANDA_WEB_ROUTING,
    AGENT_BROWSER_WEB_ROUTING,
    BROWSER_USE_WEB_ROUTING,
    CHROMIUM_MCP_WEB_ROUTING,
    LIGHTPANDA_WEB_ROUTING,
    PROXY_LOOPBACK,
    agent_browser_web_env,
    browser_use_web_env,
    lightpanda_web_args,
)
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.episode.faults import relayed
from agent_benchmarks.isolation.resources import CHROMIUM_RULES, ENGINE, MCP_SERVER, RoleRule
from agent_benchmarks.search import (
    BASE_URL_ENV,
    BLOCK_ENV,
    DEFAULT_SEARCH,
    KEY_ENV,
    LOG_ENV,
    MCP_TOOL_NAME,
    TOOL_NAME,
    key_problem,
)
from agent_benchmarks.web.service import AttemptWeb


class ServerSettings(Protocol):
    """What starting a server needs of a run's settings (the programs, the surface)."""

    surface: str
    lightpanda: str
    agent_browser: str | None
    browser_use_python: str | None
    server_program: str | None  # the server's npm program, or the cli backend's program
    cli: str | None  # the cli backend's program, as the agent names it


WRAPPER = REPO / "competitors" / "agent-browser-mcp" / "agent_browser_mcp.py"
# browser-use lives in its own pinned environment (competitors/browser-use/uv.lock): in the
# harness's environment it would pin anthropic, mcp, datasets and pydantic to old releases.
BROWSER_USE_PROJECT = REPO / "competitors" / "browser-use"
BROWSER_USE_PYTHON = BROWSER_USE_PROJECT / ".venv" / "bin" / "python"
BROWSER_USE_INSTALL = "uv sync --locked --project competitors/browser-use"
SERVER_NAME = "browser"  # tools reach the model as mcp__browser__<tool>


@dataclass(frozen=True)
class McpServerDef:
    """One browser MCP server: how to start it and which of its tools are out of bounds."""

    name: str
    # (settings, attempt folder, attempt temp folder) -> the mcp-config entry
    server: Callable[[ServerSettings, Path, Path], dict[str, Any]]
    # tool -> why it is excluded, on every surface, and on the strict surface besides
    excluded: dict[str, str] = field(default_factory=dict)
    strict_excluded: dict[str, str] = field(default_factory=dict)
    programs: Callable[[ServerSettings], dict[str, str]] = lambda settings: {}
    # The server's own web search tools, withheld unless --search native.
    search_tools: tuple[str, ...] = ()
    # --web record|replay: (its mcp-config entry, the attempt's proxy, the attempt's temp
    # folder) -> the entry with its browser sent through the proxy, trusting the archive's
    # CA; and how, for the manifest. None: the server's browser cannot be routed, and --web
    # is refused. A Chromium server trusts the CA from an NSS database the run makes.
    route_web: Callable[[dict[str, Any], AttemptWeb, Path], dict[str, Any]] | None = None
    web_routing: str | None = None
    web_nss_db: bool = False
    # The server's npm program (its name in node_modules/.bin), for servers npm installs;
    # the run finds it (--mcp-server overrides) and keeps its path in the settings.
    npm_program: str | None = None
    chromium: bool = False  # the server drives Debian's Chromium (checked at the start)
    # A file the server writes in the attempt folder listing the calls it refused (the
    # cli backend's shell), read into the row's refused_calls.
    refusal_log: str | None = None
    # Its processes' roles, for the resource figures: the server (and what it starts runs
    # as its role, the engine aside), and the engine when it is not Chromium.
    roles: tuple[RoleRule, ...] = ()

    def stack(self, settings: ServerSettings) -> str:
        """The browser part of the stack's name: the server's, with the program for the
        cli backend (``cli-agent-browser``), since each program is a stack of its own."""
        return f"{self.name}-{settings.cli}" if self.name == "cli" else self.name

    def routes_web(self, settings: ServerSettings) -> bool:
        """Whether the server's browser can be sent through a recorded web's proxy (of the
        cli backend's programs, agent-browser's alone is known to take one)."""
        return self.route_web is not None and settings.cli in (None, "agent-browser")

    def refusals(self, workdir: Path) -> list[dict[str, Any]]:
        """The calls the server itself refused in an attempt, as refused_calls lists them."""
        if self.refusal_log is None:
            return []
        return [
            {"name": f"mcp__{SERVER_NAME}__{CLI_TOOL}", "args": {"command": r["command"]}}
            | {"why": r["why"]}
            for r in read_refusals(workdir / self.refusal_log)
        ]

    def excluded_on(self, surface: str, search: str = DEFAULT_SEARCH) -> dict[str, str]:
        """The tools ``surface`` and ``search`` keep from the model, each with why."""
        excluded = self.excluded | (self.strict_excluded if surface == "strict" else {})
        if search != "native":
            why = f"--search {search}: " + (
                "the one search is web_search" if search == "tavily" else "no search tool"
            )
            excluded |= {tool: why for tool in self.search_tools if tool not in excluded}
        return excluded


def _lightpanda_server(settings: ServerSettings, workdir: Path, tmpdir: Path) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": settings.lightpanda,
        "args": ["mcp"],
        "env": {"LIGHTPANDA_DISABLE_TELEMETRY": "true"},
    }


def _lightpanda_route_web(server: dict[str, Any], web: AttemptWeb, tmpdir: Path) -> dict[str, Any]:
    return server | {"args": [*server["args"], *lightpanda_web_args(web)]}


def _agent_browser_env(settings: ServerSettings, workdir: Path, tmpdir: Path) -> dict[str, str]:
    return {
        "AGENT_BROWSER_BIN": settings.agent_browser or "agent-browser",
        # One daemon per attempt: sessions never share a browser, and the wrapper closes
        # it when Claude Code ends the server.
        "AGENT_BROWSER_SESSION": f"ab-{os.getpid()}-{short_id(workdir)}",
        "AGENT_BROWSER_NO_VERSION_CHECK": "1",
        "HOME": str(workdir / "home"),
        # agent-browser's socket path must stay under 103 bytes; HOME may be deep.
        "AGENT_BROWSER_SOCKET_DIR": str(tmpdir / "sockets"),
    }


def _agent_browser_server(settings: ServerSettings, workdir: Path, tmpdir: Path) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(WRAPPER)],
        "env": _agent_browser_env(settings, workdir, tmpdir)
        | {"AGENT_BROWSER_MCP_SURFACE": settings.surface},
    }


def _agent_browser_route_web(
    server: dict[str, Any], web: AttemptWeb, tmpdir: Path
) -> dict[str, Any]:
    lightpanda = server["env"].get("AGENT_BROWSER_EXECUTABLE_PATH")  # set on Lightpanda
    return server | {"env": server["env"] | agent_browser_web_env(web, tmpdir, lightpanda)}


def _agent_browser_lightpanda_server(
    settings: ServerSettings, workdir: Path, tmpdir: Path
) -> dict[str, Any]:
    server = _agent_browser_server(settings, workdir, tmpdir)
    server["env"] |= {
        "AGENT_BROWSER_ENGINE": "lightpanda",
        "AGENT_BROWSER_EXECUTABLE_PATH": settings.lightpanda,
    }
    return server


def _agent_browser_programs(settings: ServerSettings) -> dict[str, str]:
    return agent_browser_programs(settings.agent_browser or "agent-browser")


def _chromium_programs(settings: ServerSettings) -> dict[str, str]:
    return _agent_browser_programs(settings) | {
        "chromium": program_version(["chromium", "--version"])
    }


def _browser_use_server(settings: ServerSettings, workdir: Path, tmpdir: Path) -> dict[str, Any]:
    # browser-use's own HOME, in the attempt's temp folder (removed when the attempt ends):
    # it keeps its Chrome profile under ~/.config/browseruse whatever BROWSER_USE_CONFIG_DIR
    # says, and parallel workers sharing a profile hang on Chrome's lock.
    home = tmpdir / "browser-use-home"
    return {
        "type": "stdio",
        "command": settings.browser_use_python or str(BROWSER_USE_PYTHON),
        "args": ["-m", "browser_use.mcp.server"],
        "env": {
            "BROWSER_USE_HEADLESS": "true",
            "BROWSER_USE_DISABLE_EXTENSIONS": "true",
            "ANONYMIZED_TELEMETRY": "false",
            "BROWSER_USE_CLOUD_SYNC": "false",
            "BROWSER_USE_VERSION_CHECK": "false",
            "BROWSER_USE_CONFIG_DIR": str(home / "config"),
            "HOME": str(home),
        },
    }


def _browser_use_route_web(server: dict[str, Any], web: AttemptWeb, tmpdir: Path) -> dict[str, Any]:
    home = Path(server["env"]["HOME"])  # already in the attempt's temp folder
    return server | {"env": server["env"] | browser_use_web_env(web, home)}


def _browser_use_programs(settings: ServerSettings) -> dict[str, str]:
    python = settings.browser_use_python or str(BROWSER_USE_PYTHON)
    probe = "import importlib.metadata as m; print(m.version('browser-use'))"
    return {
        "browser-use": program_version([python, "-c", probe]),
        "chromium": program_version(["chromium", "--version"]),
    }


# Chromium's sandbox needs user namespaces or a setuid helper, which containers and root
# lack (Chromium refuses to start as root with it); the attempt is confined by the harness
# instead (its own cgroup, temp folder and HOME). Passed on every machine, so the manifest's
# command is the same everywhere.
NO_SANDBOX = "--no-sandbox"


def _chromium_path() -> str:
    return shutil.which("chromium") or "/usr/bin/chromium"


def _chromium_home(tmpdir: Path) -> str:
    """The browser's HOME: in the attempt's temp folder (removed with it), where the
    recorded web's NSS database goes too."""
    return str(tmpdir / "browser-home")


def _playwright_server(settings: ServerSettings, workdir: Path, tmpdir: Path) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": settings.server_program,
        "args": [
            "--headless", "--isolated", NO_SANDBOX, "--executable-path", _chromium_path(),
            # Its snapshot and download files go to the attempt's temp folder, not the run's.
            "--output-dir", str(tmpdir / "playwright-output"),
            "--image-responses", "omit",  # a text-only comparison
            "--no-webmcp",  # tools a page registers would reach past the lockdown
        ],
        "env": {"HOME": _chromium_home(tmpdir)},
    }  # fmt: skip


def _playwright_route_web(server: dict[str, Any], web: AttemptWeb, tmpdir: Path) -> dict[str, Any]:
    web.install_nss_db(Path(server["env"]["HOME"]))
    args = ["--proxy-server", web.proxy_url, "--proxy-bypass", PROXY_LOOPBACK]
    return server | {"args": [*server["args"], *args]}


def _chrome_devtools_server(
    settings: ServerSettings, workdir: Path, tmpdir: Path
) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": settings.server_program,
        "args": [
            "--headless", "--isolated", "--executablePath", _chromium_path(),
            f"--chromeArg={NO_SANDBOX}",
            # Nothing phones home: Google's usage statistics, CrUX lookups of traced URLs
            # (and, in the environment, its update check).
            "--no-usage-statistics", "--no-performance-crux",
        ],
        "env": {
            "HOME": _chromium_home(tmpdir),
            "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1",
            # Its npm update check (it asks the registry, then caches the answer in HOME).
            "CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1",
        },
    }  # fmt: skip


def _chrome_devtools_route_web(
    server: dict[str, Any], web: AttemptWeb, tmpdir: Path
) -> dict[str, Any]:
    web.install_nss_db(Path(server["env"]["HOME"]))
    args = ["--proxyServer", web.proxy_url, f"--chromeArg=--proxy-bypass-list={PROXY_LOOPBACK}"]
    return server | {"args": [*server["args"], *args]}


def _npm_server_programs(name: str) -> Callable[[ServerSettings], dict[str, str]]:
    def programs(settings: ServerSettings) -> dict[str, str]:
        assert settings.server_program is not None
        return {
            name: program_version([settings.server_program, "--version"]),
            "chromium": program_version([_chromium_path(), "--version"]),
        }

    return programs


CLI_LOG = "cli-shell.jsonl"  # in the attempt folder: every command line, refused or run


def _cli_server(settings: ServerSettings, workdir: Path, tmpdir: Path) -> dict[str, Any]:
    env = {
        CLI_PROGRAM_ENV: settings.cli or "",
        CLI_EXECUTABLE_ENV: settings.server_program or "",
        CLI_LOG_ENV: str(workdir / CLI_LOG),
        "HOME": str(workdir / "home"),
    }
    if settings.cli == "agent-browser":
        # The session, HOME and sockets our wrapper gives it: one daemon per attempt.
        env |= _agent_browser_env(settings, workdir, tmpdir)
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "agent_benchmarks.backends.cli_shell"],
        "env": env,
    }


def _cli_route_web(server: dict[str, Any], web: AttemptWeb, tmpdir: Path) -> dict[str, Any]:
    # Checked at the start: only agent-browser's CLI is routed (its own proxy variables).
    assert server["env"][CLI_PROGRAM_ENV] == "agent-browser"
    return server | {"env": server["env"] | agent_browser_web_env(web, tmpdir)}


def _cli_programs(settings: ServerSettings) -> dict[str, str]:
    assert settings.server_program is not None and settings.cli is not None
    if settings.cli == "agent-browser":
        chromium = program_version([_chromium_path(), "--version"])
        return agent_browser_programs(settings.server_program) | {"chromium": chromium}
    return {settings.cli: program_version([settings.server_program, "--version"])}


SEARCH_LOG = "search.jsonl"  # in the attempt folder: the web_search server's call log


def check_tavily_key(replaying: bool) -> None:
    """``--search tavily``'s key, checked before anything starts: one clear error when it
    is missing, or (unless replaying, where the archive answers every search) when Tavily
    refuses it."""
    if not os.environ.get(KEY_ENV):
        raise InputError(
            f"--search tavily needs {KEY_ENV} in the environment (the web_search server "
            "asks Tavily with it)"
        )
    if not replaying:
        problem = key_problem(os.environ[KEY_ENV], os.environ.get(BASE_URL_ENV) or None)
        if problem is not None:
            raise InputError(f"--search tavily: {problem}")


def web_search_server(
    log: Path, blocked: tuple[str, ...], base_url: str | None, web: AttemptWeb | None = None
) -> dict[str, Any]:
    """The mcp-config entry of the web_search server. Its key is not in it (the entry is
    on Claude Code's command line): the server inherits TAVILY_API_KEY from Claude Code's
    environment, as every MCP server inherits it. With ``web``, its Tavily calls go through
    the recording or replaying proxy (tavily-python's proxy variables, and the archive's CA
    as requests' trust store: every HTTPS call it makes is the proxy's)."""
    env = {LOG_ENV: str(log), BLOCK_ENV: json.dumps(list(blocked))}
    if base_url is not None:
        env[BASE_URL_ENV] = base_url
    if web is not None:
        env |= {
            "TAVILY_HTTP_PROXY": web.proxy_url,
            "TAVILY_HTTPS_PROXY": web.proxy_url,
            "REQUESTS_CA_BUNDLE": str(web.ca_cert),
        }
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "agent_benchmarks.search.server"],
        "env": env,
    }


# What each surface keeps from the model, and why. Upstream's allow-list for Lightpanda
# (goto, tree, markdown, extract, structuredData, findElement, interactiveElements, links,
# search, click, fill, hover, selectOption, setChecked, press, scroll, waitForSelector,
# nodeDetails, getCookies, getEnv, getUrl, eval, consoleLogs, detectForms) leaves out the
# tools below; every other tool `lightpanda mcp` lists is offered.
_NOT_BROWSING = "not browsing (script saving, HTTP-only sessions); not in upstream's allow-list"
_LIGHTPANDA_EXCLUDED = {
    "screenshot": "multimodal (a text-only comparison); not in upstream's allow-list",
    "save": _NOT_BROWSING,
    "session_new": _NOT_BROWSING,
    "session_list": _NOT_BROWSING,
    "session_close": _NOT_BROWSING,
}
_SESSION_TOOLS = "session bookkeeping, not browsing; denied by upstream too"
_BROWSER_USE_EXCLUDED = {
    "browser_screenshot": "multimodal (a text-only comparison); denied by upstream too",
    "retry_with_browser_use_agent": "hands the task to browser-use's own LLM loop (a second "
    "model, tokens the row cannot count); denied by upstream too",
    "browser_list_sessions": _SESSION_TOOLS,
    "browser_close_session": _SESSION_TOOLS,
    "browser_close_all": _SESSION_TOOLS,
}
_STRICT_ONLY = "strict surface: "
_MULTIMODAL = "multimodal (a text-only comparison)"
_LOCAL_FILES = "reads the machine's files into the page (outside the page)"
_PLAYWRIGHT_EXCLUDED = {
    "browser_take_screenshot": _MULTIMODAL,
    "browser_run_code_unsafe": "runs code in the server's own process, which reaches the "
    "machine's files and network (outside the page)",
    "browser_file_upload": _LOCAL_FILES,
    "browser_drop": _LOCAL_FILES,
}
_PROFILING = "developer profiling, not browsing (writes trace or report files)"
_CHROME_DEVTOOLS_EXCLUDED = {
    "take_screenshot": _MULTIMODAL,
    "screencast_start": _MULTIMODAL + "; records a video file",
    "screencast_stop": _MULTIMODAL + "; records a video file",
    "upload_file": _LOCAL_FILES,
    "take_heapsnapshot": _PROFILING,
    "performance_start_trace": _PROFILING,
    "performance_stop_trace": _PROFILING,
    "performance_analyze_insight": _PROFILING,
    "lighthouse_audit": _PROFILING,
}

# The roles of the servers' processes (isolation/resources.py). Claude Code's and Codex's
# command lines hold the whole MCP config, so agents are told by their executables, first.
LIGHTPANDA_MCP = RoleRule(
    f"{ENGINE}+{MCP_SERVER}",
    exe=r"^lightpanda$",
    args=r"\smcp(\s|$)",
    note="lightpanda mcp: its MCP server and its browser engine are one process, measured together",
)
LIGHTPANDA_ENGINE = RoleRule(ENGINE, exe=r"^lightpanda$")  # serving CDP (lightpanda serve)
AGENT_BROWSER_WRAPPER = RoleRule(MCP_SERVER, args=r"agent_browser_mcp\.py")
# agent-browser's commands and their daemon (which detaches: its parent is gone when seen).
AGENT_BROWSER_PROGRAM = RoleRule(MCP_SERVER, exe=r"^agent-browser")
CLI_SHELL_ROLE = RoleRule(MCP_SERVER, args=r"-m agent_benchmarks\.backends\.cli_shell")
SEARCH_SERVER_ROLE = RoleRule("search_server", args=r"-m agent_benchmarks\.search\.server")


def stack_roles(
    agent: RoleRule, server: McpServerDef, settings: ServerSettings
) -> tuple[RoleRule, ...]:
    """The roles of an agent CLI's attempt on ``server``: Chromium is the engine, the agent
    is known by its program, then the server (an npm server by its script, which node
    runs) and the web_search server."""
    own = server.roles
    if server.npm_program is not None and settings.server_program:
        own = (RoleRule(MCP_SERVER, args=re.escape(settings.server_program)), *own)
    return (*CHROMIUM_RULES, agent, *own, SEARCH_SERVER_ROLE)


SERVERS: dict[str, McpServerDef] = {
    "lightpanda": McpServerDef(
        "lightpanda",
        _lightpanda_server,
        _LIGHTPANDA_EXCLUDED,
        {"search": _STRICT_ONLY + "a web search engine, not the browser"},
        search_tools=("search",),
        route_web=_lightpanda_route_web,
        web_routing="lightpanda mcp: " + LIGHTPANDA_WEB_ROUTING,
        roles=(LIGHTPANDA_MCP,),
    ),
    "agent-browser": McpServerDef(
        "agent-browser",
        _agent_browser_server,
        programs=_chromium_programs,
        route_web=_agent_browser_route_web,
        web_routing=AGENT_BROWSER_WEB_ROUTING,
        web_nss_db=True,
        chromium=True,
        roles=(AGENT_BROWSER_WRAPPER, AGENT_BROWSER_PROGRAM),
    ),
    "agent-browser-lightpanda": McpServerDef(
        "agent-browser-lightpanda",
        _agent_browser_lightpanda_server,
        programs=_agent_browser_programs,
        route_web=_agent_browser_route_web,
        web_routing=AGENT_BROWSER_LIGHTPANDA_WEB_ROUTING,
        roles=(AGENT_BROWSER_WRAPPER, AGENT_BROWSER_PROGRAM, LIGHTPANDA_ENGINE),
    ),
    "browser-use": McpServerDef(
        "browser-use",
        _browser_use_server,
        _BROWSER_USE_EXCLUDED,
        {
            "browser_extract_content": _STRICT_ONLY + "hands the page to browser-use's own "
            "LLM (a second model, tokens the row cannot count); upstream allowed it"
        },
        programs=_browser_use_programs,
        route_web=_browser_use_route_web,
        web_routing=BROWSER_USE_WEB_ROUTING,
        web_nss_db=True,
        chromium=True,
        roles=(RoleRule(MCP_SERVER, args=r"-m browser_use\.mcp\.server"),),
    ),
    "playwright": McpServerDef(
        "playwright",
        _playwright_server,
        _PLAYWRIGHT_EXCLUDED,
        programs=_npm_server_programs("playwright-mcp"),
        route_web=_playwright_route_web,
        web_routing=CHROMIUM_MCP_WEB_ROUTING.format(flags="--proxy-server, --proxy-bypass"),
        web_nss_db=True,
        npm_program="playwright-mcp",
        chromium=True,
    ),
    "chrome-devtools": McpServerDef(
        "chrome-devtools",
        _chrome_devtools_server,
        _CHROME_DEVTOOLS_EXCLUDED,
        programs=_npm_server_programs("chrome-devtools-mcp"),
        route_web=_chrome_devtools_route_web,
        web_routing=CHROMIUM_MCP_WEB_ROUTING.format(
            flags="--proxyServer, --chromeArg=--proxy-bypass-list"
        ),
        web_nss_db=True,
        npm_program="chrome-devtools-mcp",
        chromium=True,
    ),
    # A browser CLI behind one shell tool that runs nothing but it (--cli NAME).
    "cli": McpServerDef(
        "cli",
        _cli_server,
        programs=_cli_programs,
        route_web=_cli_route_web,
        web_routing=AGENT_BROWSER_WEB_ROUTING,
        web_nss_db=True,
        refusal_log=CLI_LOG,
        roles=(CLI_SHELL_ROLE, AGENT_BROWSER_PROGRAM, LIGHTPANDA_ENGINE),
    ),
}


PROBE_STDERR = "probe-stderr.log"


def browser_server(
    definition: McpServerDef, settings: ServerSettings, prepared: PreparedTask
) -> dict[str, Any]:
    """The attempt's browser server entry: routed through the recorded web's proxy when
    the run has one, and through the project's relay when the episode has a fault."""
    server = definition.server(settings, prepared.workdir, prepared.tmpdir)
    if prepared.web is not None:
        assert definition.route_web is not None  # refused at the start otherwise
        server = definition.route_web(server, prepared.web, prepared.tmpdir)
    if prepared.fault is not None:
        # every episode of a --fault run, its clean pair's too: both take the same path
        server = relayed(server, prepared.workdir)
    return server


async def _list_tools(server: dict[str, Any], cwd: Path) -> dict[str, list[str]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        # Claude Code hands a server its own environment (TMPDIR included) plus the entry's
        # env; the probe does the same with its scratch folder as TMPDIR, so that what the
        # server's browser writes to temp goes with the scratch folder.
        env={**os.environ, "TMPDIR": str(cwd), **server.get("env", {})},
        cwd=str(cwd),
    )
    # The server's stderr goes to a file, not the terminal: a server's start-up log
    # (lightpanda's "config tips" on a terminal) must not land above the run's header. It
    # is read back into the error when the server fails.
    with (
        open(cwd / PROBE_STDERR, "w+", encoding="utf-8", errors="replace") as errlog,
        anyio.fail_after(60),
    ):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
    return {tool.name: _argument_names(tool.input_schema) for tool in tools}


def _argument_names(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required") or ())
    return [f"{name}*" if name in required else name for name in schema.get("properties") or {}]


def tool_arguments(
    definition: McpServerDef, settings: ServerSettings, scratch: Path
) -> dict[str, list[str]]:
    """Each tool the server offers, in its order, with its argument names."""
    server = definition.server(settings, scratch, scratch)
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    return probe_tools(server, scratch, f"--backend {definition.name}")


@dataclass(frozen=True)
class ToolSurface:
    """What the server (and with --search tavily, the web_search server) really offers,
    sorted by the surface: each offered tool with its argument names, the browser server's
    tools the model gets, and those it is kept from."""

    offered: dict[str, list[str]]
    allowed: list[str]
    excluded: list[str]


def tool_surface(
    definition: McpServerDef, settings: ServerSettings, search: str, search_base_url: str | None
) -> ToolSurface:
    """Start the server (and web_search's with ``search`` tavily) once, in a scratch folder,
    to ask what it offers: one clear error up front when a server cannot start."""
    scratch = Path(tempfile.mkdtemp(prefix="agent-benchmarks-probe-"))
    try:
        offered = tool_arguments(definition, settings, scratch)
        if search == "tavily":
            web_search = web_search_server(scratch / SEARCH_LOG, (), search_base_url)
            tools = probe_tools(web_search, scratch, "--search tavily")
            offered[MCP_TOOL_NAME] = tools.get(TOOL_NAME, [])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    excluded = definition.excluded_on(settings.surface, search)
    return ToolSurface(
        offered=offered,
        allowed=[t for t in offered if t not in excluded and t != MCP_TOOL_NAME],
        excluded=sorted(set(excluded) & set(offered)),
    )


def probe_tools(server: dict[str, Any], scratch: Path, flag: str) -> dict[str, list[str]]:
    try:
        return anyio.run(_list_tools, server, scratch)
    except Exception as exc:  # any failure to start or list is one clear message
        said = _tail(scratch / PROBE_STDERR)
        raise InputError(
            f"{flag}: its MCP server did not list its tools "
            f"({type(exc).__name__}: {exc}); check its install (docs/mcp.md, prerequisites)"
            + (f"; its stderr ended: {said}" if said else "")
        ) from None


def _tail(path: Path, chars: int = 600) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()[-chars:]
    except OSError:
        return ""


@dataclass(frozen=True)
class ServerPrograms:
    """The programs a server runs besides itself, found on this machine."""

    agent_browser: str | None = None
    browser_use_python: str | None = None
    server_program: str | None = None
    cli: str | None = None


def cli_program(given: str) -> tuple[str, str]:
    """``--cli``'s program as the agent names it, and the executable that runs: a path as
    given, agent-browser from the pinned npm install, anything else from PATH."""
    if "/" in given:
        path = Path(given)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise InputError(f"--cli {given}: not an executable file")
        return path.name, str(path)
    if given == "agent-browser":
        return given, node_binary(None, given, "--cli PATH")
    found = shutil.which(given)
    if found is None:
        raise InputError(f"--cli {given}: no such program on PATH (install it, or pass its path)")
    return given, found


def find_server_programs(
    definition: McpServerDef,
    *,
    agent_browser: Path | None = None,
    browser_use_python: Path | None = None,
    mcp_server: Path | None = None,
    cli: str | None = None,
) -> ServerPrograms:
    """What ``definition`` needs, each given by its flag or found where the project installs
    it; one clear error naming the flag or the install command when something is missing."""
    name = definition.name
    if agent_browser and not name.startswith("agent-browser"):
        raise InputError(
            f"--agent-browser: --backend {name} does not use agent-browser "
            "(only agent-browser and agent-browser-lightpanda do)"
        )
    if mcp_server and definition.npm_program is None:
        raise InputError(
            f"--mcp-server: --backend {name} does not start an npm MCP server "
            "(only playwright and chrome-devtools do)"
        )
    if (cli is not None) != (name == "cli"):
        raise InputError(
            "--cli PROGRAM goes with --backend cli (and --backend cli needs it)"
            if cli is not None
            else "--backend cli needs --cli PROGRAM (agent-browser, ghostchrome, or any "
            "browser command line program)"
        )
    found: dict[str, str] = {}
    if cli is not None:
        found["cli"], found["server_program"] = cli_program(cli)
    if name.startswith("agent-browser"):
        found["agent_browser"] = node_binary(agent_browser, "agent-browser", "--agent-browser")
        if not WRAPPER.exists():
            raise InputError(f"the agent-browser MCP wrapper is missing at {WRAPPER}")
    if definition.npm_program is not None:
        found["server_program"] = node_binary(mcp_server, definition.npm_program, "--mcp-server")
    drives_chromium = definition.chromium or found.get("cli") == "agent-browser"
    if drives_chromium and shutil.which("chromium") is None:
        raise InputError("chromium not found: run `apt-get install -y chromium`")
    if name == "browser-use":
        python = Path(browser_use_python or BROWSER_USE_PYTHON)
        if not os.access(python, os.X_OK):
            raise InputError(
                f"browser-use is not installed ({python} is missing): "
                f"run `{BROWSER_USE_INSTALL}` in {REPO}"
            )
        found["browser_use_python"] = str(python)
    return ServerPrograms(**found)

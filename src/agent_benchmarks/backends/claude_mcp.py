"""Claude Code locked to one browser MCP server: the same brain for every browser stack.

One ``claude -p`` per attempt, the task on stdin, with a private HOME, no built-in tools,
only this backend's MCP server (``--strict-mcp-config``) and only its allowed tools. The
MCP servers (``lightpanda mcp``, our agent-browser wrapper on Chromium or on the Lightpanda
engine, browser-use's server) are described by :class:`McpServerDef`; the tools each one
offers are listed once at the start of a run, through the MCP SDK, minus the tools a fair
comparison excludes. Every tool call outside them marks the row ``contaminated``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from pydantic import BaseModel, ConfigDict

from agent_benchmarks.backends.base import AgentOutcome, PreparedTask, process_failure
from agent_benchmarks.backends.claude_stream import audit_calls, parse_stream
from agent_benchmarks.backends.lightpanda import bundled_binary, check_binary
from agent_benchmarks.cli import positive_int
from agent_benchmarks.errors import InputError
from agent_benchmarks.provenance import default_run_dir
from agent_benchmarks.runner.command import BackendCLI
from agent_benchmarks.runner.process import ProcessResult, ProcessSpec
from agent_benchmarks.suite import SuiteDef

REPO = Path(__file__).resolve().parents[3]
NODE_BIN = REPO / "node_modules" / ".bin"
WRAPPER = REPO / "competitors" / "agent-browser-mcp" / "agent_browser_mcp.py"
SERVER_NAME = "browser"  # tools reach the model as mcp__browser__<tool>
DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TURNS = 60
DEFAULT_MCP_TOOL_TIMEOUT_MS = 120_000

# Claude Code's own tools (2.1.x). ``--tools ""`` already removes them; naming them in
# --disallowed-tools as well keeps them out should a version re-add some by default.
BUILT_IN_TOOLS = (
    "Agent", "Bash", "BashOutput", "CronCreate", "CronDelete", "CronList", "Edit",
    "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep", "KillShell",
    "ListMcpResourcesTool", "LS", "MultiEdit", "NotebookEdit", "NotebookRead", "Read",
    "ReadMcpResourceDirTool", "ReadMcpResourceTool", "ReportFindings", "ScheduleWakeup",
    "SendMessage", "Skill", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput",
    "TaskStop", "TaskUpdate", "TodoWrite", "WebFetch", "WebSearch", "Workflow", "Write",
)  # fmt: skip

# What Claude Code must not phone home or update while measured.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


@dataclass(frozen=True)
class McpServerDef:
    """One browser MCP server: how to start it and which of its tools are out of bounds."""

    name: str
    # (settings, attempt folder) -> the mcpServers entry for Claude Code
    server: Callable[[McpSettings, Path], dict[str, Any]]
    excluded_tools: frozenset[str] = frozenset()
    why_excluded: str = ""
    programs: Callable[[McpSettings], dict[str, str]] = lambda settings: {}


class McpSettings(BaseModel):
    """What defines an MCP run besides the model; stored in the manifest for --resume."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    claude: str
    model: str
    max_turns: int
    auth: str  # "subscription" (ANTHROPIC_API_KEY removed) or "api-key"
    mcp_tool_timeout_ms: int
    lightpanda: str
    agent_browser: str | None = None
    base_url: str | None = None  # ANTHROPIC_BASE_URL (a proxy, or the scripted model)
    allowed_tools: list[str] = []
    excluded_tools: list[str] = []


def _lightpanda_server(settings: McpSettings, workdir: Path) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": settings.lightpanda,
        "args": ["mcp"],
        "env": {"LIGHTPANDA_DISABLE_TELEMETRY": "true"},
    }


def _agent_browser_env(settings: McpSettings, workdir: Path) -> dict[str, str]:
    return {
        "AGENT_BROWSER_BIN": settings.agent_browser or "agent-browser",
        # One daemon per attempt: sessions never share a browser, and the wrapper closes
        # it when Claude Code ends the server.
        "AGENT_BROWSER_SESSION": f"ab-{os.getpid()}-{_short(workdir)}",
        "AGENT_BROWSER_NO_VERSION_CHECK": "1",
        "HOME": str(workdir / "home"),
        # agent-browser's socket path must stay under 103 bytes; HOME may be deep.
        "AGENT_BROWSER_SOCKET_DIR": str(Path("/tmp") / f"abs-{os.getpid()}-{_short(workdir)}"),
    }


def _short(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:10]


def _agent_browser_server(settings: McpSettings, workdir: Path) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(WRAPPER)],
        "env": _agent_browser_env(settings, workdir),
    }


def _agent_browser_lightpanda_server(settings: McpSettings, workdir: Path) -> dict[str, Any]:
    server = _agent_browser_server(settings, workdir)
    server["env"] |= {
        "AGENT_BROWSER_ENGINE": "lightpanda",
        "AGENT_BROWSER_EXECUTABLE_PATH": settings.lightpanda,
    }
    return server


def _agent_browser_programs(settings: McpSettings) -> dict[str, str]:
    binary = settings.agent_browser or "agent-browser"
    version = _version([binary, "--version"])
    return {"agent-browser": version, "chromium": _version(["chromium", "--version"])}


# Tools no stack gets: pictures (text-only comparison), search engines (not the browser),
# script saving and HTTP-only session tools.
_LIGHTPANDA_EXCLUDED = frozenset(
    {"screenshot", "search", "save", "session_new", "session_list", "session_close"}
)

SERVERS: dict[str, McpServerDef] = {
    "lightpanda": McpServerDef(
        "lightpanda",
        _lightpanda_server,
        _LIGHTPANDA_EXCLUDED,
        "screenshot is multimodal; search leaves the browser; save and session_* are not browsing",
    ),
    "agent-browser": McpServerDef(
        "agent-browser", _agent_browser_server, programs=_agent_browser_programs
    ),
    "agent-browser-lightpanda": McpServerDef(
        "agent-browser-lightpanda",
        _agent_browser_lightpanda_server,
        programs=_agent_browser_programs,
    ),
}


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise InputError(f"{argv[0]}: cannot run it ({exc.strerror})") from None
    lines = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not lines:
        raise InputError(f"`{' '.join(argv)}` failed (exit {out.returncode})")
    return lines[0].strip()


async def _list_tools(server: dict[str, Any], cwd: Path) -> list[str]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        env={**os.environ, **server.get("env", {})},
        cwd=str(cwd),
    )
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]


def discover_tools(definition: McpServerDef, settings: McpSettings, scratch: Path) -> list[str]:
    """The tools the server really offers, asked over MCP (also proves it starts)."""
    server = definition.server(settings, scratch)
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    try:
        return anyio.run(_list_tools, server, scratch)
    except Exception as exc:  # any failure to start or list is one clear message
        raise InputError(
            f"--backend {definition.name}: its MCP server did not list its tools "
            f"({type(exc).__name__}: {exc}); check its install (see README)"
        ) from None


class ClaudeMcpBackend:
    model_protocol = "anthropic"

    def __init__(self, config: McpSettings, definition: McpServerDef, versions: dict[str, str]):
        self.config = config
        self.definition = definition
        self.versions = versions
        self.name = f"claude-mcp/{config.backend}"

    def programs(self) -> dict[str, str]:
        return dict(self.versions)

    def settings(self) -> dict[str, Any]:
        return self.config.model_dump()

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        s = self.config
        home = prepared.workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        config = {"mcpServers": {SERVER_NAME: self.definition.server(s, prepared.workdir)}}
        allowed = [f"mcp__{SERVER_NAME}__{tool}" for tool in s.allowed_tools]
        denied = list(BUILT_IN_TOOLS) + [f"mcp__{SERVER_NAME}__{t}" for t in s.excluded_tools]
        argv = [
            s.claude, "-p", "--output-format", "stream-json", "--verbose",
            "--no-session-persistence", "--strict-mcp-config",
            "--mcp-config", json.dumps(config),
            "--tools", "",
            "--disallowed-tools", ",".join(denied),
            "--allowed-tools", ",".join(allowed),
            "--model", s.model,
            "--max-turns", str(s.max_turns),
        ]  # fmt: skip
        if prepared.system_prompt is not None:
            argv += ["--system-prompt", prepared.system_prompt]
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
        if s.auth != "api-key":
            # A subscriber must not be billed through a key that happens to be set.
            env.pop("ANTHROPIC_API_KEY", None)
        env |= QUIET_ENV | {"HOME": str(home), "MCP_TOOL_TIMEOUT": str(s.mcp_tool_timeout_ms)}
        base_url = prepared.base_url or s.base_url
        if base_url is not None:
            base_url = base_url.replace("{task_id}", quote(prepared.task.id, safe=""))
            env["ANTHROPIC_BASE_URL"] = base_url
        env |= prepared.env
        return ProcessSpec(
            argv=argv, env=env, cwd=prepared.workdir, timeout_s=None, stdin_text=prepared.text
        )

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        run = parse_stream(result.stdout)
        audit = audit_calls(run.calls, SERVER_NAME, set(self.config.allowed_tools))
        details: dict[str, Any] = {
            "claude_subtype": run.subtype,
            "num_turns": run.num_turns,
            "claude_total_cost_usd": run.total_cost_usd,
            "permission_denials": run.permission_denials,
            "mcp_servers": run.mcp_servers,
            "contaminated": audit.contaminated,
            "foreign_calls": audit.foreign_calls,
        }
        if run.problems:
            details["stream_problems"] = run.problems
        status, error_class, error = _classify(result, run)
        output = run.result_text or ""
        return AgentOutcome(
            status=status,
            output=output.strip(),
            error_class=error_class,
            error=error,
            trace=run.calls,
            usage=run.usage,
            details=details,
        )


def _classify(result: ProcessResult, run: Any) -> tuple[Any, str | None, str | None]:
    failed = process_failure(result, "claude")
    if failed is not None:
        return failed
    servers = {s.get("name"): s.get("status") for s in run.mcp_servers}
    if servers.get(SERVER_NAME) not in (None, "connected"):
        return "error", "mcp_server", f"the MCP server did not connect: {servers[SERVER_NAME]}"
    if run.subtype == "success" and not run.is_error:
        return ("ok" if (run.result_text or "").strip() else "empty"), None, None
    if run.subtype == "error_max_turns":
        # The agent used its whole budget without answering: a wrong answer, not a fault.
        return "empty", None, None
    tail = (result.stderr.strip().splitlines() or [""])[-1][:300]
    message = "; ".join(run.errors) or run.result_text or tail or f"exit {result.returncode}"
    kind = "model_api" if "API Error" in message or "api_error" in message else "agent_error"
    return "error", kind, f"{run.subtype or 'no result'}: {message[:500]}"


# --- the command line ----------------------------------------------------------------------


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Claude Code + one browser MCP server")
    group.add_argument("--backend", required=True, choices=sorted(SERVERS), help="the server")
    group.add_argument("--claude", type=Path, help="claude binary (default: node_modules/.bin)")
    group.add_argument("--lightpanda", type=Path, help="lightpanda binary (default: PyPI's)")
    group.add_argument(
        "--max-turns", type=positive_int, help=f"model turns per task (default {DEFAULT_MAX_TURNS})"
    )
    group.add_argument(
        "--auth",
        choices=("subscription", "api-key"),
        help="api-key keeps ANTHROPIC_API_KEY; default subscription removes it",
    )
    group.add_argument(
        "--mcp-tool-timeout-ms",
        type=positive_int,
        help=f"MCP tool call timeout (default {DEFAULT_MCP_TOOL_TIMEOUT_MS})",
    )
    group.add_argument("--base-url", help="ANTHROPIC_BASE_URL for Claude Code (a proxy)")


def _node_binary(given: Path | None, name: str, flag: str) -> str:
    if given is not None:
        path = given
    elif (NODE_BIN / name).exists():
        path = NODE_BIN / name
    elif shutil.which(name):
        path = Path(shutil.which(name) or name)
    else:
        raise InputError(f"{name} not found: run `npm ci` in {REPO} (or pass {flag} PATH)")
    if not os.access(path, os.X_OK):
        raise InputError(f"{flag} {path}: not an executable file")
    return str(path)


def build(
    args: argparse.Namespace, suite: SuiteDef, scripted_model: str | None
) -> ClaudeMcpBackend:
    definition = SERVERS[args.backend]
    lightpanda = Path(args.lightpanda) if args.lightpanda else bundled_binary()
    versions = check_binary(lightpanda)
    claude = _node_binary(args.claude, "claude", "--claude")
    versions["claude-code"] = _version([claude, "--version"])
    agent_browser = None
    if args.backend.startswith("agent-browser"):
        agent_browser = _node_binary(None, "agent-browser", "AGENT_BROWSER_BIN")
        if not WRAPPER.exists():
            raise InputError(f"the agent-browser MCP wrapper is missing at {WRAPPER}")
    auth = args.auth or "subscription"
    model = args.model or DEFAULT_MODEL
    if scripted_model is not None:
        # Claude Code warns on model ids it does not know, so the scripted model answers
        # under a real id; the run is labelled scaffold all the same.
        auth = "api-key"  # the scripted server takes any key; the session provides one
    settings = McpSettings(
        backend=args.backend,
        claude=claude,
        model=model,
        max_turns=args.max_turns or DEFAULT_MAX_TURNS,
        auth=auth,
        mcp_tool_timeout_ms=args.mcp_tool_timeout_ms or DEFAULT_MCP_TOOL_TIMEOUT_MS,
        lightpanda=str(lightpanda),
        agent_browser=agent_browser,
        base_url=args.base_url,
    )
    versions |= definition.programs(settings)
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"agent-benchmarks-probe-{os.getpid()}"
    try:
        offered = discover_tools(definition, settings, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    settings.allowed_tools = [t for t in offered if t not in definition.excluded_tools]
    settings.excluded_tools = sorted(definition.excluded_tools & set(offered))
    args.provider = "anthropic"
    args.model = model
    return ClaudeMcpBackend(settings, definition, versions)


CLI = BackendCLI(
    name="claude-mcp",
    add_args=add_args,
    run_flags=("backend", "claude", "lightpanda", "max_turns", "auth", "mcp_tool_timeout_ms"),
    build=build,
    run_dir=lambda suite, args: default_run_dir(suite.name, mcp_backend=args.backend),
    prog_suffix="-mcp-run",
)

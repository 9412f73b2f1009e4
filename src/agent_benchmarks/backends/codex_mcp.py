"""Codex locked to one browser MCP server (``--agent codex`` on every ``*-mcp-run``): the
second brain of the agent x stack matrix, on the same servers, surfaces and answer envelope
as Claude Code (:mod:`agent_benchmarks.backends.claude_mcp`).

One ``codex exec --json`` per attempt, the task on stdin, with a private ``CODEX_HOME`` in
the attempt's temp folder holding the only configuration it reads (``--strict-config``,
``--ignore-rules``, ``--ephemeral``): one model provider (OpenAI's Responses API, or the
scripted model), the browser server as its only MCP server with the surface's excluded
tools in ``disabled_tools`` and its tools approved ahead (no one is there to approve), and
every feature that would give the model another tool turned off (:data:`DISABLED_FEATURES`:
the shell, images, web search, sub-agents, Codex's own browser, plugins...). What Codex
still offers and cannot be turned off is listed in :data:`CODEX_BUILT_INS` and recorded.

The audit reads the JSON events: a call that ran outside the server's allowed tools and
those built-ins marks the row ``contaminated``; a call Codex refused (a tool it does not
offer: ``unsupported call``, in its log) is listed in ``refused_calls``.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import tomli_w
from pydantic import BaseModel, ConfigDict

from agent_benchmarks.backends.base import (
    AgentOutcome,
    BuildRequest,
    PreparedTask,
    message_with_attachments,
    process_failure,
)
from agent_benchmarks.backends.codex_stream import (
    CodexRun,
    RolloutCall,
    ordered_calls,
    parse_events,
    read_rollout,
    unsupported_calls,
)
from agent_benchmarks.backends.lightpanda import bundled_binary, check_binary
from agent_benchmarks.backends.mcp_options import (
    DEFAULT_MCP_TOOL_TIMEOUT_MS,
    McpOptions,
    surface_and_turns,
)
from agent_benchmarks.backends.mcp_servers import (
    SEARCH_LOG,
    SERVER_NAME,
    SERVERS,
    McpServerDef,
    browser_server,
    check_tavily_key,
    find_server_programs,
    stack_roles,
    tool_surface,
    web_search_server,
)
from agent_benchmarks.backends.programs import node_binary, program_version
from agent_benchmarks.common.environ import current as current_environment
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.process import MARKER_ENV, ProcessResult, ProcessSpec
from agent_benchmarks.isolation.resources import AGENT, RoleRule
from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.search import (
    BASE_URL_ENV,
    DEFAULT_SEARCH,
    KEY_ENV,
    MCP_TOOL_NAME,
    search_settings,
    summarise_calls,
    summarise_log,
)
from agent_benchmarks.search import SERVER_NAME as SEARCH_SERVER_NAME

# Codex: npm's node shim, and the native binary it runs (the agent's loop).
CODEX_ROLE = RoleRule(AGENT, args=r"(^|/)codex(\.js)?\s+exec(\s|$)")

OPENAI_BASE_URL = "https://api.openai.com/v1"
KEY_VAR = "OPENAI_API_KEY"
PROVIDER = "agent-benchmarks"  # the one model provider the attempt's config defines
CONFIG_COPY = "codex-config.toml"  # in the attempt folder: the configuration Codex ran with
REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")
# Features of Codex 0.169.0 that would give the model a tool beyond the browser server's.
DISABLED_FEATURES = (
    "shell_tool", "unified_exec", "view_image", "image_generation", "goals", "apps",
    "plugins", "hooks", "tool_suggest", "skill_search", "memories", "sleep_tool",
    "browser_use", "browser_use_external", "computer_use", "in_app_browser",
)  # fmt: skip
# What Codex 0.169.0 offers whatever the configuration: MCP resource reading (of the one
# configured server) and request_user_input (which answers that no user is there). Audited
# as allowed, as Claude Code's ToolSearch is.
CODEX_BUILT_INS = (
    "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
    "request_user_input",
)  # fmt: skip
_SERVER_FAILED = "required MCP servers failed to initialize"
REQUEST_RETRIES = 4  # Codex 0.169.0's own default, written down
# What Codex 0.169.0 prints once its request retries (about 3 s) could not reach the model:
# it then waits for the network without end (5, 10, 20 s... apart, whatever
# stream_max_retries says), so the attempt is ended there, a model_api error.
_UNREACHABLE = r"Reconnecting\.\.\. waiting for network[^\"\n]*"
# Where the attempt's rollout is kept: Codex's sessions folder (in its private CODEX_HOME)
# is a link to this folder of the attempt's, so that it comes back from a cluster node
# with the attempt; once read, the rollout is the attempt folder's ROLLOUT file.
SESSIONS = "codex-sessions"
ROLLOUT = "codex-rollout.jsonl"
_REFUSED_WHY = "unsupported call: Codex offers no such tool"
_BUILT_IN_NAMES = frozenset(f"mcp__codex__{t}" for t in CODEX_BUILT_INS) | set(CODEX_BUILT_INS)


class CodexSettings(BaseModel):
    """What defines a Codex MCP run besides the model; stored in the manifest."""

    model_config = ConfigDict(extra="forbid")

    agent: str = "codex"
    backend: str
    surface: str
    codex: str
    model: str
    reasoning_effort: str | None = None  # None: the model's default
    mcp_tool_timeout_ms: int
    lightpanda: str
    agent_browser: str | None = None
    browser_use_python: str | None = None
    server_program: str | None = None
    cli: str | None = None
    base_url: str | None = None  # the Responses API's base URL (None: OpenAI's)
    allowed_tools: list[str] = []
    excluded_tools: list[str] = []
    built_in_tools: list[str] = list(CODEX_BUILT_INS)
    disabled_features: list[str] = list(DISABLED_FEATURES)
    search_setting: str = DEFAULT_SEARCH
    # Where the web_search server reaches Tavily (a stand-in); None: Tavily's own API.
    search_base_url: str | None = None


def installed_versions(settings: CodexSettings) -> dict[str, str]:
    versions = check_binary(Path(settings.lightpanda))
    versions["codex"] = program_version([settings.codex, "--version"])
    return versions | SERVERS[settings.backend].programs(settings)


def _mcp_entry(
    settings: CodexSettings, server: dict[str, Any], passed: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A server's table in Codex's config."""
    return {
        "command": server["command"],
        "args": server["args"],
        "env": server.get("env", {}),
        # Codex hands a server only a few variables of its own environment; the attempt's
        # marker must reach the server and its browser so that nothing of it survives (and
        # a key it needs is passed by name, never written).
        "env_vars": [MARKER_ENV, *passed],
        # Required: Codex 0.169.0 otherwise sends the first turn without waiting for the
        # server (a server slower to start than about a second is simply not there), and
        # a server that fails to start ends the attempt instead of leaving a tool-less run.
        "required": True,
        "startup_timeout_sec": 60,
        "tool_timeout_sec": settings.mcp_tool_timeout_ms / 1000,
        "default_tools_approval_mode": "approve",  # exec has no one to ask
    }


def codex_config(
    settings: CodexSettings,
    server: dict[str, Any],
    base_url: str,
    instructions: str | None,
    search: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The attempt's whole config.toml, as a mapping: the browser server, and with
    ``search`` the web_search server beside it."""
    browser = _mcp_entry(settings, server) | {"disabled_tools": settings.excluded_tools}
    servers = {SERVER_NAME: browser}
    if search is not None:
        servers[SEARCH_SERVER_NAME] = _mcp_entry(settings, search, (KEY_ENV,))
    config: dict[str, Any] = {
        "model": settings.model,
        "model_provider": PROVIDER,
        "approval_policy": "never",
        "sandbox_mode": "read-only",
        "web_search": "disabled",
        "check_for_update_on_startup": False,
        "features": dict.fromkeys(settings.disabled_features, False),
        "agents": {"enabled": False},
        "analytics": {"enabled": False},
        "history": {"persistence": "none"},
        "model_providers": {
            PROVIDER: {
                "name": PROVIDER,
                "base_url": base_url,
                "env_key": KEY_VAR,
                "wire_api": "responses",
                # Codex retries a failed request 4 times (about 3 s); a stream that drops
                # mid-reply it reconnects up to 5 times, as it would for any user.
                "request_max_retries": REQUEST_RETRIES,
            }
        },
        "mcp_servers": servers,
    }
    if settings.reasoning_effort is not None:
        config["model_reasoning_effort"] = settings.reasoning_effort
    if instructions is not None:
        config["developer_instructions"] = instructions
    return config


class CodexMcpBackend:
    model_protocol = "openai"

    def __init__(self, config: CodexSettings, definition: McpServerDef, versions: dict[str, str]):
        self.config = config
        self.definition = definition
        self.versions = versions
        self.name = f"codex-mcp/{definition.stack(config)}"
        if definition.routes_web(config):
            self.web_routing = definition.web_routing
            self.web_nss_db = definition.web_nss_db

    def programs(self) -> dict[str, str]:
        return dict(self.versions)

    def program_probe(self) -> Callable[[], dict[str, str]]:
        return functools.partial(installed_versions, self.config)

    def settings(self) -> dict[str, Any]:
        # Codex has no turn, token or dollar cap of its own: None declares each absent.
        budgets = {"max_turns": None, "max_tokens": None, "max_cost_usd": None}
        return (
            self.config.model_dump()
            | {"budgets": budgets}
            | search_settings(self.config.search_setting, self.config.search_base_url)
        )

    def meter_problem(self) -> str | None:
        return None  # Codex takes any provider base_url

    def model_endpoint(self, prepared: PreparedTask) -> str:
        base_url = prepared.base_url or self.config.base_url or OPENAI_BASE_URL
        return base_url.replace("{task_id}", quote(prepared.task.id, safe=""))

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        s = self.config
        server = browser_server(self.definition, s, prepared)
        (prepared.workdir / "home").mkdir(parents=True, exist_ok=True)
        base_url = self.model_endpoint(prepared)
        search = None
        if s.search_setting == "tavily":
            search = web_search_server(
                prepared.workdir / SEARCH_LOG, prepared.block_urls, s.search_base_url, prepared.web
            )
        config = tomli_w.dumps(codex_config(s, server, base_url, prepared.system_prompt, search))
        # Codex's home (its config, logs and state databases) lives in the attempt's temp
        # folder, removed when the attempt ends; the folder keeps a copy of the config.
        codex_home = prepared.tmpdir / "codex-home"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(config, encoding="utf-8")
        (prepared.workdir / CONFIG_COPY).write_text(config, encoding="utf-8")
        # Not --ephemeral: Codex's rollout has what its events leave out (the refused
        # calls with their arguments, in order; each MCP call's duration).
        (prepared.workdir / SESSIONS).mkdir(exist_ok=True)
        (codex_home / "sessions").symlink_to(prepared.workdir / SESSIONS)
        argv = [
            s.codex, "exec", "--json", "--skip-git-repo-check", "--strict-config",
            "--ignore-rules", "--cd", str(prepared.workdir), "--model", s.model, "-",
        ]  # fmt: skip
        env = {k: v for k, v in current_environment().items() if not k.startswith("CODEX_")}
        env |= {"CODEX_HOME": str(codex_home), "HOME": str(prepared.workdir / "home")}
        env |= prepared.env
        message = message_with_attachments(prepared)
        return ProcessSpec(
            argv=argv,
            env=env,
            cwd=prepared.workdir,
            timeout_s=None,
            stdin_text=message,
            roles=stack_roles(CODEX_ROLE, self.definition, s),
            give_up_on=_UNREACHABLE,
        )

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        run = parse_events(result.stdout)
        allowed = {f"mcp__{SERVER_NAME}__{tool}" for tool in self.config.allowed_tools}
        if self.config.search_setting == "tavily":
            allowed.add(MCP_TOOL_NAME)
        foreign = [
            {"name": c.name, "args": c.args}
            for c in run.calls
            if c.name not in allowed and c.name not in _BUILT_IN_NAMES
        ]
        rollout = _keep_rollout(prepared.workdir)
        if rollout is not None:
            trace = ordered_calls(run.calls, rollout, _REFUSED_WHY)
            refused = [
                {"name": c.name, "args": c.args, "why": _REFUSED_WHY} for c in rollout if c.refused
            ]
        else:  # no rollout (Codex killed before writing one): the names from its log
            refused = [
                {"name": name, "args": {}, "why": _REFUSED_WHY}
                for name in unsupported_calls(result.stderr)
            ]
            trace = [*run.calls, *(ToolCall(name=r["name"], error=_REFUSED_WHY) for r in refused)]
        others = self.definition.refusals(prepared.workdir)
        refused += others
        trace += [
            ToolCall(name=r["name"], args=r["args"], error=r["why"])
            for r in others
            if r["name"] != f"mcp__{SERVER_NAME}__shell"  # the shell's are in the trace
        ]
        details: dict[str, Any] = {
            "model_id": self.config.model,
            "codex_thread": run.thread_id,
            # Each MCP call's latency is Codex's own (the rollout's duration); a refused
            # call never ran and has none; without a rollout, calls are in completion
            # order, refused ones last and without their arguments.
            "call_order": "as made" if rollout is not None else "completed, refused last",
            "codex_notices": run.notices,
            "contaminated": bool(foreign),
            "foreign_calls": foreign,
            "refused_calls": refused,
            "n_refused_calls": len(refused),
        }
        if self.config.search_setting == "tavily":
            log = summarise_log(prepared.workdir / SEARCH_LOG)
            details["search"] = log if log is not None else summarise_calls([])
        if run.problems:
            details["stream_problems"] = run.problems
        status, error_class, error = _classify(result, run)
        return AgentOutcome(
            status=status,
            output=(run.answer or "").strip(),
            error_class=error_class,
            error=error,
            trace=trace,
            usage=run.usage,
            details=details,
        )


def _keep_rollout(workdir: Path) -> list[RolloutCall] | None:
    """The attempt's rollout, read and kept as ``ROLLOUT`` in the attempt folder (Codex's
    dated folders around it removed); None when Codex wrote none."""
    sessions = workdir / SESSIONS
    found = sorted(sessions.rglob("rollout-*.jsonl")) if sessions.is_dir() else []
    if found:
        found[-1].replace(workdir / ROLLOUT)
    shutil.rmtree(sessions, ignore_errors=True)
    if not (workdir / ROLLOUT).is_file():
        return None
    return read_rollout(workdir / ROLLOUT)


# The words of Codex's failures that come from reaching the model (its HTTP client's
# errors, the stream, the API's answers): a model_api error, an infrastructure failure.
_MODEL_API_WORDS = (
    "http", "stream", "status", "rate limit", "connection", "error sending request",
    "timed out", "timeout",
)  # fmt: skip


def _classify(result: ProcessResult, run: CodexRun) -> tuple[Any, str | None, str | None]:
    if result.gave_up is not None and not result.timed_out:
        return "error", "model_api", f"Codex could not reach the model: {result.gave_up}"
    failed = process_failure(result, "codex")
    if failed is not None:
        return failed
    if run.failure is not None:
        message = run.failure[:500]
        api = any(w in message.lower() for w in _MODEL_API_WORDS)
        return "error", "model_api" if api else "agent_error", message
    if _SERVER_FAILED in result.stderr:
        # From Codex's own words on: the line starts with a log prefix and repeats them.
        said = result.stderr[result.stderr.index(_SERVER_FAILED) :].splitlines()[0]
        return "error", "mcp_server", said[:500]
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or [""])[-1][:300]
        return "error", "agent_error", f"codex exited {result.returncode}: {tail}"
    return ("ok" if (run.answer or "").strip() else "empty"), None, None


def _codex_binary(given: Path | None) -> str:
    return node_binary(given, "codex", "--codex")


def codex_surface(
    request: BuildRequest,
) -> tuple[CodexSettings, McpServerDef, dict[str, list[str]]]:
    """The settings, with the tools the server really offers sorted into allowed and
    excluded by the surface; each offered tool's arguments. Codex's own flags are checked
    here, and Claude Code's refused, before anything starts."""
    spec, options = request.spec, request.options
    assert isinstance(options, McpOptions)
    for flag, value in (
        ("--max-turns", options.max_turns),
        ("--max-budget-usd", options.max_budget_usd),
        ("--claude", options.claude),
    ):
        if value is not None:
            raise InputError(f"{flag}: Claude Code's; --agent codex has no such setting")
    if options.auth == "subscription":
        raise InputError(
            "--auth subscription: --agent codex runs on an API key only (OPENAI_API_KEY)"
        )
    if options.search == "tavily":  # before the servers start, to list tools
        check_tavily_key(replaying=request.spec.web == "replay")
    scripted = request.scripted_model
    definition = SERVERS[options.backend]
    surface, _ = surface_and_turns(options, request.resumed_settings)
    lightpanda = Path(options.lightpanda) if options.lightpanda else bundled_binary()
    check_binary(lightpanda)
    programs = find_server_programs(definition, **options.server_program_flags())
    settings = CodexSettings(
        backend=options.backend,
        surface=surface,
        codex=_codex_binary(options.codex),
        model=spec.model or scripted or "",
        reasoning_effort=options.reasoning_effort,
        mcp_tool_timeout_ms=options.mcp_tool_timeout_ms or DEFAULT_MCP_TOOL_TIMEOUT_MS,
        lightpanda=str(lightpanda),
        agent_browser=programs.agent_browser,
        browser_use_python=programs.browser_use_python,
        server_program=programs.server_program,
        cli=programs.cli,
        base_url=options.base_url,
        search_setting=options.search or DEFAULT_SEARCH,
    )
    if settings.search_setting == "tavily":
        settings.search_base_url = os.environ.get(BASE_URL_ENV) or None
    tools = tool_surface(definition, settings, settings.search_setting, settings.search_base_url)
    settings.allowed_tools, settings.excluded_tools = tools.allowed, tools.excluded
    return settings, definition, tools.offered


def build_codex(request: BuildRequest) -> CodexMcpBackend:
    """``--agent codex``: Codex on the server, the settings it ran with written back."""
    spec, options = request.spec, request.options
    if request.scripted_model is None and not spec.model:
        raise InputError(
            "--agent codex needs --model (an OpenAI model id, such as gpt-5.2): a run must "
            "say which model it measured, and Codex's own default changes between releases"
        )
    if request.scripted_model is None and not spec.scaffold and not os.environ.get(KEY_VAR):
        raise InputError(f"--agent codex needs {KEY_VAR} in the environment")
    settings, definition, _ = codex_surface(request)
    if request.scripted_model is None:
        spec.provider = "openai"
    spec.model = settings.model
    options.surface, options.search = settings.surface, settings.search_setting  # type: ignore[attr-defined]
    return CodexMcpBackend(settings, definition, installed_versions(settings))

"""Claude Code locked to one browser MCP server: the same brain for every browser stack.

One ``claude -p`` per attempt, the task on stdin, with a private HOME, only this backend's
MCP server (``--strict-mcp-config``), only its allowed tools and only the built-in tools the
run's tool surface offers. The MCP servers (``lightpanda mcp``, our agent-browser wrapper on
Chromium or on the Lightpanda engine, browser-use's server) are described by
:class:`McpServerDef`; the tools each one offers are listed once at the start of a run,
through the MCP SDK, minus the tools the surface excludes. Every tool call outside them
that ran marks the row ``contaminated``; one Claude Code refused (nothing ran) is listed in
the row's ``refused_calls`` instead.

Two surfaces (``--surface``, recorded in the manifest): ``upstream`` (default) is the one
lightpanda-io/agent-benchmarks published its numbers with: its per-server allow-lists
(Lightpanda's ``search`` included), its agent-browser wrapper's tools and replies, and the
built-in tools its deny-list left to Claude Code (TodoWrite, LS). ``strict`` is narrower:
no ``search``, no built-in tool, the wrapper's snapshot interactive and compact by default.

Search (``--search``, recorded in the manifest): ``native`` (default) leaves the stack's own
search as the surface has it; ``tavily`` adds this project's ``web_search`` server
(:mod:`agent_benchmarks.search.server`) as a second MCP server, the same for every backend,
and withholds the stack's own search tools so exactly one search exists; ``none`` withholds
them and adds nothing.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from agent_benchmarks.backends.base import (
    AgentOutcome,
    BuildRequest,
    PreparedTask,
    message_with_attachments,
    process_failure,
)
from agent_benchmarks.backends.claude_stream import ClaudeRun, audit_calls, parse_stream
from agent_benchmarks.backends.lightpanda import bundled_binary, check_binary
from agent_benchmarks.backends.mcp_options import (
    DEFAULT_MCP_TOOL_TIMEOUT_MS,
    DEFAULT_SURFACE,
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
from agent_benchmarks.common.redact import add_secret, secrets_in_json
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec
from agent_benchmarks.isolation.resources import AGENT, RoleRule
from agent_benchmarks.records.pricing import PriceTable, load_price_table
from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.search import (
    BASE_URL_ENV,
    DEFAULT_SEARCH,
    MCP_TOOL_NAME,
    search_settings,
    summarise_calls,
    summarise_log,
)
from agent_benchmarks.search import SERVER_NAME as SEARCH_SERVER_NAME

# Claude Code's processes (its native binary, and a child of its own) are the agent.
CLAUDE_CODE_ROLE = RoleRule(AGENT, exe=r"^claude")

WEB_SEARCH_TOOL = MCP_TOOL_NAME  # --search tavily's one search
ANTHROPIC_API = "https://api.anthropic.com"  # where Claude Code calls its model by default
# Upstream's defaults: its MCP runner passes the alias `sonnet`, sets no turn cap and gives
# each task 600 s.
DEFAULT_MODEL = "sonnet"
# The names Claude Code 2.1.330 takes as aliases; it resolves them itself when it starts,
# and each attempt's stream names the model id it ran (rows: details.model_id).
CLAUDE_CODE_ALIASES = frozenset(
    {"default", "best", "sonnet", "opus", "haiku", "fable", "opusplan"}
    | {"sonnet[1m]", "opus[1m]", "fable[1m]"}
)

# Claude Code's own tools (2.1.x). ``--tools`` names the few a surface offers (or none);
# denying the rest in --disallowed-tools as well keeps them out should a version re-add some
# by default.
BUILT_IN_TOOLS = (
    "Agent", "Bash", "BashOutput", "CronCreate", "CronDelete", "CronList", "Edit",
    "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep", "KillShell",
    "ListMcpResourcesTool", "LS", "MultiEdit", "NotebookEdit", "NotebookRead", "Read",
    "ReadMcpResourceDirTool", "ReadMcpResourceTool", "ReportFindings", "ScheduleWakeup",
    "SendMessage", "Skill", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput",
    "TaskStop", "TaskUpdate", "TodoWrite", "WebFetch", "WebSearch", "Workflow", "Write",
)  # fmt: skip

# The built-in tools upstream's deny-list (its _mcp.py) leaves to Claude Code. Upstream ran
# Claude Code's default tool set minus that list; on versions whose default set had them,
# TodoWrite and LS were what remained. Claude Code 2.1.330 has neither (``--tools
# TodoWrite,LS`` offers nothing): they are offered by name, and audited as allowed should
# a version have them. Upstream's list would leave 2.1.330's newer tools (Workflow,
# SendMessage, ListAgents, ReportFindings) as well; those did not exist when it was written
# and are denied here.
UPSTREAM_BUILT_INS = ("TodoWrite", "LS")
SURFACE_BUILT_INS: dict[str, tuple[str, ...]] = {"upstream": UPSTREAM_BUILT_INS, "strict": ()}
# What the requests of the pinned Claude Code (2.1.330) offer the model beside the MCP
# tools, on either surface (seen by the scripted model: tests/e2e/test_mcp_runner.py): no
# built-in tool, and one reserved name, which it describes as "Reserved placeholder that
# keeps deferred tool loading active; never call this tool."
PINNED_CLAUDE_CODE = "2.1.330"
SENT_BESIDE_MCP = ("DeferredToolPlaceholder",)

# What Claude Code must not phone home or update while measured.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


class McpSettings(BaseModel):
    """What defines an MCP run besides the model; stored in the manifest for --resume."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    surface: str = DEFAULT_SURFACE  # the tool surface (SURFACES)
    claude: str
    model: str
    max_turns: int | None = None  # None: no --max-turns (upstream's default)
    auth: str  # "subscription" (ANTHROPIC_API_KEY removed) or "api-key"
    mcp_tool_timeout_ms: int
    max_budget_usd: float | None = None  # Claude Code's own per-task spending cap
    lightpanda: str
    agent_browser: str | None = None
    browser_use_python: str | None = None
    server_program: str | None = None  # the MCP server's npm program, or --cli's program
    cli: str | None = None  # --backend cli: the program, as the agent names it
    base_url: str | None = None  # ANTHROPIC_BASE_URL (a proxy, or the scripted model)
    allowed_tools: list[str] = []
    excluded_tools: list[str] = []
    built_in_tools: list[str] = []  # Claude Code's own tools offered (--tools)
    # How a subscriber's login reaches the attempt: "oauth-token" (CLAUDE_CODE_OAUTH_TOKEN
    # passed through) or "credentials-file" (~/.claude/.credentials.json copied). Never the value.
    login: str | None = None
    search_setting: str = DEFAULT_SEARCH  # --search (SEARCH_SETTINGS)
    # Where the web_search server reaches Tavily (a stand-in); None: Tavily's own API.
    search_base_url: str | None = None


def installed_versions(settings: McpSettings) -> dict[str, str]:
    """The versions of every program an attempt with ``settings`` runs, on this machine."""
    versions = check_binary(Path(settings.lightpanda))
    versions["claude-code"] = program_version([settings.claude, "--version"])
    return versions | SERVERS[settings.backend].programs(settings)


class ClaudeMcpBackend:
    model_protocol = "anthropic"
    prices_own_rows = True  # price_run: the price table, Claude Code's total, or none

    def __init__(
        self,
        config: McpSettings,
        definition: McpServerDef,
        versions: dict[str, str],
        prices: PriceTable | None = None,
    ):
        self.config = config
        self.definition = definition
        self.versions = versions
        # None: a scripted model's run, never priced (by the engine either: see base.py).
        self.prices = prices
        self.name = f"claude-mcp/{definition.stack(config)}"
        if definition.routes_web(config):
            self.web_routing = definition.web_routing
            self.web_nss_db = definition.web_nss_db
        self._model_ids: set[str] = set()  # the ids the attempts' streams named
        self._lock = threading.Lock()

    def programs(self) -> dict[str, str]:
        return dict(self.versions)

    def program_probe(self) -> Callable[[], dict[str, str]]:
        """What :meth:`programs` says, found again on another machine (a cluster node)."""
        return functools.partial(installed_versions, self.config)

    def settings(self) -> dict[str, Any]:
        # Claude Code caps turns (when asked) and dollars (when asked); it has no token
        # cap. None declares a cap absent.
        budgets = {
            "max_turns": self.config.max_turns,
            "max_tokens": None,
            "max_cost_usd": self.config.max_budget_usd,
        }
        return (
            self.config.model_dump()
            | {"budgets": budgets, "model_is_alias": self.config.model in CLAUDE_CODE_ALIASES}
            | search_settings(self.config.search_setting, self.config.search_base_url)
        )

    def learned_settings(self) -> dict[str, Any]:
        """What the run showed that the manifest could not say at its start: the model
        ids Claude Code ran under (an alias such as ``sonnet``, resolved)."""
        with self._lock:
            return {"resolved_models": sorted(self._model_ids)} if self._model_ids else {}

    def meter_problem(self) -> str | None:
        return None  # Claude Code takes any ANTHROPIC_BASE_URL

    def model_endpoint(self, prepared: PreparedTask) -> str:
        base_url = prepared.base_url or self.config.base_url or ANTHROPIC_API
        return base_url.replace("{task_id}", quote(prepared.task.id, safe=""))

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        s = self.config
        home = prepared.workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        server = browser_server(self.definition, s, prepared)
        config = {"mcpServers": {SERVER_NAME: server}}
        allowed = [f"mcp__{SERVER_NAME}__{tool}" for tool in s.allowed_tools]
        if s.search_setting == "tavily":
            config["mcpServers"][SEARCH_SERVER_NAME] = web_search_server(
                prepared.workdir / SEARCH_LOG, prepared.block_urls, s.search_base_url, prepared.web
            )
            allowed.append(WEB_SEARCH_TOOL)
        denied = [t for t in BUILT_IN_TOOLS if t not in s.built_in_tools]
        denied += [f"mcp__{SERVER_NAME}__{t}" for t in s.excluded_tools]
        argv = [
            s.claude, "-p", "--output-format", "stream-json", "--verbose",
            "--no-session-persistence", "--strict-mcp-config",
            "--mcp-config", json.dumps(config),
            "--tools", ",".join(s.built_in_tools),
            "--disallowed-tools", ",".join(denied),
            "--allowed-tools", ",".join([*allowed, *s.built_in_tools]),
            "--model", s.model,
        ]  # fmt: skip
        if s.max_turns is not None:
            argv += ["--max-turns", str(s.max_turns)]
        if s.max_budget_usd is not None:
            argv += ["--max-budget-usd", f"{s.max_budget_usd:g}"]
        if prepared.system_prompt is not None:
            argv += ["--system-prompt", prepared.system_prompt]
        env = {k: v for k, v in current_environment().items() if not k.startswith("CLAUDE_")}
        if s.login == "oauth-token" and os.environ.get(OAUTH_TOKEN_VAR):
            env[OAUTH_TOKEN_VAR] = os.environ[OAUTH_TOKEN_VAR]
        elif s.login == "credentials-file":
            # The login file only, in a HOME inside the attempt's temp folder (removed when
            # the attempt ends), so the credential is never written into the run folder.
            home = prepared.tmpdir / "claude-home"
            _copy_login(home)
        if s.auth != "api-key":
            # A subscriber must not be billed through a key that happens to be set.
            env.pop("ANTHROPIC_API_KEY", None)
        env |= QUIET_ENV | {"HOME": str(home), "MCP_TOOL_TIMEOUT": str(s.mcp_tool_timeout_ms)}
        base_url = prepared.base_url or s.base_url
        if base_url is not None:
            base_url = base_url.replace("{task_id}", quote(prepared.task.id, safe=""))
            env["ANTHROPIC_BASE_URL"] = base_url
        env |= prepared.env
        message = message_with_attachments(prepared)
        return ProcessSpec(
            argv=argv,
            env=env,
            cwd=prepared.workdir,
            timeout_s=None,
            stdin_text=message,
            roles=stack_roles(CLAUDE_CODE_ROLE, self.definition, s),
        )

    def _search_tools(self) -> set[str]:
        """Tools outside the browser server that the run offers: web_search with tavily."""
        return {WEB_SEARCH_TOOL} if self.config.search_setting == "tavily" else set()

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        run = parse_stream(result.stdout)
        audit = audit_calls(
            run.calls,
            SERVER_NAME,
            set(self.config.allowed_tools),
            built_ins=set(self.config.built_in_tools) | self._search_tools(),
            refusals=run.refusals,
        )
        refused = in_call_order(
            run.calls, audit.refused_calls + self.definition.refusals(prepared.workdir)
        )
        if run.model is not None:
            with self._lock:
                self._model_ids.add(run.model)
        cost, cost_source = price_run(run, self.prices) if self.prices else (None, None)
        details: dict[str, Any] = {
            "model_id": run.model,
            "cost_source": cost_source,
            "claude_subtype": run.subtype,
            "num_turns": run.num_turns,
            "claude_total_cost_usd": run.total_cost_usd,
            "permission_denials": run.permission_denials,
            "mcp_servers": run.mcp_servers,
            "budget_exhausted": run.subtype if run.subtype in BUDGET_SUBTYPES else None,
            "contaminated": audit.contaminated,
            "foreign_calls": audit.foreign_calls,
            "refused_calls": refused,
            "n_refused_calls": len(refused),
        }
        if self.config.search_setting == "tavily":
            log = summarise_log(prepared.workdir / SEARCH_LOG)
            details["search"] = log if log is not None else summarise_calls([])
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
            usage=run.usage.model_copy(update={"cost_usd": cost}),
            details=details,
        )


def in_call_order(calls: list[ToolCall], refused: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The refused calls (those Claude Code refused, and those the server itself refused)
    in the order the agent made them: each matched to its call in the trace."""
    used: set[int] = set()

    def position(entry: dict[str, Any]) -> int:
        for index, made in enumerate(calls):
            if index not in used and made.name == entry["name"] and made.args == entry["args"]:
                used.add(index)
                return index
        return len(calls)  # not in the trace (a cut stream): last, in the order given

    return [entry for _, entry in sorted(((position(e), e) for e in refused), key=lambda p: p[0])]


def price_run(run: ClaudeRun, prices: PriceTable) -> tuple[float | None, str | None]:
    """The attempt's cost and where it came from: the price table, for the model ids
    Claude Code ran (each one's own counts when the result lists them per model), as
    ``price-table:<ids>``; else Claude Code's own total, ``claude-code``; else unknown."""
    by_model = run.model_usage or ({run.model: run.usage} if run.model else {})
    costs = {model: prices.cost(usage, model) for model, usage in by_model.items()}
    if costs and None not in costs.values():
        total = sum(cost for cost in costs.values() if cost is not None)
        return round(total, 6), "price-table:" + ",".join(sorted(costs))
    if run.total_cost_usd is not None:
        return run.total_cost_usd, "claude-code"
    return None, None


# Claude Code's result subtypes for a spent budget (--max-turns, --max-budget-usd).
BUDGET_SUBTYPES = frozenset({"error_max_turns", "error_max_budget_usd"})


def _classify(result: ProcessResult, run: Any) -> tuple[Any, str | None, str | None]:
    failed = process_failure(result, "claude")
    if failed is not None:
        return failed
    servers = {s.get("name"): s.get("status") for s in run.mcp_servers}
    for name in (SERVER_NAME, SEARCH_SERVER_NAME):
        if servers.get(name) not in (None, "connected"):
            return "error", "mcp_server", f"the MCP server {name} did not connect: {servers[name]}"
    if run.subtype == "success" and not run.is_error:
        return ("ok" if (run.result_text or "").strip() else "empty"), None, None
    if run.subtype in BUDGET_SUBTYPES:
        # The agent used its whole budget without answering: a wrong answer, not a fault.
        return "budget", None, None
    tail = (result.stderr.strip().splitlines() or [""])[-1][:300]
    message = "; ".join(run.errors) or run.result_text or tail or f"exit {result.returncode}"
    kind = "model_api" if "API Error" in message or "api_error" in message else "agent_error"
    return "error", kind, f"{run.subtype or 'no result'}: {message[:500]}"


OAUTH_TOKEN_VAR = "CLAUDE_CODE_OAUTH_TOKEN"


def _credentials_file() -> Path:
    return Path.home() / ".claude" / ".credentials.json"


def subscription_login() -> str:
    """How the user's Claude login reaches each attempt; one clear error if there is none."""
    if os.environ.get(OAUTH_TOKEN_VAR):
        return "oauth-token"
    if _credentials_file().is_file():
        # Read now, so that a file with no login in it is one error before the first task.
        _mask_login(_credentials_file().read_bytes())
        return "credentials-file"
    raise InputError(
        f"--auth subscription: no Claude login found (neither {OAUTH_TOKEN_VAR} nor "
        f"{_credentials_file()}); run `claude` and /login, or `claude setup-token` and "
        f"export {OAUTH_TOKEN_VAR}, or use --auth api-key with ANTHROPIC_API_KEY"
    )


def _mask_login(raw: bytes) -> None:
    """Add the tokens of a credentials file's content to what the harness masks in all it
    writes (no environment variable names them); InputError when it holds none."""
    path = _credentials_file()
    try:
        tokens = secrets_in_json(json.loads(raw))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a Claude credentials file (not JSON: {exc})") from None
    if not tokens:
        raise InputError(
            f"{path}: no token in it (expected claudeAiOauth.accessToken); run `claude` "
            "and /login again"
        )
    for token in tokens:
        add_secret(token)


def _copy_login(home: Path) -> None:
    """Copy the credentials file, and nothing else of the user's ~/.claude, into ``home``.
    Read afresh for each attempt (Claude Code may have refreshed the token meanwhile), so
    its tokens are masked again."""
    raw = _credentials_file().read_bytes()
    _mask_login(raw)
    target = home / ".claude" / ".credentials.json"
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(raw)
    os.chmod(target, 0o600)


def build_claude(request: BuildRequest) -> ClaudeMcpBackend:
    """``--agent claude`` (the default): Claude Code on the server."""
    spec, options, scripted_model = request.spec, request.options, request.scripted_model
    assert isinstance(options, McpOptions)
    for flag, value in (
        ("--codex", options.codex),
        ("--reasoning-effort", options.reasoning_effort),
    ):
        if value is not None:
            raise InputError(f"{flag}: for --agent codex only")
    if options.search == "tavily":  # before the servers start, to list tools
        check_tavily_key(replaying=spec.web == "replay")
    settings, definition, versions, _ = claude_surface(request)
    auth = options.auth or "subscription"
    model = spec.model or DEFAULT_MODEL
    if scripted_model is not None:
        # Claude Code warns on model ids it does not know, so the scripted model answers
        # under a real id; the run is labelled scaffold all the same.
        auth = "api-key"  # the scripted server takes any key; the session provides one
    settings.auth, settings.model = auth, model
    if auth == "subscription" and scripted_model is None:
        settings.login = subscription_login()
    # What the run uses, defaults included, is written back: the run stores it, so that a
    # resume keeps it. A scripted run keeps no provider: its resume plays the model again.
    if scripted_model is None:
        spec.provider = "anthropic"
    spec.model = model
    options.search = settings.search_setting
    options.surface, options.max_turns = settings.surface, settings.max_turns
    scaffold = scripted_model is not None or bool(spec.scaffold)
    prices = None if scaffold else load_price_table(Path(spec.prices) if spec.prices else None)
    return ClaudeMcpBackend(settings, definition, versions, prices)


def claude_surface(
    request: BuildRequest,
) -> tuple[McpSettings, McpServerDef, dict[str, str], dict[str, list[str]]]:
    """The settings, with the tools the server really offers sorted into allowed and
    excluded by the surface; the programs' versions; each offered tool's arguments."""
    spec, options = request.spec, request.options
    assert isinstance(options, McpOptions)
    definition = SERVERS[options.backend]
    surface, max_turns = surface_and_turns(options, request.resumed_settings)
    lightpanda = Path(options.lightpanda) if options.lightpanda else bundled_binary()
    check_binary(lightpanda)
    # CLAUDE_BIN names the claude program as upstream's harness reads it; --claude wins.
    claude_bin = os.environ.get("CLAUDE_BIN")
    if options.claude is None and claude_bin:
        claude = node_binary(Path(claude_bin), "claude", "CLAUDE_BIN")
    else:
        claude = node_binary(options.claude, "claude", "--claude")
    programs = find_server_programs(definition, **options.server_program_flags())
    settings = McpSettings(
        backend=options.backend,
        surface=surface,
        claude=claude,
        model=spec.model or DEFAULT_MODEL,
        max_turns=max_turns,
        auth=options.auth or "subscription",
        mcp_tool_timeout_ms=options.mcp_tool_timeout_ms or DEFAULT_MCP_TOOL_TIMEOUT_MS,
        max_budget_usd=options.max_budget_usd,
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
    versions = installed_versions(settings)
    tools = tool_surface(definition, settings, settings.search_setting, settings.search_base_url)
    settings.allowed_tools, settings.excluded_tools = tools.allowed, tools.excluded
    settings.built_in_tools = list(SURFACE_BUILT_INS[surface])
    return settings, definition, versions, tools.offered

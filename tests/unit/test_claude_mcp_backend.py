"""The Claude-MCP backend's own bookkeeping, without running anything: what a server gets
in its environment, and what an attempt's folder keeps."""

from __future__ import annotations

import json
from pathlib import Path

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    BUILT_IN_TOOLS,
    SERVERS,
    SURFACE_BUILT_INS,
    SURFACES,
    UPSTREAM_BUILT_INS,
    ClaudeMcpBackend,
    McpSettings,
    surface_listing,
)
from agent_benchmarks.backends.claude_stream import audit_calls
from agent_benchmarks.records import TaskInput, ToolCall


def _settings(backend: str) -> McpSettings:
    return McpSettings(
        backend=backend,
        claude="claude",
        model="claude-sonnet-4-6",
        max_turns=7,
        auth="subscription",
        mcp_tool_timeout_ms=1000,
        lightpanda="lightpanda",
        max_budget_usd=0.5,
    )


def test_every_server_keeps_its_temp_files_in_the_attempt_temp_folder(tmp_path: Path):
    """What a server's browser keeps (sockets, a profile under HOME) goes in the attempt's
    temp folder, which the engine removes, never in Claude Code's HOME or the run folder.
    (Claude Code passes its own environment, TMPDIR included, on to the server.)"""
    workdir, tmpdir = tmp_path / "attempt", tmp_path / "t"
    sockets = {
        name: definition.server(_settings(name), workdir, tmpdir)["env"].get(
            "AGENT_BROWSER_SOCKET_DIR"
        )
        for name, definition in SERVERS.items()
    }
    assert (
        sockets["agent-browser"] == sockets["agent-browser-lightpanda"] == str(tmpdir / "sockets")
    )
    env = SERVERS["browser-use"].server(_settings("browser-use"), workdir, tmpdir)["env"]
    # browser-use writes its Chrome profile under $HOME whatever its config dir says.
    home = Path(env["HOME"])
    assert home.parent == tmpdir
    assert Path(env["BROWSER_USE_CONFIG_DIR"]).is_relative_to(home)


def test_the_command_hands_claude_the_servers_temp_folder(tmp_path: Path):
    backend = ClaudeMcpBackend(_settings("browser-use"), SERVERS["browser-use"], {})
    prepared = PreparedTask(
        task=TaskInput(suite="localweb", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path / "attempt",
        tmpdir=tmp_path / "t",
    )
    argv = backend.command(prepared).argv
    config = json.loads(argv[argv.index("--mcp-config") + 1])
    (server,) = config["mcpServers"].values()
    assert server["env"]["HOME"] == str(tmp_path / "t" / "browser-use-home")


def test_budgets_are_declared_and_passed_to_claude(tmp_path: Path) -> None:
    backend = ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {})
    assert backend.settings()["budgets"] == {
        "max_turns": 7,
        "max_tokens": None,  # Claude Code has no token cap: declared, not left out
        "max_cost_usd": 0.5,
    }
    prepared = PreparedTask(
        task=TaskInput(suite="localweb", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )
    argv = backend.command(prepared).argv
    assert argv[argv.index("--max-turns") + 1] == "7"
    assert argv[argv.index("--max-budget-usd") + 1] == "0.5"


# --- tool surfaces ----------------------------------------------------------------------------

# lightpanda 1.0.2's `mcp` tools, as it lists them
LIGHTPANDA_OFFERS = [
    "goto",
    "search",
    "markdown",
    "html",
    "screenshot",
    "links",
    "evaluate",
    "extract",
    "tree",
    "nodeDetails",
    "interactiveElements",
    "structuredData",
    "detectForms",
    "click",
    "fill",
    "scroll",
    "waitForSelector",
    "waitForScript",
    "waitForState",
    "hover",
    "press",
    "selectOption",
    "setChecked",
    "findElement",
    "consoleLogs",
    "getUrl",
    "getCookies",
    "getEnv",
    "save",
    "session_new",
    "session_list",
    "session_close",
]


def _surface_of(surface: str, offered: list[str]) -> tuple[set[str], set[str]]:
    excluded = SERVERS["lightpanda"].excluded_on(surface)
    return {t for t in offered if t not in excluded}, set(excluded) & set(offered)


def test_upstream_surface_offers_lightpandas_search_and_strict_does_not() -> None:
    allowed, excluded = _surface_of("upstream", LIGHTPANDA_OFFERS)
    # upstream's allow-list (its _mcp.py), with `eval` under Lightpanda 1.0's name
    upstream = set(
        [
            "goto",
            "tree",
            "markdown",
            "extract",
            "structuredData",
            "findElement",
            "interactiveElements",
            "links",
            "search",
            "click",
            "fill",
            "hover",
            "selectOption",
            "setChecked",
            "press",
            "scroll",
            "waitForSelector",
            "nodeDetails",
            "getCookies",
            "getEnv",
            "getUrl",
            "evaluate",
            "consoleLogs",
            "detectForms",
        ]
    )
    assert upstream <= allowed
    # offered beyond upstream's list: Lightpanda tools newer than it
    assert allowed - upstream == {"html", "waitForScript", "waitForState"}
    assert excluded == {"screenshot", "save", "session_new", "session_list", "session_close"}
    strict_allowed, strict_excluded = _surface_of("strict", LIGHTPANDA_OFFERS)
    assert strict_allowed == allowed - {"search"}
    assert strict_excluded == excluded | {"search"}
    assert all(SERVERS["lightpanda"].excluded_on("strict").values())  # each says why


def _argv(surface: str, tmp_path: Path) -> list[str]:
    settings = _settings("lightpanda")
    settings.surface = surface
    settings.allowed_tools = ["goto", "search"]
    settings.excluded_tools = ["screenshot"]
    settings.built_in_tools = list(SURFACE_BUILT_INS[surface])
    backend = ClaudeMcpBackend(settings, SERVERS["lightpanda"], {})
    prepared = PreparedTask(
        task=TaskInput(suite="localweb", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )
    return backend.command(prepared).argv


def test_the_upstream_surface_offers_todowrite_and_ls_and_denies_every_other_built_in(
    tmp_path: Path,
) -> None:
    argv = _argv("upstream", tmp_path)
    assert argv[argv.index("--tools") + 1] == "TodoWrite,LS"
    denied = argv[argv.index("--disallowed-tools") + 1].split(",")
    assert "TodoWrite" not in denied and "LS" not in denied
    assert {"Bash", "WebSearch", "WebFetch", "Read", "Task", "Agent"} <= set(denied)
    assert "mcp__browser__screenshot" in denied
    allowed = argv[argv.index("--allowed-tools") + 1].split(",")
    assert allowed == ["mcp__browser__goto", "mcp__browser__search", "TodoWrite", "LS"]


def test_the_strict_surface_offers_no_built_in(tmp_path: Path) -> None:
    argv = _argv("strict", tmp_path)
    assert argv[argv.index("--tools") + 1] == ""
    denied = argv[argv.index("--disallowed-tools") + 1].split(",")
    assert set(BUILT_IN_TOOLS) <= set(denied)


def test_the_agent_browser_wrapper_is_told_its_surface(tmp_path: Path) -> None:
    for surface in SURFACES:
        settings = _settings("agent-browser")
        settings.surface = surface
        env = SERVERS["agent-browser"].server(settings, tmp_path, tmp_path)["env"]
        assert env["AGENT_BROWSER_MCP_SURFACE"] == surface


def _calls(*names: str) -> list[ToolCall]:
    return [ToolCall(name=n) for n in names]


def test_upstreams_built_ins_are_not_contamination_while_bash_still_is(tmp_path: Path) -> None:
    settings = _settings("lightpanda")
    settings.allowed_tools = ["goto", "search"]
    settings.built_in_tools = list(UPSTREAM_BUILT_INS)
    backend = ClaudeMcpBackend(settings, SERVERS["lightpanda"], {})
    calls = _calls("mcp__browser__goto", "mcp__browser__search", "TodoWrite", "LS", "ToolSearch")
    audit = audit_calls(
        calls, "browser", set(settings.allowed_tools), built_ins=set(settings.built_in_tools)
    )
    assert not audit.contaminated
    audit = audit_calls(
        _calls("TodoWrite", "Bash"),
        "browser",
        set(settings.allowed_tools),
        built_ins=set(settings.built_in_tools),
    )
    assert [c["name"] for c in audit.foreign_calls] == ["Bash"]
    # the strict surface offers no built-in: TodoWrite is foreign there
    strict = audit_calls(_calls("TodoWrite"), "browser", {"goto"}, built_ins=set())
    assert strict.contaminated
    assert backend.settings()["built_in_tools"] == ["TodoWrite", "LS"]
    assert backend.settings()["surface"] == "upstream"


def test_the_listing_names_arguments_exclusions_and_built_ins() -> None:
    settings = _settings("lightpanda")
    settings.allowed_tools = ["goto", "search"]
    settings.excluded_tools = ["screenshot"]
    settings.built_in_tools = ["TodoWrite", "LS"]
    text = surface_listing(
        settings, SERVERS["lightpanda"], {"goto": ["url*", "timeout"], "search": ["query*"]}
    )
    assert "surface upstream" in text
    assert "  goto(url*, timeout)" in text and "  search(query*)" in text
    assert "  screenshot: multimodal" in text
    assert "built-in Claude Code tools offered: TodoWrite, LS" in text

"""The Claude-MCP backend's own bookkeeping, without running anything: what a server gets
in its environment, and what an attempt's folder keeps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    BUILT_IN_TOOLS,
    SURFACE_BUILT_INS,
    UPSTREAM_BUILT_INS,
    ClaudeMcpBackend,
    McpSettings,
)
from agent_benchmarks.backends.claude_stream import audit_calls
from agent_benchmarks.backends.mcp_options import SURFACES, McpOptions, surface_and_turns
from agent_benchmarks.backends.mcp_run import DEFINITION, claude_built_ins, surface_listing
from agent_benchmarks.backends.mcp_servers import SERVERS
from agent_benchmarks.backends.programs import NODE_BIN
from agent_benchmarks.isolation.process import ProcessResult
from agent_benchmarks.records.pricing import PriceTable, load_price_table
from agent_benchmarks.records.schema import TaskInput, ToolCall
from agent_benchmarks.spec.suites import get_suite, suite_names
from tests.fixtures import CLAUDE_CODE, fixture


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


def _prepared(tmp_path: Path) -> PreparedTask:
    return PreparedTask(
        task=TaskInput(suite="localweb", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )


def test_no_turn_cap_unless_asked_as_upstream(tmp_path: Path) -> None:
    settings = _settings("lightpanda").model_copy(update={"max_turns": None})
    backend = ClaudeMcpBackend(settings, SERVERS["lightpanda"], {})
    assert backend.settings()["budgets"]["max_turns"] is None  # declared absent
    assert "--max-turns" not in backend.command(_prepared(tmp_path)).argv


def test_upstreams_defaults_sonnet_and_600_seconds() -> None:
    assert McpSettings.model_fields["max_turns"].default is None
    settings = _settings("lightpanda").model_copy(update={"model": "sonnet"})
    assert ClaudeMcpBackend(settings, SERVERS["lightpanda"], {}).settings()["model_is_alias"]
    assert not ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {}).settings()[
        "model_is_alias"
    ]
    # 600 s where the suite allows that long; localweb keeps its own 120 s.
    timeouts = {name: DEFINITION.timeout_for(get_suite(name)) for name in suite_names()}
    assert timeouts == {"gaia": 600, "assistantbench": 600, "webbench": 600, "localweb": 120}


@pytest.mark.parametrize(
    ("recorded", "kept"),
    [
        (None, ("upstream", None)),  # a new run: upstream's surface, no cap
        ({"surface": "upstream", "max_turns": None}, ("upstream", None)),
        ({"surface": "upstream", "max_turns": 60}, ("upstream", 60)),  # before no cap
        ({"max_turns": 60}, ("strict", 60)),  # before --surface existed
    ],
)
def test_a_resumed_run_keeps_the_surface_and_turn_cap_it_ran_with(
    recorded: dict | None, kept: tuple
) -> None:
    # ``recorded``: the backend settings of the resumed run's manifest (None: a new run).
    assert surface_and_turns(McpOptions(backend="lightpanda"), recorded) == kept


def test_a_cap_in_the_flags_wins() -> None:
    # --resume RUN_DIR; the run's stored options (already applied by the runner) said 3 turns
    options = McpOptions(backend="lightpanda", max_turns=3)
    assert surface_and_turns(options, {"surface": "strict", "max_turns": 3}) == ("strict", 3)


# --- cost -------------------------------------------------------------------------------------


def _recorded_outcome(backend: ClaudeMcpBackend, tmp_path: Path, run: str = "lightpanda_mcp"):
    stdout = fixture(CLAUDE_CODE / run / "stream.jsonl").read_text(encoding="utf-8")
    result = ProcessResult(returncode=0, stdout=stdout, stderr="", duration_s=1.0)
    return backend.outcome(_prepared(tmp_path), result)


def test_the_model_claude_code_ran_is_priced_from_the_table(tmp_path: Path) -> None:
    """Recorded with claude-sonnet-4-6, which the table has: its list price of the
    recording's counts, which is what Claude Code's own total says too."""
    prices = load_price_table(None)
    backend = ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {}, prices)
    outcome = _recorded_outcome(backend, tmp_path)
    assert outcome.details["model_id"] == "claude-sonnet-4-6"
    assert outcome.details["cost_source"] == "price-table:claude-sonnet-4-6"
    assert outcome.usage.cost_usd == prices.cost(outcome.usage, "claude-sonnet-4-6") == 0.117805
    assert outcome.details["claude_total_cost_usd"] == 0.11780489999999999
    assert backend.learned_settings() == {"resolved_models": ["claude-sonnet-4-6"]}


def test_a_model_the_table_lacks_takes_claude_codes_own_total(tmp_path: Path) -> None:
    """2.1.330 runs `sonnet` as claude-sonnet-5-5, which the built-in table has no price
    for: the row takes Claude Code's total_cost_usd, and says so."""
    empty = PriceTable(version="none", source="test", models={})
    backend = ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {}, empty)
    outcome = _recorded_outcome(backend, tmp_path, "max_turns_1")
    assert outcome.details["cost_source"] == "claude-code"
    assert outcome.usage.cost_usd == 0.0273396
    assert load_price_table(None).price_for("claude-sonnet-5-5") is None


def test_a_scripted_models_run_is_never_priced(tmp_path: Path) -> None:
    backend = ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {}, None)
    outcome = _recorded_outcome(backend, tmp_path)
    assert (outcome.usage.cost_usd, outcome.details["cost_source"]) == (None, None)
    assert outcome.details["model_id"] == "claude-sonnet-4-6"  # still recorded


def test_before_any_attempt_nothing_is_learned() -> None:
    backend = ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {})
    assert backend.learned_settings() == {}


def test_agent_browser_is_recorded_with_the_sha256_of_the_binary_that_runs() -> None:
    """npm's agent-browser is a JavaScript shim in front of a native binary: the version
    is the shim's answer, the sha256 the native binary's, as lightpanda's is recorded."""
    shim = fixture(NODE_BIN / "agent-browser")
    settings = _settings("agent-browser").model_copy(update={"agent_browser": str(shim)})
    programs = SERVERS["agent-browser-lightpanda"].programs(settings)
    native = shim.resolve().parent / "agent-browser-linux-x64"
    assert programs["agent-browser"].startswith("agent-browser 0.")
    assert programs["agent-browser_sha256"] == hashlib.sha256(native.read_bytes()).hexdigest()


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


def test_a_refused_call_is_recorded_in_the_row_and_does_not_contaminate(tmp_path: Path):
    """The refused_calls recording (Claude Code's lockdown refusing WebSearch, Bash, a
    denied and an unoffered MCP tool, and an offered one it was not allowed) read by the
    backend: the row lists the five refused calls with Claude Code's reason, counts them,
    and stays clean; the goto that ran and failed on its own is in none of the lists."""
    settings = _settings("lightpanda")
    settings.allowed_tools = ["goto", "markdown", "extract", "tree", "links", "getUrl"]
    settings.built_in_tools = list(UPSTREAM_BUILT_INS)
    backend = ClaudeMcpBackend(settings, SERVERS["lightpanda"], {})
    outcome = _recorded_outcome(backend, tmp_path, "refused_calls")
    assert outcome.status == "ok" and outcome.output.endswith("$129.00.")
    details = outcome.details
    assert details["contaminated"] is False and details["foreign_calls"] == []
    assert details["n_refused_calls"] == 5
    refused = details["refused_calls"]
    assert [c["name"] for c in refused] == [
        "WebSearch",
        "Bash",
        "mcp__browser__screenshot",
        "mcp__browser__nodeDetails",
        "mcp__browser__noSuchTool",
    ]
    assert refused[0]["args"] == {"query": "Kestrel Binoculars LW-1011 price"}
    assert refused[0]["why"].startswith("No such tool available: WebSearch.")
    assert refused[3]["why"].endswith("(user-rejected)")
    # The trace keeps every call, the refused ones with Claude Code's error.
    assert [c.name for c in outcome.trace][5:] == ["mcp__browser__goto", "mcp__browser__markdown"]
    assert outcome.trace[0].error is not None


def test_a_call_outside_the_surface_that_ran_contaminates_the_row(tmp_path: Path) -> None:
    """lightpanda_mcp was recorded with the server named `lp`: to this backend (server
    `browser`) its markdown and extract are foreign, and both ran."""
    backend = ClaudeMcpBackend(_settings("lightpanda"), SERVERS["lightpanda"], {})
    details = _recorded_outcome(backend, tmp_path).details
    assert details["contaminated"] is True
    assert [c["name"] for c in details["foreign_calls"]] == [
        "mcp__lp__markdown",
        "mcp__lp__extract",
    ]
    assert (details["refused_calls"], details["n_refused_calls"]) == ([], 0)


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
    # What Claude Code offers beside the MCP tools is what its requests carry (2.1.330's:
    # none of upstream's TodoWrite and LS), not what --tools names.
    built_ins = claude_built_ins(settings, "2.1.330 (Claude Code)")
    assert built_ins.splitlines()[0] == "built-in Claude Code tools offered: none"
    assert "--tools names TodoWrite, LS (upstream's); 2.1.330 has none" in built_ins
    assert "DeferredToolPlaceholder" in built_ins and "this one is" not in built_ins
    assert "this one is 2.2.0 (Claude Code)" in claude_built_ins(settings, "2.2.0 (Claude Code)")

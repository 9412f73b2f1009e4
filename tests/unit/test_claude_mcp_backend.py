"""The Claude-MCP backend's own bookkeeping, without running anything: what a server gets
in its environment, and what an attempt's folder keeps."""

from __future__ import annotations

from pathlib import Path

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    BROWSER_USE_STATE,
    SERVERS,
    ClaudeMcpBackend,
    McpSettings,
)
from agent_benchmarks.records import TaskInput
from agent_benchmarks.runner.process import ProcessResult


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


def test_browser_use_keeps_everything_of_its_own_in_one_discarded_folder(tmp_path: Path):
    settings = _settings("browser-use")
    server = SERVERS["browser-use"].server(settings, tmp_path)
    # browser-use writes its Chrome profile under $HOME whatever its config dir says, so
    # both point into the folder the attempt discards (never Claude Code's HOME).
    home = Path(server["env"]["HOME"])
    assert home == tmp_path / BROWSER_USE_STATE
    assert Path(server["env"]["BROWSER_USE_CONFIG_DIR"]).is_relative_to(home)
    assert BROWSER_USE_STATE in SERVERS["browser-use"].discard


def test_the_attempt_folder_loses_its_discarded_state_and_keeps_the_rest(tmp_path: Path):
    profile = tmp_path / BROWSER_USE_STATE / ".config" / "browseruse" / "profiles"
    profile.mkdir(parents=True)
    (profile / "Local State").write_text("{}")
    (tmp_path / "home").mkdir()
    backend = ClaudeMcpBackend(_settings("browser-use"), SERVERS["browser-use"], {})
    prepared = PreparedTask(
        task=TaskInput(suite="localweb", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )
    outcome = backend.outcome(prepared, ProcessResult(0, "", "", 1.0))
    assert outcome.status == "error"  # no stream at all: not an answer
    assert not (tmp_path / BROWSER_USE_STATE).exists()
    assert (tmp_path / "home").exists()


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

"""The Claude-MCP backend's own bookkeeping, without running anything: what a server gets
in its environment, and what an attempt's folder keeps."""

from __future__ import annotations

import json
from pathlib import Path

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    SERVERS,
    ClaudeMcpBackend,
    McpSettings,
)
from agent_benchmarks.records import TaskInput


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

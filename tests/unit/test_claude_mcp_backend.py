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
    attempt_server,
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
    """Claude Code starts a stdio server with only a few variables of its own (no TMPDIR),
    so each server is told the attempt's temp folder, which the engine removes: browser
    profiles, downloads and sockets must not outlive the attempt in the system temp."""
    workdir, tmpdir = tmp_path / "attempt", tmp_path / "t"
    for name, definition in SERVERS.items():
        env = attempt_server(definition, _settings(name), workdir, tmpdir)["env"]
        assert env["TMPDIR"] == str(tmpdir), name
        if "AGENT_BROWSER_SOCKET_DIR" in env:
            assert Path(env["AGENT_BROWSER_SOCKET_DIR"]).parent == tmpdir
    env = attempt_server(SERVERS["browser-use"], _settings("browser-use"), workdir, tmpdir)["env"]
    # browser-use writes its Chrome profile under $HOME whatever its config dir says: both
    # are in the temp folder, never in Claude Code's HOME or the attempt folder.
    home = Path(env["HOME"])
    assert home.parent == tmpdir
    assert Path(env["BROWSER_USE_CONFIG_DIR"]).is_relative_to(home)
    assert {"agent-browser", "agent-browser-lightpanda"} <= {
        n
        for n, d in SERVERS.items()
        if "AGENT_BROWSER_SOCKET_DIR" in d.server(_settings(n), workdir, tmpdir)["env"]
    }


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
    assert server["env"]["TMPDIR"] == str(tmp_path / "t")
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

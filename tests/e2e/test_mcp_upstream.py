"""Upstream's MCP command lines work here (issue 15): --agent-browser, CLAUDE_BIN, and a
subscriber with no login is told so before anything starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import run_cli

pytestmark = pytest.mark.e2e


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    return {**env, "CLAUDE_CODE_OAUTH_TOKEN": "", "HOME": str(home), **extra}


def test_agent_browser_is_checked_and_refused_where_unused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = run_cli(
        "localweb-mcp-run", "--backend", "lightpanda",
        "--agent-browser", "/usr/bin/true", "--out-dir", str(tmp_path / "lp"),
        env=_env(home),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--agent-browser: --backend lightpanda does not use agent-browser" in proc.stderr
    proc = run_cli(
        "localweb-mcp-run", "--backend", "agent-browser-lightpanda",
        "--agent-browser", str(tmp_path / "nowhere"), "--out-dir", str(tmp_path / "ab"),
        env=_env(home),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--agent-browser" in proc.stderr and "not an executable file" in proc.stderr
    assert not (tmp_path / "lp").exists() and not (tmp_path / "ab").exists()


def test_claude_bin_is_honoured(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = run_cli(
        "localweb-mcp-run", "--backend", "lightpanda", "--out-dir", str(tmp_path / "r"),
        env=_env(home, CLAUDE_BIN=str(tmp_path / "no-claude")),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "CLAUDE_BIN" in proc.stderr and "not an executable file" in proc.stderr


def test_a_subscriber_without_a_login_is_told_before_the_first_task(
    tmp_path: Path, gaia_file: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = run_cli(
        "gaia-mcp-run", "--backend", "lightpanda", "--limit", "1",
        "--dataset-file", str(gaia_file), "--out-dir", str(tmp_path / "r"),
        env=_env(home),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "no Claude login found" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "r").exists()

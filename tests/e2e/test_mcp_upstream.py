"""Upstream's MCP command lines work here (issue 15): --agent-browser, CLAUDE_BIN, and a
subscriber with no login is told so before anything starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
)
from agent_benchmarks.records import PredictionRow
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


class AnswerAtOnce(StepPolicy):
    def step(self, conv: Conversation) -> object:
        return FinalAnswer("<ANSWER>ocelot</ANSWER>")


@pytest.mark.parametrize(("task_id", "seen"), [("g1-text", "ocelot"), ("g1-sheet", "amount")])
def test_the_mcp_agent_is_shown_the_attachment(
    gaia_file: Path, tmp_path: Path, task_id: str, seen: str
) -> None:
    run_dir = tmp_path / "run"
    with ScriptedModelServer(lambda _: AnswerAtOnce()) as server:
        proc = run_cli(
            "gaia-mcp-run", "--backend", "lightpanda", "--dataset-file", str(gaia_file),
            "--task-ids", task_id, "--base-url", f"{server.root_url}/task/{{task_id}}",
            "--auth", "api-key", "--scaffold", "--out-dir", str(run_dir),
            env={"ANTHROPIC_API_KEY": API_KEY},
        )  # fmt: skip
        first = server.model_requests(task_id)[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert first.conversation is not None
    text = first.conversation.task_text
    assert f"{task_id}." in text.split("as text:")[0] and seen in text
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert row.details["attachments"][0]["given_to_agent"] == "text in the message"

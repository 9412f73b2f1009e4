"""Upstream's MCP command lines work here (issue 15): its README's four head-to-head commands
as typed, --agent-browser, CLAUDE_BIN, a subscriber with no login told so before anything
starts, and a GAIA attachment shown to the model."""

from __future__ import annotations

import json
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
from agent_benchmarks.records.schema import Manifest, PredictionRow
from agent_benchmarks.spec.datasets import sha256_file
from tests.support import REPO, left_running, lightpanda_binary, run_cli

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


class AnswerFiftyFive(StepPolicy):
    def step(self, conv: Conversation) -> object:
        return FinalAnswer("<ANSWER>55</ANSWER>")


@pytest.mark.parametrize(
    ("backend", "programs"),
    [
        ("lightpanda", ("--lightpanda",)),
        ("agent-browser", ("--agent-browser",)),
        ("agent-browser-lightpanda", ("--agent-browser", "--lightpanda")),
        ("browser-use", ()),
    ],
)
def test_upstream_s_mcp_commands_run_as_written(
    assistantbench_file: Path, tmp_path: Path, backend: str, programs: tuple[str, ...]
) -> None:
    """Upstream README's head-to-head commands, typed as there (`--workers 4 --model sonnet
    --timeout 1800`, `--agent-browser` and `--lightpanda` where it passes them, a
    subscriber's login, run from the user's folder) with only the dataset file, the model
    endpoint (--base-url, --scaffold) substituted: each starts Claude Code on the backend,
    lands in upstream's folder layout and records what upstream's manifest records."""
    paths = {
        "--lightpanda": lightpanda_binary(),
        "--agent-browser": str(REPO / "node_modules" / ".bin" / "agent-browser"),
    }
    home = tmp_path / "home"
    home.mkdir()
    workdir = tmp_path / "work"
    workdir.mkdir()
    with ScriptedModelServer(lambda _: AnswerFiftyFive()) as server:
        proc = run_cli(
            "assistantbench-mcp-run", "--backend", backend,
            *(arg for flag in programs for arg in (flag, paths[flag])),
            "--workers", "4", "--model", "sonnet", "--timeout", "1800",
            "--dataset-file", str(assistantbench_file), "--task-ids", "ab-number",
            "--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold",
            env=_env(home, CLAUDE_CODE_OAUTH_TOKEN="oat-upstream-commands"),
            cwd=workdir, timeout=300,
        )  # fmt: skip
        asked = server.model_requests("ab-number")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert asked, "Claude Code never reached the scripted model"
    (run_dir,) = (workdir / "results" / "assistantbench-mcp" / backend).iterdir()
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.backend == f"claude-mcp/{backend}"
    assert (manifest.model, manifest.workers, manifest.timeout_s) == ("sonnet", 4, 1800)
    assert manifest.settings["backend"]["login"] == "oauth-token"
    assert "oat-upstream-commands" not in (run_dir / "manifest.json").read_text()
    for flag in programs:  # the binaries typed are the ones recorded
        name = flag.removeprefix("--")
        assert manifest.programs[name], manifest.programs
        assert len(manifest.programs[f"{name}_sha256"]) == 64, manifest.programs
    if "--lightpanda" in programs:  # the very binary typed
        typed = sha256_file(Path(paths["--lightpanda"]))
        assert manifest.programs["lightpanda_sha256"] == typed
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert (row.status, row.prediction) == ("ok", "55")
    # graded at the end, as upstream's runs are, with upstream's summary beside ours
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["accuracy_strict"] == 1.0
    assert (scores["upstream_view"]["accuracy_strict"], scores["upstream_view"]["n_tasks"]) == (
        1.0,
        1,
    )
    assert not left_running(run_dir)


def test_a_scaffold_mcp_run_is_never_priced_whatever_model_id_it_names(
    assistantbench_file: Path, tmp_path: Path
) -> None:
    """Claude Code needs a real model id even when a scripted model answers; the tokens the
    test double reports are counted but never turned into dollars at that model's price (the
    backend settles its rows' cost, and the engine leaves them alone)."""
    run_dir = tmp_path / "run"
    with ScriptedModelServer(lambda _: AnswerFiftyFive()) as server:
        proc = run_cli(
            "assistantbench-mcp-run", "--backend", "lightpanda", "--model", "claude-sonnet-4-6",
            "--dataset-file", str(assistantbench_file), "--task-ids", "ab-number",
            "--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold",
            "--auth", "api-key", "--out-dir", str(run_dir),
            env={"ANTHROPIC_API_KEY": API_KEY},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert row.status == "ok" and row.usage.total_tokens > 0
    assert row.details["model_id"] == "claude-sonnet-4-6"  # a model the price table prices
    assert (row.usage.cost_usd, row.details["cost_source"]) == (None, None)

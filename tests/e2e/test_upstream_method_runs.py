"""Upstream's method on the real ``gaia-run``: the real ``lightpanda agent`` against a
scripted model on 127.0.0.1. The prompt variant each runner and model gets by default, the
empty-answer retry, and the search engine Lightpanda was left to use."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
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
from agent_benchmarks.spec.prompts import RESEARCH_BRIEF, RESEARCH_PERSISTENT
from tests.support import REPO

pytestmark = pytest.mark.e2e
MODEL = "scripted-method"
FLASH = "scripted-gemini-flash"
TAVILY_KEY = "tvly-DO-NOT-LEAK-0123456789abcdef"
SEARCH_KEYS = ("BRAVE_API_KEY", "TAVILY_API_KEY", "EXA_API_KEY")


class ByRequest(StepPolicy):
    """Replies with the n-th text on the task's n-th model request. Lightpanda follows an
    empty reply with one tool-less synthesis request: an attempt that answers nothing takes
    two empty replies."""

    def __init__(self, *texts: str):
        self.texts = texts

    def step(self, conv: Conversation) -> FinalAnswer:
        return FinalAnswer(self.texts[min(conv.request_number, len(self.texts)) - 1])


def _gaia(
    server: ScriptedModelServer, run_dir: Path, *args: str, model: str = MODEL, **env: str
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in SEARCH_KEYS}
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "gaia-run"),
            "--provider",
            "openai_compatible",
            "--model",
            model,
            "--base-url",
            f"{server.root_url}/task/{{task_id}}/v1",
            "--scaffold",
            "--timeout",
            "60",
            "--task-ids",
            "g1-plain",
            "--out-dir",
            str(run_dir),
            *args,
        ],
        capture_output=True,
        text=True,
        env={**base, "OPENAI_API_KEY": API_KEY, "LIGHTPANDA_DISABLE_TELEMETRY": "true", **env},
        cwd=REPO,
        timeout=180,
    )


def _rows(run_dir: Path) -> list[PredictionRow]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [PredictionRow.model_validate_json(line) for line in lines]


def _manifest(run_dir: Path) -> Manifest:
    return Manifest.model_validate_json((run_dir / "manifest.json").read_text())


def test_an_empty_answer_is_retried_once_and_both_times_are_kept(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "retry"
    policy = ByRequest("", "", "<ANSWER>3</ANSWER>")
    with ScriptedModelServer(lambda task_id: policy, models=[MODEL]) as server:
        proc = _gaia(server, run_dir, "--dataset-file", str(gaia_file))
        asked = server.model_requests("g1-plain")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(asked) == 3
    (row,) = _rows(run_dir)
    assert (row.status, row.prediction) == ("ok", "3")
    assert row.details["retried"] is True
    retry = row.details["empty_retry"]
    assert retry["kept"] == "retry" and retry["dropped"]["status"] == "empty"
    assert row.duration_s >= retry["dropped"]["duration_s"]
    # Each run of the agent had its own folder and trace.
    folders = sorted(p.name for p in (run_dir / "attempts").iterdir())
    assert folders == ["g1-plain.1.1", "g1-plain.1.1-retry"]
    assert _manifest(run_dir).settings["empty_retry"]["on"] is True


def test_no_empty_retry_keeps_the_empty_answer(gaia_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "no-retry"
    policy = ByRequest("", "", "<ANSWER>3</ANSWER>")
    with ScriptedModelServer(lambda task_id: policy, models=[MODEL]) as server:
        proc = _gaia(server, run_dir, "--dataset-file", str(gaia_file), "--no-empty-retry")
        asked = server.model_requests("g1-plain")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(asked) == 2
    (row,) = _rows(run_dir)
    assert row.status == "empty" and "retried" not in row.details
    manifest = _manifest(run_dir)
    assert manifest.settings["empty_retry"] == {"on": False, "why": "--no-empty-retry"}
    assert manifest.settings["flags"]["no_empty_retry"] is True


def test_a_flash_model_gets_the_answer_only_prompt_and_its_plain_reply_is_read(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "flash"
    policy = ByRequest("  3 \n")
    with ScriptedModelServer(lambda task_id: policy, models=[FLASH]) as server:
        proc = _gaia(server, run_dir, "--dataset-file", str(gaia_file), model=FLASH)
        (request,) = server.model_requests("g1-plain")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert request.conversation is not None
    assert request.conversation.system.startswith(RESEARCH_BRIEF)
    assert "<ANSWER>" not in request.conversation.messages[0].text
    session = _manifest(run_dir).settings["session"]
    assert (session["prompt"], session["answer_format"]) == ("answer-only", "plain")
    assert session["system_prompt_sha256"] == hashlib.sha256(RESEARCH_BRIEF.encode()).hexdigest()
    assert _manifest(run_dir).settings["flags"]["prompt"] == "answer-only"
    (row,) = _rows(run_dir)
    assert (row.status, row.prediction) == ("ok", "3")


def test_prompt_picks_a_variant_and_a_resume_keeps_it(gaia_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "pinned"
    policy = ByRequest("<ANSWER>3</ANSWER>")
    with ScriptedModelServer(lambda task_id: policy, models=[FLASH]) as server:
        proc = _gaia(
            server,
            run_dir,
            "--dataset-file",
            str(gaia_file),
            "--prompt",
            "persistence",
            model=FLASH,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        session = _manifest(run_dir).settings["session"]
        assert session["prompt"] == "persistence"
        assert session["system_prompt"] == RESEARCH_PERSISTENT
        # The whole command again with another --prompt is refused, naming the flag.
        again = _gaia(
            server,
            run_dir,
            "--dataset-file",
            str(gaia_file),
            "--prompt",
            "answer-only",
            "--resume",
            model=FLASH,
        )
        # Without --prompt, the resumed run keeps persistence, though a Flash model's default
        # is answer-only (a changed prompt would be refused by its sha256).
        kept = _gaia(server, run_dir, "--dataset-file", str(gaia_file), "--resume", model=FLASH)
    assert again.returncode == 2
    assert "--prompt" in again.stderr and "answer-only" in again.stderr
    assert kept.returncode == 0, kept.stderr[-2000:]
    manifest = _manifest(run_dir)
    assert len(manifest.sessions) == 2 and manifest.settings["flags"]["prompt"] == "persistence"


def test_an_unknown_prompt_is_refused_in_one_line(gaia_file: Path, tmp_path: Path) -> None:
    with ScriptedModelServer(lambda task_id: ByRequest("1"), models=[MODEL]) as server:
        proc = _gaia(server, tmp_path / "r", "--dataset-file", str(gaia_file), "--prompt", "bold")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "--prompt bold" in proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("pinned", "env", "engine"),
    [
        ((), {"TAVILY_API_KEY": TAVILY_KEY}, "tavily"),
        ((), {}, "keenable"),
        (("--search-engine", "keenable"), {"TAVILY_API_KEY": TAVILY_KEY}, "keenable"),
    ],
    ids=["tavily-key", "no-key", "pinned"],
)
def test_the_search_engine_is_recorded_never_the_key(
    gaia_file: Path, tmp_path: Path, pinned: tuple[str, ...], env: dict[str, str], engine: str
) -> None:
    run_dir = tmp_path / engine
    with ScriptedModelServer(lambda task_id: ByRequest("<ANSWER>3</ANSWER>"), models=[MODEL]) as s:
        proc = _gaia(s, run_dir, "--dataset-file", str(gaia_file), *pinned, **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = _rows(run_dir)
    assert row.status == "ok", row.stderr_tail[-500:]  # lightpanda took the flag
    search = _manifest(run_dir).settings["backend"]["search"]
    assert search["engine"] == engine
    assert search["chosen_by"].startswith("--search-engine" if pinned else "auto")
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert TAVILY_KEY not in path.read_text(errors="replace"), path


def test_the_mcp_runner_defaults_to_the_persistence_prompt(gaia_file: Path, tmp_path: Path) -> None:
    """Claude Code + Lightpanda's MCP server: upstream's Claude numbers used it."""
    run_dir = tmp_path / "mcp"
    with ScriptedModelServer(lambda task_id: ByRequest("<ANSWER>3</ANSWER>")) as server:
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "gaia-mcp-run"),
                *("--backend", "lightpanda", "--dataset-file", str(gaia_file)),
                *("--task-ids", "g1-plain", "--base-url", f"{server.root_url}/task/{{task_id}}"),
                *("--auth", "api-key", "--scaffold", "--out-dir", str(run_dir)),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "ANTHROPIC_API_KEY": API_KEY},
            cwd=REPO,
            timeout=300,
        )
        first = server.model_requests("g1-plain")[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert first.conversation is not None
    assert RESEARCH_PERSISTENT in first.conversation.system
    session = _manifest(run_dir).settings["session"]
    assert (session["prompt"], session["answer_format"]) == ("persistence", "envelope")
    (row,) = _rows(run_dir)
    assert (row.status, row.prediction) == ("ok", "3")
    assert "retried" not in row.details  # the retry is the native runner's method only
    assert _manifest(run_dir).settings["empty_retry"]["on"] is False


def test_a_pinned_engine_without_its_key_is_refused(gaia_file: Path, tmp_path: Path) -> None:
    with ScriptedModelServer(lambda task_id: ByRequest("1"), models=[MODEL]) as server:
        proc = _gaia(
            server, tmp_path / "r", "--dataset-file", str(gaia_file), "--search-engine", "tavily"
        )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == "error: --search-engine tavily needs TAVILY_API_KEY in the environment"
    )

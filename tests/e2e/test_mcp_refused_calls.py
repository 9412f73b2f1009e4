"""The lockdown audit through the real Claude Code and ``lightpanda mcp``: a web search the
lockdown refuses is recorded as refused and leaves the row clean; only the model is
scripted (Anthropic Messages, streamed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
    call,
)
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.records.schema import PredictionRow, Scores
from tests.support import left_running, run_cli

pytestmark = pytest.mark.e2e


class SearchTheWebThenBrowse(StepPolicy):
    """Tries Claude Code's built-in WebSearch, then reads a page with the browser it was
    given, then answers correctly."""

    def __init__(self, url: str) -> None:
        self.url = url

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return call("WebSearch", query="band studio albums before 2000")
        if conv.turn == 1:
            return self.call(conv, "goto", url=self.url)
        return FinalAnswer("<ANSWER>3</ANSWER>")


@pytest.mark.parametrize("surface", ["upstream", "strict"])
def test_a_refused_web_search_is_recorded_and_does_not_contaminate(
    gaia_file: Path, tmp_path: Path, surface: str
) -> None:
    run_dir = tmp_path / "run"
    with LocalSite() as site:
        url = site.task_url("g1-plain", "/catalogue")
        with ScriptedModelServer(lambda task_id: SearchTheWebThenBrowse(url)) as server:
            proc = run_cli(
                "gaia-mcp-run",
                "--backend", "lightpanda",
                "--surface", surface,
                "--dataset-file", str(gaia_file),
                "--task-ids", "g1-plain",
                "--base-url", f"{server.root_url}/task/{{task_id}}",
                "--auth", "api-key",
                "--scaffold",
                "--out-dir", str(run_dir),
                env={"ANTHROPIC_API_KEY": API_KEY},
            )  # fmt: skip
            offered = server.model_requests("g1-plain")[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CONTAMINATED" not in proc.stderr
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert row.status == "ok" and row.prediction == "3"
    # WebSearch was never offered to the model; Claude Code answered its call with an
    # error of its own and ran nothing; the goto that followed did run.
    assert offered.conversation is not None
    assert "WebSearch" not in offered.conversation.tool_names
    assert [c.name for c in row.trace] == ["WebSearch", "mcp__browser__goto"]
    assert row.trace[0].error is not None and row.trace[1].error is None
    assert row.details["contaminated"] is False
    assert row.details["foreign_calls"] == []
    assert row.details["n_refused_calls"] == 1
    (refused,) = row.details["refused_calls"]
    assert refused["name"] == "WebSearch"
    assert refused["args"] == {"query": "band studio albums before 2000"}
    assert refused["why"].startswith("No such tool available: WebSearch.")
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.accuracy_strict == 1.0
    assert scores.metrics["n_rows_with_refused_calls"] == 1
    assert scores.metrics["n_refused_calls"] == 1
    assert "n_contaminated" not in scores.metrics
    assert not any("contaminated" in w for w in scores.warnings)
    assert scores.per_task[0].details["n_refused_calls"] == 1
    # The numbers are in the written file as a reader of it sees them.
    written = json.loads((run_dir / "scores.json").read_text())
    assert written["metrics"]["n_refused_calls"] == 1
    assert not left_running(run_dir)

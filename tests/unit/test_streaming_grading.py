"""Grading streams its predictions file and gives the scores.json it gave before it did.

The expected files in tests/fixtures/scores/ were written by the grader that read every row
into memory (commit 1dde94f), from the run folders :mod:`tests.unit.golden_runs` builds.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_benchmarks.assistantbench.grade import AssistantBenchGrader
from agent_benchmarks.gaia.grade import GaiaGrader
from agent_benchmarks.records.schema import Scores
from agent_benchmarks.scoring import scorecard
from agent_benchmarks.scoring.scorecard import scores_json
from tests.support import run_cli
from tests.unit import golden_runs

GRADERS = {"gaia": "gaia-grade", "assistantbench": "assistantbench-grade"}
GRADER_CLASSES = {"gaia": GaiaGrader, "assistantbench": AssistantBenchGrader}


def _grade(cmd: str, predictions: Path) -> str:
    proc = run_cli(cmd, str(predictions))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return (predictions.parent / "scores.json").read_text()


def _golden(name: str) -> dict:
    return json.loads((golden_runs.GOLDEN_DIR / f"{name}.json").read_text())


def _same(scores: dict, expected: dict) -> None:
    """Equal, keys in the same order (pydantic writes them in field order)."""
    assert json.dumps(scores, indent=1) == json.dumps(expected, indent=1)


@pytest.mark.parametrize("suite", golden_runs.SUITES)
def test_scores_are_the_ones_recorded_before_streaming(tmp_path: Path, suite: str) -> None:
    predictions = golden_runs.ours(tmp_path / suite, suite)
    _same(golden_runs.normalised(_grade(GRADERS[suite], predictions)), _golden(suite))


def test_upstream_rows_score_as_recorded(tmp_path: Path) -> None:
    predictions = golden_runs.upstreams(tmp_path / "upstream")
    scores = golden_runs.normalised(_grade("gaia-grade", predictions))
    _same(scores, _golden("upstream-gaia"))
    assert scores["provenance"]["imported"] == "upstream"


def test_big_traces_change_no_score(tmp_path: Path) -> None:
    predictions = golden_runs.ours(tmp_path / "small", "gaia")
    inflated = golden_runs.inflate(predictions, tmp_path / "big" / "predictions.jsonl", calls=40)
    assert inflated.stat().st_size > 100 * predictions.stat().st_size
    _same(golden_runs.normalised(_grade("gaia-grade", inflated)), _golden("gaia"))


def _scores(name: str) -> Scores:
    recorded = _golden(name) | {"predictions_path": "p.jsonl", "predictions_sha256": "0" * 64}
    return Scores.model_validate(recorded)


@pytest.mark.parametrize("name", ["gaia", "assistantbench", "upstream-gaia"])
def test_scores_json_is_written_in_pieces_as_pydantic_writes_it_whole(name: str) -> None:
    whole = _scores(name)
    view = whole.upstream_view
    for scores in (
        whole,
        whole.model_copy(update={"per_task": []}),
        whole.model_copy(update={"upstream_view": None}),
        whole.model_copy(update={"upstream_view": {**view, "per_task": []}}),
    ):
        pieces = list(scores_json(scores, slice_size=7))
        assert "".join(pieces) == scores.model_dump_json(indent=2) + "\n"
    assert len(pieces) > len(whole.per_task) // 7  # never one string as big as the file


def test_a_nan_duration_is_written_as_null_everywhere(tmp_path: Path) -> None:
    predictions = golden_runs.upstreams(tmp_path / "upstream")
    lines = predictions.read_text().splitlines()
    lines[0] = re.sub(r'"duration_s": [0-9.]+', '"duration_s": NaN', lines[0])
    predictions.write_text("\n".join(lines) + "\n")

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in scores.json: not JSON")

    scores = json.loads(_grade("gaia-grade", predictions), parse_constant=refuse)
    assert scores["upstream_view"]["per_task"][0]["duration_s"] is None


@pytest.mark.parametrize("suite", golden_runs.SUITES)
@pytest.mark.parametrize("batch_rows", [7, 10])  # 10 divides the rows: the last batch is full
def test_batches_graded_in_a_second_process_give_the_same_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: str, batch_rows: int
) -> None:
    predictions = golden_runs.ours(tmp_path / suite, suite)
    n_rows = len(predictions.read_text().splitlines())
    monkeypatch.setattr(scorecard, "_BATCH_ROWS", batch_rows)
    started: list[scorecard._GradingProcess] = []
    real_init = scorecard._GradingProcess.__init__

    def spying_init(self: scorecard._GradingProcess, grader: object) -> None:
        real_init(self, grader)  # type: ignore[arg-type]
        started.append(self)

    monkeypatch.setattr(scorecard._GradingProcess, "__init__", spying_init)
    # Forced (a one-core machine would grade here): what is tested is the second process.
    monkeypatch.setattr(scorecard._GradingProcess, "possible", staticmethod(lambda g: True))
    grader = GRADER_CLASSES[suite]()
    _, out = scorecard.grade_file(predictions, grader, console=Console(file=io.StringIO()))
    assert len(started) == 1, "the batches were not sent to a grading process"
    _same(golden_runs.normalised(out.read_text()), _golden(suite))
    assert n_rows > 3 * batch_rows


def test_a_grader_failing_in_the_grading_process_fails_the_grading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    predictions = golden_runs.ours(tmp_path / "gaia", "gaia")
    monkeypatch.setattr(scorecard, "_BATCH_ROWS", 5)
    monkeypatch.setattr(scorecard._GradingProcess, "possible", staticmethod(lambda g: True))
    grader = GaiaGrader()
    reading_process = os.getpid()
    works_here = grader.grade

    def broken(rows: Any) -> list[scorecard.Grade]:
        if os.getpid() == reading_process:  # works here: only the grading process fails
            return works_here(rows)
        raise ZeroDivisionError("the scorer broke")

    monkeypatch.setattr(grader, "grade", broken)
    with pytest.raises(ZeroDivisionError, match="the scorer broke"):
        scorecard.grade_file(predictions, grader, console=Console(file=io.StringIO()))
    assert not (predictions.parent / "scores.json").exists()

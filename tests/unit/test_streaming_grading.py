"""Grading streams its predictions file and gives the scores.json it gave before it did.

The expected files in tests/fixtures/scores/ were written by the grader that read every row
into memory (commit 1dde94f), from the run folders :mod:`tests.unit.golden_runs` builds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import run_cli
from tests.unit import golden_runs

GRADERS = {"gaia": "gaia-grade", "assistantbench": "assistantbench-grade"}


def _grade(cmd: str, predictions: Path) -> str:
    proc = run_cli(cmd, str(predictions))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return (predictions.parent / "scores.json").read_text()


def _golden(name: str) -> dict:
    return json.loads((golden_runs.GOLDEN_DIR / f"{name}.json").read_text())


@pytest.mark.parametrize("suite", golden_runs.SUITES)
def test_scores_are_the_ones_recorded_before_streaming(tmp_path: Path, suite: str) -> None:
    predictions = golden_runs.ours(tmp_path / suite, suite)
    assert golden_runs.normalised(_grade(GRADERS[suite], predictions)) == _golden(suite)


def test_upstream_rows_score_as_recorded(tmp_path: Path) -> None:
    predictions = golden_runs.upstreams(tmp_path / "upstream")
    scores = golden_runs.normalised(_grade("gaia-grade", predictions))
    assert scores == _golden("upstream-gaia")
    assert scores["provenance"]["imported"] == "upstream"


def test_big_traces_change_no_score(tmp_path: Path) -> None:
    predictions = golden_runs.ours(tmp_path / "small", "gaia")
    inflated = golden_runs.inflate(predictions, tmp_path / "big" / "predictions.jsonl", calls=40)
    assert inflated.stat().st_size > 100 * predictions.stat().st_size
    assert golden_runs.normalised(_grade("gaia-grade", inflated)) == _golden("gaia")

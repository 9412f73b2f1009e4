"""The graders give every realistic answer the grade recorded before they were made faster.

``benchmarks/answer_shapes.py`` makes the (prediction, gold) pairs ``benchmarks/grading.py``
times: the golds' shapes of GAIA and AssistantBench and what models write for them. Their
grades, the official scorer's and the upstream-comparable matching's, were recorded in
``tests/fixtures/grading/realistic_grades.json`` by the graders of commit 6c8bc62, before
the profiling work on them (``python -m tests.unit.test_grading_realistic`` writes the
record from the code as it is: only ever to extend it, with the old graders checked out).
Each pair is checked alone, then all of them as rows of one predictions file through
``gaia-grade`` / ``assistantbench-grade``'s grading (batches, the grading process), row by
row against the same record.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks.answer_shapes import realistic_pairs

from agent_benchmarks.assistantbench.grade import AssistantBenchGrader
from agent_benchmarks.assistantbench.official_scorer import evaluate
from agent_benchmarks.assistantbench.upstream_match import assistantbench_score
from agent_benchmarks.gaia.grade import GaiaGrader
from agent_benchmarks.gaia.official_scorer import question_scorer
from agent_benchmarks.gaia.upstream_match import gaia_score
from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.scoring.scorecard import grade_file

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "grading" / "realistic_grades.json"
SUITES = ("gaia", "assistantbench")
GRADERS = {"gaia": GaiaGrader, "assistantbench": AssistantBenchGrader}


def grades_of(suite: str, prediction: str | None, gold: str) -> dict[str, Any]:
    """One pair's grades, called the way each suite's grader calls its scorers."""
    if suite == "gaia":
        official: dict[str, Any] = {"correct": question_scorer(prediction, gold)}
        upstream = gaia_score(prediction, gold)
    else:
        result = evaluate(prediction or "", gold)
        official = {
            "score": result.score,
            "exact_match": result.exact_match,
            "answered": result.answered,
            "gold_type": result.gold_type,
            "error": result.error,
        }
        upstream = assistantbench_score(prediction, gold)
    return {
        "prediction": prediction,
        "gold": gold,
        "official": official,
        "upstream": {
            "score": upstream.score,
            "correct": upstream.correct,
            "score_soft": upstream.score_soft,
        },
    }


def record() -> dict[str, list[dict[str, Any]]]:
    return {suite: [grades_of(suite, p, g) for p, g in realistic_pairs(suite)] for suite in SUITES}


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[dict[str, Any]]]:
    return json.loads(RECORD.read_text(encoding="utf-8"))


def test_the_pairs_are_many_and_in_every_shape(recorded: dict[str, list[dict[str, Any]]]):
    for suite in SUITES:
        pairs = recorded[suite]
        assert len(pairs) >= 100
        assert len({pair["gold"] for pair in pairs}) >= 40
        # Right, wrong and partly right answers, not one kind.
        scores = [pair["upstream"]["score_soft"] or pair["upstream"]["score"] for pair in pairs]
        assert min(scores) == 0.0 and max(scores) == 1.0
        assert any(0.0 < score < 1.0 for score in scores)
    gold_types = {pair["official"]["gold_type"] for pair in recorded["assistantbench"]}
    assert gold_types == {"number", "string", "string list", "json"}


@pytest.mark.parametrize("suite", SUITES)
def test_the_generator_still_makes_the_recorded_pairs(suite, recorded):
    pairs = [(pair["prediction"], pair["gold"]) for pair in recorded[suite]]
    assert realistic_pairs(suite) == pairs


@pytest.mark.parametrize("suite", SUITES)
def test_each_pair_grades_as_recorded(suite, recorded):
    for pair in recorded[suite]:
        assert grades_of(suite, pair["prediction"], pair["gold"]) == pair, pair


def _rows(suite: str, pairs: list[dict[str, Any]], n: int) -> list[PredictionRow]:
    rng = random.Random(0)
    rows = []
    for i in range(n):
        pair = pairs[i] if i < len(pairs) else rng.choice(pairs)
        rows.append(
            PredictionRow(
                id=f"t{i}",
                suite=suite,
                task="q",
                gold=pair["gold"],
                prediction=pair["prediction"],
                status="ok" if pair["prediction"] else "empty",
                backend="synthetic",
                duration_s=1.0,
            )
        )
    return rows


@pytest.mark.parametrize("suite", SUITES)
def test_a_file_of_them_grades_row_by_row_as_recorded(suite, recorded, tmp_path: Path):
    by_pair = {(p["prediction"], p["gold"]): p for p in recorded[suite]}
    # More rows than two batches: the later ones are graded in the grading process.
    rows = _rows(suite, recorded[suite], 4500)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    scores, _ = grade_file(predictions, GRADERS[suite](), out=tmp_path / "scores.json")
    assert [e.id for e in scores.per_task] == sorted(r.id for r in rows)
    view = {line["id"]: line for line in scores.upstream_view["per_task"]}
    for entry in scores.per_task:
        want = by_pair[(entry.prediction, entry.gold)]
        official, upstream = want["official"], want["upstream"]
        if suite == "gaia":
            assert entry.correct is official["correct"], want
            assert entry.score == (1.0 if official["correct"] else 0.0)
        else:
            assert entry.score == official["score"], want
            assert entry.correct is (official["score"] >= 0.5)
            assert entry.details["exact_match"] is official["exact_match"]
            assert entry.details["answered"] is official["answered"]
            assert entry.details["gold_type"] == official["gold_type"]
            assert entry.details.get("error") == official["error"]
        line = view[entry.id]
        assert line["score"] == upstream["score"], want
        assert line["correct"] is upstream["correct"]
        assert line.get("score_soft") == upstream["score_soft"]
    total = sum(by_pair[(e.prediction, e.gold)]["upstream"]["score"] for e in scores.per_task)
    metric = "accuracy" if suite == "gaia" else "accuracy_soft"
    assert math.isclose(scores.upstream_view[metric] * len(rows), total)


if __name__ == "__main__":
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    suites = [
        f"{json.dumps(suite)}: [\n" + ",\n".join(json.dumps(pair) for pair in pairs) + "\n]"
        for suite, pairs in record().items()
    ]
    RECORD.write_text("{\n" + ",\n".join(suites) + "\n}\n", encoding="utf-8")
    sys.exit(0)

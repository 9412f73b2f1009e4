"""``gaia-grade``: the official GAIA leaderboard scorer over a predictions file, with
upstream's lenient matching beside it (scores.json's ``upstream_view``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_benchmarks.gaia.official_scorer import question_scorer
from agent_benchmarks.gaia.upstream_match import UPSTREAM_LAYOUT, gaia_score
from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.scoring.command import grade_main
from agent_benchmarks.scoring.grades import Grade


class GaiaGrader:
    suite = "gaia"
    needs_gold = True
    answers_only = True  # grade() reads a row's prediction and gold, nothing else
    upstream = UPSTREAM_LAYOUT  # upstream's scores.json layout for this suite
    group_fields = ("level",)

    def info(self) -> dict[str, Any]:
        return {
            "scorer": "gaia question_scorer",
            "reference": "GAIA leaderboard scorer.py (gaia-benchmark/leaderboard)",
        }

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        grades = []
        for row in rows:
            correct = question_scorer(row.prediction, row.gold or "")
            upstream = gaia_score(row.prediction, row.gold)
            grades.append(Grade(1.0 if correct else 0.0, correct, upstream=upstream))
        return grades

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        return {}  # GAIA's metric is accuracy_strict, which the scorecard computes


def make_grader(options: object, predictions: Path) -> GaiaGrader:
    """The suite's grader (it takes no options)."""
    return GaiaGrader()


# The suite's -grade console script (pyproject.toml's [project.scripts]).
main = grade_main("gaia")

"""``assistantbench-grade``: the official AssistantBench evaluator over a predictions file,
with upstream's own matching beside it (scores.json's ``upstream_view``).

Metrics as the AssistantBench leaderboard reports them: ``accuracy_soft`` is the mean score,
``accuracy_strict`` the share of tasks scoring at least 0.5, ``answer_rate`` the share with
an answer, ``precision`` the mean score over answered tasks, ``exact_match`` the share
matching exactly. Every selected task is in each denominator except precision's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_benchmarks.assistantbench.upstream_match import UPSTREAM_LAYOUT, assistantbench_score
from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.scoring.command import grade_main
from agent_benchmarks.scoring.grades import Grade, mean

STRICT_THRESHOLD = 0.5


class AssistantBenchGrader:
    suite = "assistantbench"
    needs_gold = True
    answers_only = True  # grade() reads a row's prediction and gold, nothing else
    upstream = UPSTREAM_LAYOUT  # upstream's scores.json layout for this suite
    group_fields = ("difficulty",)

    def info(self) -> dict[str, Any]:
        return {
            "scorer": "assistantbench evaluator",
            "reference": "AssistantBench leaderboard evaluation/ (AssistantBench/leaderboard)",
            "strict_threshold": STRICT_THRESHOLD,
        }

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        # Imported here: the official evaluator needs numpy, and this module is also the
        # assistantbench-grade script, whose --help must load no heavy library.
        from agent_benchmarks.assistantbench.official_scorer import evaluate

        grades = []
        for row in rows:
            # A row without an answer is "no answer" to the official code, not a crash.
            result = evaluate(row.prediction or "", row.gold or "")
            details: dict[str, Any] = {
                "exact_match": result.exact_match,
                "answered": result.answered,
                "gold_type": result.gold_type,
            }
            if result.error:
                details["error"] = result.error
            grades.append(
                Grade(
                    result.score,
                    result.score >= STRICT_THRESHOLD,
                    details,
                    upstream=assistantbench_score(row.prediction, row.gold),
                )
            )
        return grades

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        answered = [e for e in entries if e.details.get("answered")]
        return {
            "accuracy_soft": mean([e.score for e in entries]),
            "answer_rate": len(answered) / len(entries) if entries else 0.0,
            "precision": mean([e.score for e in answered]),
            "exact_match": mean([1.0 if e.details.get("exact_match") else 0.0 for e in entries]),
        }


def make_grader(options: object, predictions: Path) -> AssistantBenchGrader:
    """The suite's grader (it takes no options)."""
    return AssistantBenchGrader()


# The suite's -grade console script (pyproject.toml's [project.scripts]).
main = grade_main("assistantbench")

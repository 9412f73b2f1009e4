"""The pocket suite's grader: the answer, stripped, equals the gold."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.scoring.command import grade_main
from agent_benchmarks.scoring.grades import Grade


class PocketGrader:
    suite = "pocket"
    needs_gold = True
    answers_only = True
    group_fields: tuple[str, ...] = ()
    upstream = None  # upstream's harness has no such suite

    def info(self) -> dict[str, Any]:
        return {"scorer": "pocket exact match"}

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        grades = []
        for row in rows:
            correct = (row.prediction or "").strip() == (row.gold or "").strip()
            grades.append(Grade(1.0 if correct else 0.0, correct))
        return grades

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        return {}


def make_grader(options: object, predictions: Path) -> PocketGrader:
    return PocketGrader()


main = grade_main("pocket")

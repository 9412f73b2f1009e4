"""``localweb-grade``: every task's postcondition contract, clause by clause.

A task is correct only when every clause holds: the answer clause, and for tasks that
change state, the clauses checked against the site's own record of the episode, which the
runner stores in each row (``details["site"]``). The table printed after the summary
names, per task, the clauses that failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.localweb.tasks import TASKS_BY_ID, contracts_digest
from agent_benchmarks.records.schema import PredictionRow, Scores, TaskScore
from agent_benchmarks.scoring.command import grade_main
from agent_benchmarks.scoring.contracts import AnswerContains, AnswerIs, SiteRecord
from agent_benchmarks.scoring.grades import Grade


def site_record(row: PredictionRow) -> SiteRecord | None:
    raw = row.details.get("site")
    if raw is None:
        return None
    try:
        return SiteRecord.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"task {row.id!r}: invalid site record in the row: {exc}") from None


class LocalwebGrader:
    suite = "localweb"
    needs_gold = False  # the contract decides, not the gold string
    group_fields = ("category",)
    upstream = None  # upstream's harness has no such suite

    def info(self) -> dict[str, Any]:
        return {
            "scorer": "localweb postcondition contracts",
            "contracts_sha256": contracts_digest(),
        }

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        grades = []
        for row in rows:
            task = TASKS_BY_ID.get(row.id)
            if task is None:
                raise InputError(f"task {row.id!r} is not a localweb task")
            results = task.contract.check(row.prediction, site_record(row))
            clauses = [
                {"clause": r.clause, "passed": r.passed, "reason": r.reason} for r in results
            ]
            failed = [r.clause for r in results if not r.passed]
            answer_ok = all(
                r.passed
                for r, clause in zip(results, task.contract.clauses, strict=True)
                if isinstance(clause, AnswerIs | AnswerContains)
            )
            details = {"clauses": clauses, "failed": failed, "answer_ok": answer_ok}
            grades.append(Grade(0.0 if failed else 1.0, not failed, details))
        return grades

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        return {
            # The agent said the right thing but the server shows it did not do it.
            "n_claimed_not_done": sum(
                1 for e in entries if e.details.get("answer_ok") and e.details.get("failed")
            ),
        }

    def print_details(self, scores: Scores, console: Console) -> None:
        table = Table(title="localweb contracts")
        for column in ("task", "group", "status", "result", "failed clauses"):
            table.add_column(column, overflow="fold")
        for entry in scores.per_task:
            failed = entry.details.get("failed", [])
            reasons = {c["clause"]: c["reason"] for c in entry.details.get("clauses", [])}
            text = "; ".join(f"{name} ({reasons[name]})" for name in failed)
            if entry.details.get("not_graded"):
                text = f"not graded: {entry.details['not_graded']}"
            table.add_row(
                entry.id,
                entry.category or "",
                entry.status,
                "pass" if entry.correct else "FAIL",
                text,
            )
        console.print(table)


def make_grader(options: object, predictions: Path) -> LocalwebGrader:
    """The suite's grader (it takes no options)."""
    return LocalwebGrader()


# The suite's -grade console script (pyproject.toml's [project.scripts]).
main = grade_main("localweb")

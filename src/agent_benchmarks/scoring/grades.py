"""What a suite's grader is and gives: the :class:`Grader` interface and one attempt's
:class:`Grade`. Apart from the scorecard (:mod:`.scorecard`, which reads a predictions file
and writes scores.json with rich's tables), so that a suite's grade module, which is also its
``-grade`` script, starts without loading it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.scoring.upstream_view import UpstreamGrade, UpstreamLayout


@dataclass(slots=True)
class Grade:
    """The grade of one attempt, as a suite's grader decides it."""

    score: float
    correct: bool
    details: dict[str, Any] = field(default_factory=dict)
    # The same answer under upstream's matching; None: the official grade stands in (WebBench,
    # whose judge is the same in both views).
    upstream: UpstreamGrade | None = None


class Grader(Protocol):
    """A suite's grader. Optional hooks, looked up by name where they are used:
    ``readiness_problem() -> str | None`` (why grading would fail before it starts, such as
    a judge without its API key: a run that grades at the end refuses to start) and
    ``print_details(scores, console)`` (more tables after the summary) and ``warnings() ->
    list[str]`` (what it has to say once every row is graded; goes in scores.json); and
    optional attributes ``pays_per_row`` (True for a judge that costs money: the whole file
    is checked before its first row is graded) and ``answers_only`` (True when ``grade``
    reads nothing of a row but its ``prediction`` and ``gold`` and does no I/O: a large
    file's batches are then graded in a second process while the file is read)."""

    suite: str
    needs_gold: bool
    # Suite fields to break results down by ("level", "difficulty", "web_name").
    group_fields: tuple[str, ...]
    # How upstream's harness summarises this suite (scores.json's upstream_view); None for a
    # suite upstream does not have.
    upstream: UpstreamLayout | None

    def info(self) -> dict[str, Any]:
        """What grader this is (scorer, judge model, prompt hash...): goes in scores.json."""
        ...

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        """Grade, in order, rows that completed (status ok or empty) and rows that failed
        (timeout or error) after printing an answer. A run's rows come in several batches
        (bounded in rows and bytes), in file order."""
        ...

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        """Suite metrics over one attempt's entries (every selected task present)."""
        ...


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0

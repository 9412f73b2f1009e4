"""The upstream-comparable view: upstream's scores.json summary over graded rows.

lightpanda-io/agent-benchmarks grades GAIA and AssistantBench with its own lenient
matching (its ``gaia/grade.py`` and ``assistantbench/grade.py``), not with the benchmarks'
official scorers, and summarises over the rows of its predictions file. Each suite upstream
has reproduces that matching in its own package (``gaia/upstream_match.py``,
``assistantbench/upstream_match.py``; WebBench's judge is the same in both views), written
from what upstream's code does, so a run here can be set beside a number upstream
published, and hands its grader an :class:`UpstreamLayout`. This module is the part they
share. It never replaces the official scorers: scores.json keeps them as the headline and
carries this view apart, labelled, as ``upstream_view``.

The summary (:func:`upstream_view`) has upstream's keys and meanings: ``n_tasks`` is the
rows in the file (for a run resumed here, the final row of each attempt: upstream never
wrote two rows for one task), tasks without a row are not counted, ``timeouts`` counts
timed-out rows, ``n_answered`` rows with a non-blank prediction whatever their status,
``avg_duration_s`` and the usage averages are over the rows. Every row is graded on what it
printed, failed attempts too, as upstream does. An attempt that failed without printing
anything scores 0 here as in the official view (upstream would give 1 only if the gold were
empty too, which no GAIA or AssistantBench gold is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from agent_benchmarks.records.schema import INFRA_STATUSES, TaskScore

UPSTREAM_LABEL = "upstream-comparable view"
UPSTREAM_NOTE = (
    "lightpanda-io/agent-benchmarks' own lenient matching and summary, reimplemented: not the "
    "official scorer (the official scores are the headline of this file); the denominator is "
    "the rows in the file, so selected tasks without a row are not counted"
)


@dataclass(frozen=True, slots=True)
class UpstreamGrade:
    """One attempt as upstream's grader scores it."""

    score: float
    correct: bool
    # GAIA only: the score with numbers within 1% counted 0.5 (upstream's accuracy_soft).
    score_soft: float | None = None


class Graded(NamedTuple):
    entry: TaskScore  # the official entry: status, group fields, duration, usage, details
    grade: UpstreamGrade


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class UpstreamLayout:
    """How upstream's scores.json of one suite is laid out (a grader's ``upstream``)."""

    group_field: str  # our field the breakdown is by
    group_key: str  # upstream's name for the breakdown
    no_group: str  # upstream's group name for a row without the field
    metrics: Callable[[Sequence[Graded]], dict[str, Any]]
    has_usage: bool  # upstream's WebBench summary has no usage averages


def _has_usage(entry: TaskScore) -> bool:
    usage = entry.usage
    return usage.turns > 0 or usage.total_tokens > 0 or usage.cost_usd is not None


def _usage_averages(entries: Sequence[TaskScore]) -> dict[str, Any]:
    """Upstream's usage keys, over the rows that recorded usage (its ``n_with_usage``).
    Its ``avg_final_turn_input_tokens`` is left out: no runner here records that figure."""
    with_usage = [e.usage for e in entries if _has_usage(e)]
    if not with_usage:
        return {"n_with_usage": 0}
    costs = [u.cost_usd for u in with_usage if u.cost_usd is not None]
    return {
        "n_with_usage": len(with_usage),
        "avg_input_tokens": _mean([u.input_tokens for u in with_usage]),
        "avg_cache_read_input_tokens": _mean([u.cache_read_tokens for u in with_usage]),
        "avg_cache_creation_input_tokens": _mean([u.cache_write_tokens for u in with_usage]),
        "avg_output_tokens": _mean([u.output_tokens for u in with_usage]),
        "avg_num_turns": _mean([u.turns for u in with_usage]),
        "avg_total_cost_usd": _mean(costs) if costs else None,
        "total_cost_usd": sum(costs) if costs else None,
    }


def upstream_view(
    layout: UpstreamLayout, graded: Sequence[tuple[TaskScore, UpstreamGrade]]
) -> dict[str, Any]:
    """scores.json's ``upstream_view`` from every final row's official entry and upstream
    grade (no entries for tasks without a row), laid out as the suite's ``layout``."""
    field = layout.group_field
    items: list[Graded] = []
    groups: dict[str, list[Graded]] = {}
    failed: list[Graded] = []
    per_task = []
    n_answered = timeouts = 0
    # One pass: this runs once per attempt of a run, a hundred thousand times for a big one.
    for entry, grade in graded:
        item = Graded(entry, grade)
        items.append(item)
        values = entry.__dict__
        group = values[field]
        groups.setdefault(str(group) if group else layout.no_group, []).append(item)
        status = values["status"]
        answered = bool((values["prediction"] or "").strip())
        n_answered += answered
        timeouts += status == "timeout"
        if answered and status in INFRA_STATUSES:
            failed.append(item)
        line: dict[str, Any] = {
            "id": values["id"],
            "attempt": values["attempt"],
            field: group,
            "score": grade.score,
        }
        if grade.score_soft is not None:
            line["score_soft"] = grade.score_soft
        line["correct"] = grade.correct
        line["status"] = status
        line["timed_out"] = status == "timeout"
        line["duration_s"] = values["duration_s"]
        per_task.append(line)
    return {
        "label": UPSTREAM_LABEL,
        "note": UPSTREAM_NOTE,
        "n_tasks": len(items),
        "n_answered": n_answered,
        "timeouts": timeouts,
        **layout.metrics(items),
        layout.group_key: {
            name: {"n": len(members), **layout.metrics(members)}
            for name, members in sorted(groups.items())
        },
        "avg_duration_s": _mean([i.entry.duration_s for i in items]),
        **(_usage_averages([i.entry for i in items]) if layout.has_usage else {}),
        "failed_with_answer": {
            "n": len(failed),
            "n_correct": sum(1 for i in failed if i.grade.correct),
            "ids": [i.entry.id for i in failed],
        },
        "per_task": per_task,
    }

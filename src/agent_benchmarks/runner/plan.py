"""Which attempts a run (or a resumed run) still owes.

A run owes one final row per (task, attempt) for every task in its manifest and every
attempt up to ``repeat``. A row with status ok, empty or budget settles its attempt; a
timeout or error row is an infrastructure failure, retried on resume unless the user keeps
it, except one an episode's injected fault caused (``injected_fault``): that is what the
run measures, and a retry would inject the fault again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from agent_benchmarks.records.schema import INFRA_STATUSES, PredictionRow

# An error the run's own injected fault caused (runner/engine.py): settled, not retried.
INJECTED_FAULT = "injected_fault"


@dataclass(frozen=True)
class AttemptKey:
    task_id: str
    attempt: int  # 1..repeat
    try_number: int  # 1 for the first try of this attempt, 2 after one infra failure, ...


@dataclass
class Plan:
    todo: list[AttemptKey]
    settled: int  # attempts with a final ok/empty row already
    kept_failures: int  # infra rows kept as final (--no-retry-errors)
    retried: int  # infra rows that will be retried


def plan_attempts(
    task_ids: list[str],
    repeat: int,
    existing: Iterable[PredictionRow] = (),
    retry_errors: bool = True,
) -> Plan:
    """The attempts to run, attempt-major (every task's attempt 1, then attempt 2, ...), so a
    run cut short still has a complete first pass to show. ``existing`` may be a stream:
    only each row's status is kept."""
    statuses_by_key: dict[tuple[str, int], list[str]] = defaultdict(list)
    for row in existing:
        settled_error = row.status == "error" and row.error_class == INJECTED_FAULT
        statuses_by_key[(row.id, row.attempt)].append("settled" if settled_error else row.status)
    todo: list[AttemptKey] = []
    settled = kept = retried = 0
    for attempt in range(1, repeat + 1):
        for task_id in task_ids:
            rows = statuses_by_key.get((task_id, attempt), [])
            if not rows:
                todo.append(AttemptKey(task_id, attempt, 1))
            elif rows[-1] not in INFRA_STATUSES:
                settled += 1
            elif retry_errors:
                retried += 1
                todo.append(AttemptKey(task_id, attempt, len(rows) + 1))
            else:
                kept += 1
    return Plan(todo=todo, settled=settled, kept_failures=kept, retried=retried)

"""The recovery view: each run that injected a fault into its episodes (``--fault``) beside
the same stack's clean run on the same tasks and budget.

The evidence policy (seed 003): recovery is not "the library did not throw"; it is a fault
injected during a realistic episode and the same final task contract still passing within
budget. So per stack and fault the view gives the contract's pass rate over the attempts in
which the fault fired, beside the clean rate on the same tasks, and what recovering cost:
the extra time and tokens per attempt (per task, fired attempts' mean minus the clean
run's; the median over tasks). A clean pair is a run of the same stack (backend, engine,
model, surface, search), tasks and budgets with ``--fault none`` (preferred: it took the
same path) or without a fault.

Labels follow the policy's sample counts: a cell is a "recovery claim" only when both runs
are live or recorded, a clean pair exists and the fault fired in at least
:data:`MIN_FIRED` attempts, with as many clean attempts on the same tasks; a per-task
chart also needs :data:`MIN_FIRED_PER_TASK` fired attempts per task (and as many clean
ones). Anything else is "diagnostic", with why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_benchmarks.report import stats
from agent_benchmarks.report.eligibility import HEADLINE_MODES, budgets_of
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.schema import RecoveryCell
from agent_benchmarks.report.stacks import stack_of

MIN_FIRED = 10  # the seed's N for an aggregate claim
MIN_FIRED_PER_TASK = 20  # and for a per-task chart

RECOVERY_RULE = (
    "Recovery: the contract's pass rate over the attempts in which the injected fault fired, "
    "beside the same stack's clean run (--fault none, or no fault) on the same tasks and "
    "budget; extra time and tokens are per task, fired minus clean, the median over tasks. "
    f"A recovery claim needs live or recorded runs, a clean pair and at least {MIN_FIRED} "
    f"fired and {MIN_FIRED} clean attempts ({MIN_FIRED_PER_TASK} each per task for a per-task "
    "chart); anything else is diagnostic."
)


def fault_of(run: LoadedRun) -> dict[str, Any] | None:
    """The fault a run injected (manifest ``settings.session.fault``), None without one."""
    if run.manifest is None:
        return None
    session = run.manifest.settings.get("session")
    fault = session.get("fault") if isinstance(session, dict) else None
    return fault if isinstance(fault, dict) else None


def _identity(run: LoadedRun) -> tuple[Any, ...]:
    stack = stack_of(run)
    budgets = sorted(budgets_of(run).items())
    return (run.suite, stack.backend, stack.engine, stack.model, stack.surface, stack.search,
            tuple(sorted(run.task_ids)), tuple(budgets))  # fmt: skip


@dataclass
class _Attempt:
    correct: bool
    duration_s: float
    tokens: int
    fired: bool


def _attempts(run: LoadedRun) -> dict[str, list[_Attempt]]:
    """Each task's graded attempts, with their time, tokens and whether the fault fired."""
    rows = run.final_by_key
    out: dict[str, list[_Attempt]] = defaultdict(list)
    for entry in run.entries:
        row = rows.get((entry.id, entry.attempt))
        out[entry.id].append(
            _Attempt(
                correct=entry.correct,
                duration_s=row.duration_s if row else entry.duration_s,
                tokens=row.usage.total_tokens if row else entry.usage.total_tokens,
                fired=bool(row and row.fault_fired),
            )
        )
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def recovery_view(keyed: Sequence[tuple[str, LoadedRun]]) -> list[RecoveryCell]:
    """A cell per faulted run among ``keyed`` (one suite's compared runs)."""
    clean: dict[tuple[Any, ...], list[tuple[str, LoadedRun]]] = defaultdict(list)
    for key, run in keyed:
        fault = fault_of(run)
        if fault is None or fault.get("kind") == "none":
            clean[_identity(run)].append((key, run))
    cells = []
    for key, run in keyed:
        fault = fault_of(run)
        if fault is None or fault.get("kind") == "none":
            continue
        pairs = clean.get(_identity(run), [])
        # --fault none took the same path as the faulted run: the better pair
        pairs = sorted(pairs, key=lambda p: fault_of(p[1]) is None)
        cells.append(_cell(key, run, fault, pairs[0] if pairs else None))
    return cells


def _cell(
    key: str, run: LoadedRun, fault: dict[str, Any], pair: tuple[str, LoadedRun] | None
) -> RecoveryCell:
    faulted = _attempts(run)
    fired = {task: [a for a in tried if a.fired] for task, tried in faulted.items()}
    fired = {task: tried for task, tried in fired.items() if tried}
    n_fired = sum(len(tried) for tried in fired.values())
    successes = sum(a.correct for tried in fired.values() for a in tried)
    cell = RecoveryCell(
        key=key,
        clean_key=pair[0] if pair else None,
        fault=str(fault.get("kind")),
        at=fault.get("at"),
        n_tasks=len(fired),
        n_fired=n_fired,
        n_attempts=sum(len(tried) for tried in faulted.values()),
        n_successes=successes,
        pass_rate=successes / n_fired if n_fired else None,
    )
    reasons: list[str] = []
    clean_per_task: dict[str, list[_Attempt]] = {}
    if pair is not None:
        clean_attempts = _attempts(pair[1])
        clean_per_task = {t: clean_attempts[t] for t in fired if clean_attempts.get(t)}
        done = [a for tried in clean_per_task.values() for a in tried]
        cell.clean_attempts = len(done)
        cell.clean_rate = sum(a.correct for a in done) / len(done) if done else None
        both = [t for t in fired if t in clean_per_task]
        cell.extra_duration_s = stats.median(
            [
                _mean([a.duration_s for a in fired[t]])
                - _mean([a.duration_s for a in clean_per_task[t]])
                for t in both
            ]
        )
        cell.extra_tokens = stats.median(
            [
                _mean([a.tokens for a in fired[t]]) - _mean([a.tokens for a in clean_per_task[t]])
                for t in both
            ]
        )
    else:
        reasons.append("no clean run of this stack on the same tasks and budget")
    for which, loaded in (("faulted", run), ("clean", pair[1] if pair else None)):
        mode = loaded.manifest.mode if loaded is not None and loaded.manifest else None
        if loaded is not None and mode not in HEADLINE_MODES:
            reasons.append(f"the {which} run's mode is {mode or 'unknown'}, not live or recorded")
    if n_fired < MIN_FIRED:
        reasons.append(f"the fault fired in {n_fired} attempt(s); a claim needs {MIN_FIRED}")
    if pair is not None and cell.clean_attempts < MIN_FIRED:
        # the clean rate is the other half of the claim: an aggregate too
        reasons.append(
            f"the clean run has {cell.clean_attempts} attempt(s) on these tasks; a claim "
            f"needs {MIN_FIRED}"
        )
    cell.reasons = reasons
    cell.label = "diagnostic" if reasons else "recovery claim"
    thin = [t for t, tried in fired.items() if len(tried) < MIN_FIRED_PER_TASK]
    thin += [t for t, tried in clean_per_task.items() if len(tried) < MIN_FIRED_PER_TASK]
    if thin or not fired:
        cell.per_task_reasons = [
            f"{len(set(thin))} task(s) with fewer than {MIN_FIRED_PER_TASK} fired or clean "
            "attempts (--repeat)"
        ]
    cell.per_task_chart = not reasons and not cell.per_task_reasons
    return cell

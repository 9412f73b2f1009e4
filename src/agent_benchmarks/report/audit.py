"""The leak audit of a loaded run: every row's hits (found as the row was read,
:func:`leaks.row_hits`) gathered, and what they do to its accuracy."""

from __future__ import annotations

from agent_benchmarks.report.leaks import LOCAL_CACHE_PATTERNS, distinctive, mirror_patterns
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.schema import LeakAudit


def audit_run(run: LoadedRun) -> LeakAudit:
    """Audit every row (retried ones too: a leak in a retried attempt is still a leak).
    Each row's hits were found as it was read (:func:`row_hits`, ``RowSummary.leak_hits``)."""
    mirrors = mirror_patterns(run.suite)
    hits = [hit for row in run.rows for hit in row.leak_hits]
    flagged = {(h.task_id, h.attempt) for h in hits}
    ids = {r.id for r in run.rows}
    audit = LeakAudit(
        run_dir=str(run.run_dir),
        suite=run.suite,
        n_rows=len(run.rows),
        n_calls=sum(r.n_calls for r in run.rows),
        patterns=[*mirrors, *LOCAL_CACHE_PATTERNS],
        task_ids_not_checked=sum(1 for i in ids if not distinctive(i)),
        hits=hits,
        flagged_tasks=sorted({task_id for task_id, _ in flagged}),
        n_flagged_attempts=len(flagged),
    )
    entries = run.entries
    if entries:
        audit.accuracy_strict = sum(e.correct for e in entries) / len(entries)
        audit.accuracy_flagged_wrong = sum(
            e.correct and (e.id, e.attempt) not in flagged for e in entries
        ) / len(entries)
    return audit

"""What a stack's attempts cost the machine, across its rows: peak memory (median, p90),
CPU per success, memory per success, each role's share, what the browser fetched, and how
many attempts of the stack fit in the machine's memory at once.

Figures come from each row's ``resources`` (isolation/resources.py measured them) and
compare only between machines of one kind (``Manifest.machine``; eligibility's
``machine`` reason says when they do not). Peaks counted by a cgroup (every page charged
to the attempt, page cache included, shared libraries charged to whoever loaded them
first) and peaks summed from PSS samples are different measures: where the compared
rows' counters differ, every stack is shown with its sampled PSS peaks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from agent_benchmarks.isolation.resources import PSS_SAMPLED
from agent_benchmarks.report import stats
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.rows import RowResources, RowSummary
from agent_benchmarks.report.schema import FetchedSummary, ResourceSummary, RoleSummary

PEAK_QUANTILE = 0.9
PEAKS_DIFFER = (
    "the compared runs count peaks differently (a cgroup's counter against sampled PSS): "
    "every stack is shown with its sampled PSS peaks"
)


def _measured(rows: Iterable[RowSummary]) -> list[RowResources]:
    return [r.resources for r in rows if r.resources is not None]


def peak_sources(runs: Iterable[LoadedRun]) -> set[str]:
    """The counters the runs' peaks come from."""
    return {use.peak_source for run in runs for use in _measured(run.rows) if use.peak_source}


def machine_kinds(run: LoadedRun) -> set[str]:
    """The kinds of machine (``Machine.kind_id``) a run's figures come from: its manifest's
    and each measured row's (a cluster's nodes may be of other kinds)."""
    kinds = {use.machine for use in _measured(run.rows) if use.machine}
    if run.manifest is not None and run.manifest.machine is not None:
        kinds.add(run.manifest.machine.kind_id)
    return kinds


def resource_summary(run: LoadedRun, successes: int, pss_only: bool) -> ResourceSummary | None:
    """The stack's figures over every row of ``run`` (None when no row has any); with
    ``pss_only``, its peaks are the sampled PSS sums whatever counted them otherwise."""
    measured = _measured(run.rows)
    if not measured:
        return None
    sampled = [use for use in measured if use.cpu_s is not None]
    if pss_only:
        peaks = [float(use.pss_peak_bytes) for use in sampled if use.pss_peak_bytes is not None]
        sources = {PSS_SAMPLED} if peaks else set()
    else:
        peaks = [float(use.peak_bytes) for use in sampled if use.peak_bytes is not None]
        sources = {use.peak_source for use in sampled if use.peak_source}
    cpu = [use.cpu_s for use in sampled if use.cpu_s is not None]
    own = [use.sampler_cpu_s for use in sampled if use.sampler_cpu_s is not None]
    p90 = stats.quantile(peaks, PEAK_QUANTILE)
    machine = run.manifest.machine if run.manifest is not None else None
    kinds = {use.machine for use in sampled if use.machine}
    same_machine = machine is not None and kinds <= {machine.kind_id}
    return ResourceSummary(
        n_rows=len(run.rows),
        n_measured=len(sampled),
        peak_source=" + ".join(sorted(sources)) or None,
        peak_note=PEAKS_DIFFER if pss_only else None,
        peak_median_bytes=stats.median(peaks),
        peak_p90_bytes=p90,
        memory_per_success_bytes=sum(peaks) / successes if peaks and successes else None,
        cpu_s_total=sum(cpu) if cpu else None,
        cpu_s_median=stats.median(cpu),
        cpu_s_per_success=sum(cpu) / successes if cpu and successes else None,
        sampler_cpu_share=sum(own) / sum(cpu) if own and sum(cpu) > 0 else None,
        machine=machine.kind if same_machine and machine is not None else None,
        machine_memory_bytes=machine.memory_bytes if same_machine and machine else None,
        fit_at_once=math.floor(machine.memory_bytes / p90)
        if same_machine and machine is not None and p90
        else None,
        roles=_roles(sampled),
        **_fetched(measured, successes),
    )


def _roles(measured: list[RowResources]) -> list[RoleSummary]:
    names = sorted({name for use in measured for name in use.roles})
    out = []
    for name in names:
        figures = [use.roles[name] for use in measured if name in use.roles]
        peaks = [float(peak) for peak, _ in figures]
        note = next((use.notes[name] for use in measured if name in use.notes), None)
        out.append(
            RoleSummary(
                role=name,
                n_attempts=len(figures),
                peak_median_bytes=stats.median(peaks),
                peak_p90_bytes=stats.quantile(peaks, PEAK_QUANTILE),
                cpu_s_median=stats.median([cpu for _, cpu in figures]),
                note=note,
            )
        )
    return out


def _fetched(measured: list[RowResources], successes: int) -> dict[str, object]:
    counts = [use.fetched for use in measured if use.fetched is not None]
    if not counts:
        return {
            "fetched": None,
            "fetched_not_measured": "no proxy or site log saw the browser's requests (the "
            "live web; --web record measures them)",
        }
    return {
        "fetched": FetchedSummary(
            n_measured=len(counts),
            requests_median=stats.median([float(n) for n, _, _ in counts]),
            bytes_median=stats.median([float(b) for _, b, _ in counts]),
            pages_median=stats.median([float(p) for _, _, p in counts]),
            bytes_per_success=sum(b for _, b, _ in counts) / successes if successes else None,
        )
    }

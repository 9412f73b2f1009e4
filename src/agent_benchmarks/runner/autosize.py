"""``--workers auto``: as many attempts at once as this machine holds, from what the
stack was measured to cost; and how a run's resource figures are measured, for its manifest.

An attempt's cost is read from rows measured before on a machine of this kind (each row's
``resources``, isolation/resources.py): the run itself when resumed, else the newest earlier
run of the same stack beside the run folder (``results/<suite>/...`` keeps a stack's runs
together). Without one, the run's first attempt runs alone as the probe, and its row gives
the cost. The pool is then

    min(memory available now / the attempt peak's 90th percentile,
        cores / the CPU an attempt keeps busy (median CPU seconds per second of attempt))

at least 1 and at most the attempts left, recorded in the manifest
(``settings.workers_auto``). The memory cap per attempt (``--memory-max-mb``) stays the
safety net: a stack that needs more than it was measured at is cut by its cap, not by the
machine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import REPLY_TOKENS_HOW
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.process import memory_cap_method
from agent_benchmarks.isolation.resources import measurement, this_machine
from agent_benchmarks.records.schema import Machine, Manifest, PredictionRow
from agent_benchmarks.records.storage import PredictionsStream
from agent_benchmarks.scoring.scorecard import read_manifest
from agent_benchmarks.spec.run_spec import RunSpec

# What the rows say of the browser's fetching, and where it comes from.
FETCHED_HOW = (
    "requests, response body bytes and HTML pages (2xx) the stack's browser fetched: from "
    "the web archive's proxy under --web record|replay, from the localweb site's own request "
    "log on localweb; elsewhere not measured (never zero)"
)
PEAK_QUANTILE = 0.9


def resources_manifest(spec: RunSpec) -> dict[str, Any]:
    """``settings.resources`` of a new run: how its figures are measured."""
    interval = (spec.resource_sample_ms or 0) / 1000 or None
    cap = memory_cap_method() if spec.memory_max_mb else "no memory cap"
    return measurement(interval, cap) | {"fetched": FETCHED_HOW, "reply_tokens": REPLY_TOKENS_HOW}


@dataclass(frozen=True)
class StackCost:
    """What one attempt of a stack cost on this kind of machine."""

    peak_bytes: int  # the attempts' peaks, their 90th percentile
    cpu_share: float  # CPU seconds per second of attempt, the median
    n_attempts: int
    source: str


def cost_of(rows: Iterable[PredictionRow], machine: Machine, source: str) -> StackCost | None:
    """The cost the measured ``rows`` of ``machine``'s kind say; None without any."""
    peaks: list[float] = []
    shares: list[float] = []
    for row in rows:
        use = row.resources
        if use is None or use.peak_bytes is None or use.machine != machine.kind_id:
            continue
        peaks.append(use.peak_bytes)
        if use.cpu_s is not None and row.duration_s > 0:
            shares.append(use.cpu_s / row.duration_s)
    if not peaks or max(peaks) <= 0:
        return None
    share = _quantile(shares, 0.5) if shares else 0.0
    return StackCost(int(_quantile(peaks, PEAK_QUANTILE)), share, len(peaks), source)


def _quantile(values: list[float], q: float) -> float:
    """The linearly interpolated quantile (numpy's default, which compare uses: the run
    process does not load numpy)."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def earlier_cost(run_dir: Path, backend: str, machine: Machine) -> StackCost | None:
    """The stack's cost from the run itself (a resume), else from the newest earlier run of
    ``backend`` beside it, measured on a machine of this kind."""
    folders = [run_dir] if run_dir.is_dir() else []
    siblings = []
    for folder in run_dir.parent.iterdir() if run_dir.parent.is_dir() else ():
        manifest = _manifest_of(folder) if folder != run_dir and folder.is_dir() else None
        if manifest is None or manifest.machine is None or manifest.backend != backend:
            continue
        if manifest.machine.kind_id == machine.kind_id:
            siblings.append((manifest.started_at, folder))
    folders += [folder for _, folder in sorted(siblings, reverse=True)]
    for folder in folders:
        predictions = folder / "predictions.jsonl"
        if not predictions.exists():
            continue
        try:
            found = cost_of(PredictionsStream(predictions), machine, f"run {folder}")
        except (InputError, OSError):
            continue  # not a readable run: not one to learn from
        if found is not None:
            return found
    return None


def _manifest_of(folder: Path) -> Manifest | None:
    try:
        return read_manifest(folder)
    except (InputError, OSError):
        return None


class PoolSizing:
    """``--workers auto`` for one run: the stack's cost, found now or by a probe attempt,
    and the pool it makes (see the module)."""

    def __init__(self, spec: RunSpec, run_dir: Path, backend: str):
        if spec.executor.kind != "local":
            raise InputError(
                "--workers auto sizes the pool from this machine's cores and memory: give "
                "--workers N for a cluster (--executor ray)"
            )
        self.machine = this_machine()
        self.cost = earlier_cost(run_dir, backend, self.machine)
        self.record: dict[str, Any] = {}

    @property
    def probe_needed(self) -> bool:
        return self.cost is None

    def measure_probe(self, rows: Iterable[PredictionRow]) -> None:
        """The cost from the probe attempt's row (none when it was not measured: it never
        ran, or sampling is off; the run then keeps one worker)."""
        self.cost = cost_of(rows, self.machine, "a probe attempt (this run's first, run alone)")

    def summary(self) -> str:
        """The sizing in one line, for the terminal."""
        r = self.record
        if "from" not in r:
            return r.get("why", "")
        return (
            f"from {r['from']}: p90 peak {r['peak_bytes_p90'] / (1 << 20):.0f} MB, "
            f"{r['fit_by_memory']} fit in {r['memory_available_bytes'] / (1 << 30):.1f} GB "
            f"available; {r['cpu_share_median']:.2f} CPU per attempt, {r['fit_by_cpu']} fit "
            f"on {r['cores']} cores"
        )

    def workers(self, attempts: int) -> int:
        """The pool for ``attempts`` attempts, recorded in :attr:`record`."""
        if self.cost is None:
            self.record = {
                "workers": 1,
                "why": "no measured attempt of this stack on this kind of machine, and the "
                "probe attempt gave no figure (--resource-sample-ms 0, or it never ran)",
            }
            return 1
        import psutil  # here: a run that sizes nothing does not load it

        cost = self.cost
        available = psutil.virtual_memory().available
        by_memory = max(1, available // cost.peak_bytes)
        cores = self.machine.cores
        by_cpu = max(1, math.floor(cores / cost.cpu_share)) if cost.cpu_share > 0 else by_memory
        workers = max(1, min(by_memory, by_cpu, attempts))
        self.record = {
            "workers": workers,
            "from": cost.source,
            "attempts_measured": cost.n_attempts,
            "peak_bytes_p90": cost.peak_bytes,
            "cpu_share_median": round(cost.cpu_share, 3),
            "memory_available_bytes": available,
            "cores": cores,
            "fit_by_memory": by_memory,
            "fit_by_cpu": by_cpu,
            "how": "min(memory available / the attempts' p90 peak, cores / the median CPU "
            "seconds per second of attempt), at least 1, at most the attempts to run; the "
            "memory cap per attempt stays the safety net",
        }
        return workers

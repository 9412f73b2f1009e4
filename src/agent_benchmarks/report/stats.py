"""The statistics of a comparison: bootstrap intervals over tasks, pass@k and pass^k.

Tasks, not attempts, are the unit of resampling: attempts at one task are correlated (the
same question, the same pages), so resampling attempts would make intervals too narrow.
Every interval starts a fresh generator from the report's seed, so a number depends only on
its own data and the seed (recorded in the output), never on what else was compared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agent_benchmarks.report.schema import Interval

DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 10_000
CONFIDENCE = 0.95
# Resamples drawn per batch: bounds memory at (batch x tasks) indices for large suites.
_BATCH = 1_000


def median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None


def quantile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated quantile (numpy's default), None for no values."""
    return float(np.quantile(values, q)) if len(values) else None


def bootstrap_mean(
    values: Sequence[float],
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = CONFIDENCE,
) -> Interval:
    """Mean of ``values`` (one per task) with a percentile bootstrap interval."""
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return Interval(estimate=None, low=None, high=None, level=level)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, _BATCH):
        size = min(_BATCH, resamples - start)
        picks = rng.integers(0, n, size=(size, n))
        means[start : start + size] = data[picks].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return Interval(estimate=float(data.mean()), low=float(low), high=float(high), level=level)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k attempts drawn from n (c correct) is correct.

    The unbiased estimator of Chen et al. (2021): 1 - C(n - c, k) / C(n, k).
    """
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all of k attempts drawn from n (c correct) are correct: pass^k, the
    reliability measure of tau-bench, C(c, k) / C(n, k)."""
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    return math.comb(c, k) / math.comb(n, k)


def pass_curves(per_task: Sequence[tuple[int, int]]) -> tuple[dict[int, float], dict[int, float]]:
    """pass@k and pass^k averaged over tasks, for k from 1 to the fewest attempts any task
    had. ``per_task`` holds (attempts, correct) per task."""
    if not per_task:
        return {}, {}
    k_max = min(n for n, _ in per_task)
    at: dict[int, float] = {}
    hat: dict[int, float] = {}
    for k in range(1, k_max + 1):
        at[k] = sum(pass_at_k(n, c, k) for n, c in per_task) / len(per_task)
        hat[k] = sum(pass_hat_k(n, c, k) for n, c in per_task) / len(per_task)
    return at, hat

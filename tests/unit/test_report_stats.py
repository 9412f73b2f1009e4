"""The report's statistics: pass@k (unbiased), pass^k, bootstrap intervals over tasks."""

from __future__ import annotations

import math

import pytest

from agent_benchmarks.report.stats import (
    bootstrap_mean,
    median,
    pass_at_k,
    pass_curves,
    pass_hat_k,
    quantile,
)


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # n=5 attempts, c=2 correct. k=1: the plain rate. k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # k=4: any 4 of 5 must include a correct one when only 3 are wrong: C(3,4) = 0.
    assert pass_at_k(5, 2, 4) == pytest.approx(1.0)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0


def test_pass_hat_k_needs_every_draw_right() -> None:
    # C(2,2)/C(5,2) = 1/10; with 3 drawn from 2 correct it cannot happen.
    assert pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_hat_k(5, 2, 3) == 0.0
    assert pass_hat_k(4, 4, 4) == 1.0


def test_k_outside_the_attempts_is_refused() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 0)


def test_pass_curves_average_over_tasks_up_to_the_fewest_attempts() -> None:
    at, hat = pass_curves([(3, 3), (3, 0), (2, 1)])
    assert sorted(at) == [1, 2]  # one task has only 2 attempts
    assert at[1] == pytest.approx((1 + 0 + 0.5) / 3)
    assert at[2] == pytest.approx((1 + 0 + 1) / 3)
    assert hat[2] == pytest.approx((1 + 0 + 0) / 3)
    assert pass_curves([]) == ({}, {})


def test_bootstrap_is_reproducible_and_seed_dependent() -> None:
    values = [0, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1]
    a = bootstrap_mean(values, seed=7, resamples=2_000)
    assert a == bootstrap_mean(values, seed=7, resamples=2_000)
    # With 0/1 data the percentiles snap to multiples of 1/12; continuous data shows the seed.
    spread = [i**1.5 / 7 for i in range(12)]
    assert bootstrap_mean(spread, seed=7, resamples=2_000) != bootstrap_mean(
        spread, seed=8, resamples=2_000
    )
    assert a.estimate == pytest.approx(8 / 12)
    assert a.low is not None and a.high is not None
    assert a.low < a.estimate < a.high
    # A mean of 12 Bernoulli(2/3) tasks: the interval is wide, about +-0.27.
    assert 0.35 < a.low < 0.5 and 0.83 < a.high <= 1.0


def test_bootstrap_degenerate_cases() -> None:
    same = bootstrap_mean([1.0] * 5, resamples=100)
    assert (same.estimate, same.low, same.high) == (1.0, 1.0, 1.0)
    empty = bootstrap_mean([], resamples=100)
    assert empty.estimate is None and empty.low is None and empty.high is None


def test_bootstrap_batches_give_the_same_answer_as_one_draw() -> None:
    # 2,500 resamples cross the batch boundary (1,000): the result must not depend on it.
    values = list(range(30))
    interval = bootstrap_mean(values, seed=1, resamples=2_500)
    assert interval.estimate == pytest.approx(14.5)
    assert interval.low is not None and interval.high is not None
    assert 11 < interval.low < 14.5 < interval.high < 18


def test_median_and_quantile() -> None:
    assert median([3, 1, 2]) == 2
    assert median([]) is None
    assert quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == pytest.approx(9.1)
    assert quantile([], 0.9) is None
    assert math.isclose(quantile([5.0], 0.9) or 0, 5.0)

"""The percentile bootstrap of a mean over queries, and the normal interval."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evaluation.metrics.bootstrap import bootstrap_mean, normal_interval, outcomes_from_counts


def _hits(hits: int, queries: int) -> np.ndarray:
    return outcomes_from_counts({1.0: hits, 0.0: queries - hits})


def test_the_interval_is_deterministic_for_a_seed() -> None:
    outcomes = _hits(30, 100)
    first = bootstrap_mean(outcomes, 1000, seed=3)
    assert bootstrap_mean(outcomes, 1000, seed=3) == first
    # The order of the queries does not matter: only their multiset is resampled.
    assert bootstrap_mean(outcomes[::-1], 1000, seed=3) == first
    assert bootstrap_mean(outcomes, 1000, seed=4) != first
    assert (first.samples, first.n, first.seed, first.level) == (1000, 100, 3, 0.95)


@pytest.mark.parametrize(("hits", "queries"), [(1, 3), (30, 100), (99, 100), (2190, 10000)])
def test_the_interval_contains_the_point_estimate(hits: int, queries: int) -> None:
    result = bootstrap_mean(_hits(hits, queries), 500, seed=0)
    assert result.estimate == pytest.approx(hits / queries)
    assert result.low <= result.estimate <= result.high
    assert result.low >= 0.0
    assert result.high <= 1.0


def test_the_interval_narrows_with_more_queries() -> None:
    widths = [
        (result.high - result.low)
        for result in (bootstrap_mean(_hits(3 * n // 10, n), 1000) for n in (100, 1000, 10000))
    ]
    assert widths[0] > widths[1] > widths[2] > 0
    # About 1 / sqrt(n): ten times the queries, a third of the width.
    assert widths[2] / widths[1] == pytest.approx(10**-0.5, rel=0.2)


@pytest.mark.parametrize("value", [0.0, 0.5, 1.0, 0.1])
def test_constant_outcomes_give_a_zero_width_interval(value: float) -> None:
    result = bootstrap_mean(np.full(37, value), 200, seed=1)
    assert result.low == result.high == result.estimate == pytest.approx(value)


def test_it_agrees_with_resampling_query_indices() -> None:
    """The multinomial shortcut against the textbook loop (another random stream)."""
    rng = np.random.default_rng(7)
    values = rng.choice([0.0, 0.5, 1.0], size=400, p=[0.3, 0.1, 0.6])
    means = [values[rng.integers(0, values.size, values.size)].mean() for _ in range(4000)]
    expected = np.quantile(means, [0.025, 0.975])
    result = bootstrap_mean(values, 4000, seed=0)
    assert result.low == pytest.approx(expected[0], abs=0.01)
    assert result.high == pytest.approx(expected[1], abs=0.01)
    assert result.scaled(100.0) == (result.low * 100.0, result.high * 100.0)


def test_outcomes_from_counts() -> None:
    assert outcomes_from_counts({1.0: 2, 0.5: 1, 0.0: 0}).tolist() == [1.0, 1.0, 0.5]
    with pytest.raises(ValueError, match="≥ 0"):
        outcomes_from_counts({1.0: -1})


def test_normal_interval() -> None:
    low, high = normal_interval(71.0, 0.5)
    assert (low, high) == pytest.approx((71.0 - 1.96 * 0.5, 71.0 + 1.96 * 0.5), abs=1e-3)
    assert normal_interval(10.0, 0.0) == (10.0, 10.0)
    with pytest.raises(ValueError, match="≥ 0"):
        normal_interval(1.0, -1.0)


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [
        ([], {}, "non-empty 1-D"),
        ([[1.0]], {}, "non-empty 1-D"),
        ([1.0, float("nan")], {}, "finite"),
        ([1.0], {"n_samples": 0}, "at least one"),
        ([1.0], {"level": 1.0}, r"\(0, 1\)"),
    ],
)
def test_bad_input_is_refused(values: list[Any], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap_mean(values, **kwargs)

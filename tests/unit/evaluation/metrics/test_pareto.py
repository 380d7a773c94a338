"""Quality against cost: headline quality numbers, Pareto fronts and sets."""

from __future__ import annotations

import pytest

from evaluation.metrics.pareto import (
    pareto_front,
    pareto_sets,
    primary_quality,
    quality_intervals,
    quality_metrics,
    variant_quality,
)


@pytest.mark.parametrize(
    ("points", "higher_cost_is_better", "front"),
    [
        # b is slower and worse: dominated.
        ({"a": (5.0, 50.0), "b": (9.0, 40.0)}, False, ["a"]),
        # a trade-off: both stay.
        ({"a": (5.0, 40.0), "b": (9.0, 50.0)}, False, ["a", "b"]),
        # equal points dominate neither; c is as fast as a but worse.
        ({"a": (5.0, 50.0), "b": (5.0, 50.0), "c": (5.0, 49.0)}, False, ["a", "b"]),
        # throughput: more is better, so b (more req/s, better quality) dominates.
        ({"a": (100.0, 40.0), "b": (200.0, 45.0)}, True, ["b"]),
        ({"a": (100.0, 40.0), "b": (200.0, 45.0)}, False, ["a", "b"]),
    ],
)
def test_pareto_front(
    points: dict[str, tuple[float, float]], higher_cost_is_better: bool, front: list[str]
) -> None:
    assert pareto_front(points, higher_cost_is_better=higher_cost_is_better) == front


def test_quality_metrics_are_scaled_to_percent() -> None:
    tasks = {
        "t2t": {"R@1": 0.25, "R@5": 0.5, "R@10": 0.75, "median_rank": 3.0},
        "sts": {"spearman_mean": 71.4, "spearman_std": 0.3},
        "bison": {"accuracy": 0.875},
    }
    assert quality_metrics(tasks) == {
        "t2t R@1": 25.0,
        "t2t R@5": 50.0,
        "t2t R@10": 75.0,
        "sts ρ": 71.4,
        "bison acc": 87.5,
    }


def test_pareto_sets_for_every_shared_headline_metric_cost_and_level() -> None:
    variants = [
        {
            "name": "fast",
            "tasks": {"t2t": {"R@1": 0.2, "R@5": 0.4, "R@10": 0.5}},
            "latency": {"c1": {"p50_ms": 5.0, "p99_ms": 9.0, "qps": 100.0}},
        },
        {
            "name": "good",
            "tasks": {"t2t": {"R@1": 0.3, "R@5": 0.5, "R@10": 0.6}, "sts": {"spearman_mean": 70}},
            "latency": {"c1": {"p50_ms": 8.0, "p99_ms": 8.0, "qps": 50.0}},
        },
    ]
    assert primary_quality(variants) == ["t2t R@1"]
    assert pareto_sets(variants) == {
        "t2t R@1 vs p50_ms @c1": ["fast", "good"],
        "t2t R@1 vs p99_ms @c1": ["good"],
        "t2t R@1 vs qps @c1": ["fast", "good"],
    }


def test_quality_intervals_from_the_entries_counts() -> None:
    tasks = {
        "t2t": {"R@1": 0.25, "R@5": 0.5, "R@10": 1.0, "queries": 400},
        "sts": {"spearman_mean": 71.4, "spearman_std": 0.5},
        "bison": {"accuracy": 0.875, "rows": 200, "ties": 10},
        "no_counts": {"R@1": 0.3},
    }
    intervals = quality_intervals(tasks, n_samples=500, seed=0)
    assert set(intervals) == {"t2t R@1", "t2t R@5", "t2t R@10", "sts ρ", "bison acc"}
    values = quality_metrics(tasks)
    for name, (low, high) in intervals.items():
        assert low <= values[name] <= high
    # 400 queries at 25 %: about ±1.96 · sqrt(.25 · .75 / 400) = ±4.2 points.
    low, high = intervals["t2t R@1"]
    assert high - low == pytest.approx(8.5, abs=1.0)
    assert intervals["t2t R@10"] == (100.0, 100.0)  # every query hit: no spread
    assert intervals["sts ρ"] == pytest.approx((71.4 - 0.98, 71.4 + 0.98), abs=1e-3)
    # The same numbers for the same seed; the samples and seed are the caller's.
    assert quality_intervals(tasks, n_samples=500, seed=0) == intervals
    assert quality_intervals(tasks, n_samples=500, seed=1) != intervals


def test_variant_quality_reads_the_recorded_intervals_else_computes_them() -> None:
    tasks = {"t2t": {"R@1": 0.25, "R@5": 0.5, "R@10": 0.75, "queries": 400}}
    recorded = {"t2t R@1": {"value": 25.0, "ci95": [20.0, 30.0]}, "t2t R@5": {"value": 50.0}}
    assert variant_quality({"tasks": tasks, "quality": recorded}) == {
        "t2t R@1": (25.0, (20.0, 30.0)),
        "t2t R@5": (50.0, None),
        "t2t R@10": (75.0, None),
    }
    computed = variant_quality({"tasks": tasks}, n_samples=300, seed=2)
    intervals = quality_intervals(tasks, n_samples=300, seed=2)
    assert computed == {name: (value, intervals[name]) for name, (value, _) in computed.items()}
    assert all(interval is not None for _, interval in computed.values())

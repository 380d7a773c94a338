"""Latency numbers: percentiles against numpy, Little's law, the closed-level entry."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.metrics.latency import LatencyResult, littles_law, percentile


@pytest.mark.parametrize("size", [1, 2, 3, 10, 101, 1000])
def test_percentiles_match_numpy(size: int) -> None:
    values = list(np.random.default_rng(size).lognormal(3.0, 1.0, size=size))
    for q in (0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)
    assert percentile([], 50.0) is None
    with pytest.raises(ValueError, match="percentile"):
        percentile([1.0], 101.0)


def test_littles_law_flags_disagreement() -> None:
    # Closed loop, 4 workers, 100 req/s of 40 ms: X·W = 4 — no idle time.
    assert littles_law("closed", 4, 3.9, 100.0, 0.040) == (pytest.approx(4.0), 4.0, True)
    # Workers idle 25 % of the time: X·W = 3 against 4.
    assert littles_law("closed", 4, 3.0, 75.0, 0.040)[2] is False
    # Open loop: latencies include 20 ms of client-side waiting the wire never saw.
    assert littles_law("open", 256, 2.0, 50.0, 0.040)[2] is True
    assert littles_law("open", 256, 2.0, 50.0, 0.060)[2] is False
    assert littles_law("open", 256, 0.0, 0.0, 0.0)[2] is True


def test_percentiles_from_known_latencies() -> None:
    result = LatencyResult(
        concurrency=1,
        requests=101,
        errors=0,
        latencies_ms=tuple(float(value) for value in range(101)),
        wall_s=10.1,
        busy_s=5.05,
    )
    report = result.as_report()
    assert report["p50_ms"] == 50.0
    assert report["p95_ms"] == 95.0
    assert report["p99_ms"] == 99.0
    assert report["mean_ms"] == 50.0
    assert report["qps"] == pytest.approx(10.0)
    assert report["in_flight_mean"] == pytest.approx(0.5)


def test_all_errors_give_null_percentiles() -> None:
    result = LatencyResult(1, 3, 3, (), 1.0, 0.5)
    assert result.as_report()["p50_ms"] is None
    assert result.qps == 0.0


def test_merged_chunks_add_up() -> None:
    parts = [
        LatencyResult(2, 4, 1, (1.0, 2.0, 3.0), 1.0, 0.5),
        LatencyResult(2, 2, 0, (4.0, 5.0), 0.5, 0.25),
    ]
    merged = LatencyResult.merged(2, parts)
    assert merged == LatencyResult(2, 6, 1, (1.0, 2.0, 3.0, 4.0, 5.0), 1.5, 0.75)
    assert merged.qps == pytest.approx(5 / 1.5)

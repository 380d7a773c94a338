"""The closed-loop latency driver with fake request senders."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.client import ServiceError
from benchmarks.latency import LatencyResult, closed_loop


def test_closed_loop_counts_warmup_errors_and_concurrency() -> None:
    sent: list[int] = []
    in_flight = 0
    peak = 0

    async def send(index: int) -> object:
        nonlocal in_flight, peak
        sent.append(index)
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await asyncio.sleep(0.002)
            if index in {7, 12}:
                raise ServiceError(503, "overloaded", "full", None, "POST", "/v1/search")
        finally:
            in_flight -= 1
        return None

    result = asyncio.run(closed_loop(send, concurrency=4, requests=30, warmup=5))
    assert sorted(sent) == list(range(35))
    assert peak == 4
    assert result.requests == 30
    assert result.errors == 2
    assert len(result.latencies_ms) == 28
    assert all(latency >= 1.5 for latency in result.latencies_ms)
    assert result.qps == pytest.approx(28 / result.wall_s)
    report = result.as_report()
    assert set(report) == {
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "mean_ms",
        "qps",
        "errors",
        "requests",
        "concurrency",
        "in_flight_mean",
    }
    assert report["concurrency"] == 4
    assert 2.0 < result.in_flight_mean <= 4.0 + 1e-9


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


def test_bad_arguments() -> None:
    async def send(index: int) -> object:
        return index

    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(closed_loop(send, concurrency=0, requests=1))

"""A driven level's numbers: the load run's entry from synthetic records, and the quality
latency entry of a closed level over API calls."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.drivers.client_sender import client_senders
from benchmarks.drivers.closed_loop import warmed_closed_loop
from benchmarks.drivers.level_summary import latency_result, summarize
from benchmarks.drivers.samples import LevelRun, Sample
from crisscross_client.errors import OverloadedError


def _sample(
    intended: float, latency_s: float, status: int = 200, wire_s: float | None = None
) -> Sample:
    done = intended + latency_s
    sent = done - (latency_s if wire_s is None else wire_s)
    return Sample(intended=intended, dispatched=intended, sent=sent, done=done, status=status)


def test_summary_of_synthetic_records() -> None:
    # Closed loop, 2 workers back to back, each request 100 ms, for 1 s: 20 requests.
    samples = [_sample(i * 0.1, 0.1) for i in range(10)] + [
        _sample(i * 0.1, 0.1) for i in range(10)
    ]
    samples[3].status = 503
    samples[4].status = 500
    samples[5].done = None
    samples[5].failure = "timeout"
    run = LevelRun(
        mode="closed",
        samples=samples,
        start=0.0,
        end=1.0,
        in_flight_mean=2.0,
        in_flight_peak=2,
        cpu_s=0.002,
        concurrency=2,
    )
    entry = summarize(run)
    assert entry["requests"] == 20
    assert entry["ok"] == 17
    assert entry["qps"] == pytest.approx(17.0)
    assert entry["answered_rps"] == pytest.approx(19.0)
    assert entry["rejected"] == 1
    assert entry["rejected_p99_ms"] == pytest.approx(100.0)
    assert entry["errors"] == 2
    assert entry["errors_by_status"] == {"500": 1, "timeout": 1}
    assert entry["p50_ms"] == pytest.approx(100.0)
    assert entry["client_cpu_ms_per_request"] == pytest.approx(0.1)
    # 19 finished × 100 ms over 1 s = 1.9 against 2 workers: within 10 %.
    assert entry["littles_law_xw"] == pytest.approx(1.9)
    assert entry["littles_law_ok"] is True
    assert entry["client_bound"] is False

    # The same throughput with half the latency: the workers idled half the time.
    idle = [_sample(i * 0.1, 0.05) for i in range(20)]
    idle_entry = summarize(LevelRun("closed", idle, 0.0, 1.0, 1.0, 2, cpu_s=0.0, concurrency=2))
    assert idle_entry["littles_law_ok"] is False
    assert idle_entry["client_bound"] is True
    assert idle_entry["warnings"]


def test_open_summary_flags_latency_accrued_off_the_wire() -> None:
    # 10 req/s for 1 s, each 100 ms from its intended time but only 20 ms on the wire.
    samples = [_sample(i * 0.1, 0.1, wire_s=0.02) for i in range(10)]
    run = LevelRun(
        "open",
        samples,
        0.0,
        1.0,
        in_flight_mean=0.2,
        in_flight_peak=1,
        cpu_s=0.0,
        concurrency=1,
        rate=10.0,
        scheduled_s=0.9,
        backlogged=8,
    )
    entry = summarize(run)
    assert entry["littles_law_xw"] == pytest.approx(1.0)
    assert entry["littles_law_reference"] == pytest.approx(0.2)
    assert entry["littles_law_ok"] is False
    assert entry["backlogged"] == 8
    assert entry["offered_rps"] == 10.0
    assert entry["pool_wait_p99_ms"] == pytest.approx(80.0)
    assert entry["rejected_sent_p99_ms"] is None  # no 503 among them


def test_refusals_are_timed_from_the_intended_send_and_from_the_send() -> None:
    # Three 503s, each 12 ms from its intended send time, of which 9 ms before a connection
    # took it (the client's lag): 3 ms from the send. A 200 and a timed-out request do not count.
    samples = [_sample(i * 0.1, 0.012, status=503, wire_s=0.003) for i in range(3)]
    samples.append(_sample(0.3, 0.05, wire_s=0.001))
    samples.append(Sample(intended=0.4, dispatched=0.4, sent=0.4, failure="timeout"))
    run = LevelRun("open", samples, 0.0, 1.0, 0.1, 1, 0.0, 4, rate=5.0, scheduled_s=0.4)
    entry = summarize(run)
    assert entry["rejected"] == 3
    assert entry["rejected_p99_ms"] == pytest.approx(12.0)
    assert entry["rejected_sent_p99_ms"] == pytest.approx(3.0)


def test_latency_result_counts_warmup_errors_and_concurrency() -> None:
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
                raise OverloadedError(
                    "full", status=503, code="overloaded", method="POST", url="/v1/search"
                )
        finally:
            in_flight -= 1
        return None

    run = asyncio.run(warmed_closed_loop(client_senders(send, 4), requests=30, warmup=5))
    result = latency_result([run], 4)
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


def test_latency_result_merges_chunks() -> None:
    chunks = [
        LevelRun(
            "closed", [_sample(0.0, 0.1), _sample(0.1, 0.1, status=500)], 0.0, 0.2, 1, 1, 0, 1
        ),
        LevelRun("closed", [_sample(5.0, 0.3)], 5.0, 5.3, 1, 1, 0, 1),
    ]
    result = latency_result(chunks, 1)
    assert (result.requests, result.errors) == (3, 1)
    assert result.latencies_ms == pytest.approx((100.0, 300.0))
    assert result.wall_s == pytest.approx(0.5)
    assert result.busy_s == pytest.approx(0.5)

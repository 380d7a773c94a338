"""Load drivers: Poisson schedule, open-loop latency from the intended send time, Little's law,
percentiles, summaries — with fake senders and the tiny local HTTP server."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from benchmarks.load import (
    InFlightMeter,
    LevelRun,
    RawSender,
    Sample,
    SenderPool,
    closed_loop,
    littles_law,
    onset_summary,
    open_loop,
    percentile,
    poisson_schedule,
    summarize,
)
from benchmarks.rawhttp import Endpoint, RawConnection, TransportFailure, build_request
from tests.benchmarks.tiny_http import Reply, Request, serve

# --- Poisson schedule -----------------------------------------------------------------------


def test_poisson_schedule_is_seeded_and_has_the_asked_rate() -> None:
    rate, duration = 400.0, 50.0
    times = poisson_schedule(rate, duration, 1_000_000, seed=7)
    assert times == poisson_schedule(rate, duration, 1_000_000, seed=7)
    assert times != poisson_schedule(rate, duration, 1_000_000, seed=8)
    assert times[:10] == poisson_schedule(rate, duration, 10, seed=7)
    assert all(0.0 < t < duration for t in times)
    assert bool(np.all(np.diff(times) > 0))
    # 20,000 arrivals expected, sd 141: 3 % is > 4 sd.
    assert len(times) / duration == pytest.approx(rate, rel=0.03)
    gaps = np.diff([0.0, *times])
    assert gaps.mean() == pytest.approx(1.0 / rate, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)  # exponential: CV = 1


def test_poisson_schedule_is_bounded_by_count_and_duration() -> None:
    assert len(poisson_schedule(1000.0, 10.0, 50, seed=0)) == 50
    short = poisson_schedule(10.0, 0.5, 10_000, seed=[0, 3])
    assert all(t < 0.5 for t in short)
    with pytest.raises(ValueError, match="rate"):
        poisson_schedule(0.0, 1.0, 10, seed=0)


# --- percentiles and Little's law ------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 10, 101, 1000])
def test_percentiles_match_numpy(size: int) -> None:
    values = list(np.random.default_rng(size).lognormal(3.0, 1.0, size=size))
    for q in (0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)
    assert percentile([], 50.0) is None
    with pytest.raises(ValueError, match="percentile"):
        percentile([1.0], 101.0)


def test_in_flight_meter_integrates_the_count() -> None:
    meter = InFlightMeter(start=0.0)
    meter.enter(0.0)
    meter.enter(1.0)
    meter.leave(2.0)
    meter.leave(4.0)
    # 1 in flight for 1 s, 2 for 1 s, 1 for 2 s, 0 for 1 s: area 5 over 5 s.
    assert meter.mean(5.0) == pytest.approx(1.0)
    assert meter.peak == 2
    assert InFlightMeter(start=1.0).mean(1.0) == 0.0


def test_littles_law_flags_disagreement() -> None:
    # Closed loop, 4 workers, 100 req/s of 40 ms: X·W = 4 — no idle time.
    assert littles_law("closed", 4, 3.9, 100.0, 0.040) == (pytest.approx(4.0), 4.0, True)
    # Workers idle 25 % of the time: X·W = 3 against 4.
    assert littles_law("closed", 4, 3.0, 75.0, 0.040)[2] is False
    # Open loop: latencies include 20 ms of client-side waiting the wire never saw.
    assert littles_law("open", 256, 2.0, 50.0, 0.040)[2] is True
    assert littles_law("open", 256, 2.0, 50.0, 0.060)[2] is False
    assert littles_law("open", 256, 0.0, 0.0, 0.0)[2] is True


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


# --- drivers with fake senders ------------------------------------------------------------------


class FakeSender:
    """Answers after ``service_s``; statuses by request index; counts calls."""

    def __init__(self, service_s: float, statuses: dict[int, int] | None = None) -> None:
        self.service_s = service_s
        self.statuses = statuses or {}
        self.sent: list[int] = []
        self.closed = False

    async def send(self, index: int) -> int:
        self.sent.append(index)
        await asyncio.sleep(self.service_s)
        status = self.statuses.get(index, 200)
        if status == 0:
            raise TransportFailure("connection", "reset")
        return status

    async def aclose(self) -> None:
        self.closed = True


def test_closed_loop_keeps_concurrency_and_stops_at_the_count() -> None:
    senders = [FakeSender(0.02, {103: 503, 104: 0}) for _ in range(3)]
    run = asyncio.run(closed_loop(senders, max_requests=30, duration_s=10.0, first_index=100))
    indices = sorted(index for sender in senders for index in sender.sent)
    assert indices == list(range(100, 130))
    assert run.in_flight_peak == 3
    assert run.in_flight_mean == pytest.approx(3.0, rel=0.15)
    entry = summarize(run)
    assert entry["requests"] == 30
    assert entry["rejected"] == 1
    assert entry["errors_by_status"] == {"connection": 1}
    assert entry["littles_law_ok"] is True
    assert entry["client_cpu_ms_per_request"] is not None


def test_closed_loop_stops_at_the_duration() -> None:
    run = asyncio.run(closed_loop([FakeSender(0.02)], max_requests=10_000, duration_s=0.2))
    assert 1 <= len(run.samples) <= 12
    assert run.end - run.start < 1.0


def test_sender_pool_is_lifo_and_bounded() -> None:
    async def scenario() -> None:
        made: list[FakeSender] = []

        def factory() -> FakeSender:
            made.append(FakeSender(0.0))
            return made[-1]

        pool = SenderPool(factory, max_size=2)
        first = await pool.acquire()
        second = await pool.acquire()
        assert not pool.has_idle()
        waiter = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0)
        assert not waiter.done()
        pool.release(first)
        assert await waiter is first  # handed to the waiter, not to the stack
        pool.release(second)
        pool.release(first)
        assert await pool.acquire() is first  # last in, first out
        assert pool.size == 2
        await pool.aclose()
        assert all(sender.closed for sender in made)

    asyncio.run(scenario())


def test_open_loop_counts_latency_from_the_intended_send_time() -> None:
    # One connection; every request takes 100 ms; five arrive 10 ms apart. Request i waits
    # for the ones before it: ≈ 100·(i+1) − 10·i ms from its intended time.
    async def scenario() -> LevelRun:
        pool = SenderPool(lambda: FakeSender(0.1), max_size=1)
        schedule = [0.01 * i for i in range(5)]
        return await open_loop(pool, schedule, rate=100.0, drain_s=5.0)

    run = asyncio.run(scenario())
    latencies = [sample.latency_ms for sample in run.samples]
    for i, latency in enumerate(latencies):
        assert latency is not None
        assert latency >= 100.0 * (i + 1) - 10.0 * i - 1.0
    assert run.backlogged == 4
    on_wire = [(s.done - s.sent) * 1000.0 for s in run.samples if s.done and s.sent]
    assert max(on_wire) < 200.0  # each request spent ~100 ms on the wire …
    assert latencies[-1] is not None
    assert latencies[-1] > 400.0  # … but the last one was answered ~460 ms after it was due


def test_open_loop_keeps_the_warm_up_apart_from_the_measured_window() -> None:
    # Ten requests 20 ms apart, the first 0.1 s of them warm-up; each takes 5 ms.
    async def scenario() -> LevelRun:
        pool = SenderPool(lambda: FakeSender(0.005), max_size=4)
        schedule = [0.02 * i for i in range(10)]
        return await open_loop(pool, schedule, rate=50.0, drain_s=1.0, warmup_s=0.1)

    run = asyncio.run(scenario())
    assert len(run.warmup) == 5  # due at 0, 20, 40, 60, 80 ms
    assert len(run.samples) == 5
    assert all(sample.intended >= run.start for sample in run.samples)
    assert all(sample.intended < run.start for sample in run.warmup)
    assert run.scheduled_s == pytest.approx(0.18 - 0.1)
    onset = onset_summary(run.warmup)
    assert onset["requests"] == onset["ok"] == 5
    assert onset["rejected"] == onset["errors"] == 0
    assert summarize(run)["requests"] == 5


def test_open_loop_cuts_what_is_left_after_the_drain() -> None:
    async def scenario() -> LevelRun:
        pool = SenderPool(lambda: FakeSender(0.3), max_size=1)
        return await open_loop(pool, [0.0, 0.01, 0.02], rate=100.0, drain_s=0.1)

    run = asyncio.run(scenario())
    failures = [sample.failure for sample in run.samples]
    assert failures == ["timeout", "unsent", "unsent"]
    entry = summarize(run)
    assert entry["errors_by_status"] == {"timeout": 1, "unsent": 2}
    assert entry["ok"] == 0
    assert entry["p99_ms"] is None


# --- drivers against a stalling local HTTP server -----------------------------------------------


def test_open_loop_against_a_stalling_server_includes_the_wait() -> None:
    """The server stalls the first request for 300 ms; with one connection the requests due
    meanwhile wait in the client, and their latency counts from when they were due. A closed
    loop over the same server would report them as fast (coordinated omission)."""

    async def handler(request: Request) -> Reply:
        return Reply(200, b'{"results":[]}', delay_s=0.3 if request.number == 1 else 0.001)

    async def scenario() -> tuple[LevelRun, LevelRun]:
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            payloads = [build_request(endpoint, "POST", "/v1/search", b"{}")]

            def factory() -> RawSender:
                return RawSender(RawConnection(endpoint, timeout_s=5.0), payloads)

            pool = SenderPool(factory, max_size=1)
            try:
                opened = await open_loop(
                    pool, [0.01 * i for i in range(10)], rate=100.0, drain_s=5.0
                )
            finally:
                await pool.aclose()
            server.requests.clear()  # request 1 stalls again for the closed loop
            sender = factory()
            try:
                closed = await closed_loop([sender], max_requests=10, duration_s=5.0)
            finally:
                await sender.aclose()
        return opened, closed

    opened, closed = asyncio.run(scenario())
    open_ms = [sample.latency_ms or 0.0 for sample in opened.samples]
    closed_ms = [sample.latency_ms or 0.0 for sample in closed.samples]
    # Request i of the open loop was due at 10·i ms and answered after ≥ 300 ms.
    for i, latency in enumerate(open_ms):
        assert latency >= 300.0 - 10.0 * i - 1.0
    assert sorted(open_ms)[5] > 200.0
    # The closed loop saw one slow request and nine fast ones.
    assert sorted(closed_ms)[5] < 100.0
    assert max(closed_ms) >= 299.0
    assert summarize(opened)["ok"] == 10


def test_drivers_count_errors_by_status_over_http() -> None:
    """Statuses by request index (in the body): 503s apart from other errors, a request the
    server drops twice (first try and the client's one resend) a connection failure."""

    async def handler(request: Request) -> Reply:
        index = int(request.body.decode().strip("{}").split(":")[1])
        if index % 5 == 0:
            return Reply(503, b'{"error":{"code":"overloaded"}}', headers={"Retry-After": "1"})
        if index % 7 == 0:
            return Reply(500, b'{"error":{"code":"internal"}}')
        if index == 3:
            return Reply(drop=True)
        return Reply(200, b'{"results":[]}')

    async def scenario() -> tuple[LevelRun, int]:
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            payloads = [
                build_request(endpoint, "POST", "/v1/search", f'{{"i":{i}}}'.encode())
                for i in range(30)
            ]
            senders = [RawSender(RawConnection(endpoint), payloads) for _ in range(2)]
            try:
                run = await closed_loop(senders, max_requests=30, duration_s=5.0)
            finally:
                for sender in senders:
                    await sender.aclose()
            return run, len(server.requests)

    run, served = asyncio.run(scenario())
    entry = summarize(run)
    assert served == 31  # index 3 was sent twice
    assert entry["requests"] == 30
    assert entry["rejected"] == 6  # 0, 5, …, 25
    assert entry["errors_by_status"] == {"500": 4, "connection": 1}  # 7, 14, 21, 28; 3
    assert entry["errors"] == 5
    assert entry["ok"] == 30 - 6 - 5
    assert entry["rejected_p99_ms"] is not None

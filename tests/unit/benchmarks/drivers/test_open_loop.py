"""The open-loop driver: the Poisson schedule, the LIFO sender pool, latency from the intended
send time, the warm-up apart, the cut after the drain — with fake senders and the tiny local
HTTP server."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from benchmarks.drivers.closed_loop import closed_loop
from benchmarks.drivers.level_summary import onset_summary, summarize
from benchmarks.drivers.open_loop import SenderPool, open_loop, poisson_schedule
from benchmarks.drivers.raw_http import Endpoint, RawConnection, RawSender, build_request
from benchmarks.drivers.samples import LevelRun
from tests.fakes.fake_senders import FakeSender
from tests.fakes.tiny_http import Reply, Request, serve


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

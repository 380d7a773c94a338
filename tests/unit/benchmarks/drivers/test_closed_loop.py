"""The closed-loop driver: concurrency, the request count, the duration, the warm-up — with fake
senders, and over raw HTTP against the tiny local server."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.drivers.closed_loop import closed_loop, warmed_closed_loop
from benchmarks.drivers.level_summary import summarize
from benchmarks.drivers.raw_http import Endpoint, RawConnection, RawSender, build_request
from benchmarks.drivers.samples import LevelRun
from tests.fakes.fake_senders import FakeSender
from tests.fakes.tiny_http import Reply, Request, serve


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


def test_warmed_closed_loop_sends_the_warm_up_first_and_measures_the_rest() -> None:
    senders = [FakeSender(0.001) for _ in range(2)]
    run = asyncio.run(warmed_closed_loop(senders, requests=6, warmup=4, first_index=10))
    assert sorted(index for sender in senders for index in sender.sent) == list(range(10, 20))
    assert len(run.samples) == 6
    with pytest.raises(ValueError, match="warmup"):
        asyncio.run(warmed_closed_loop(senders, requests=1, warmup=-1))


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

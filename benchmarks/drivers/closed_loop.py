"""The closed-loop driver: ``concurrency`` workers, each sending its next request as soon as the
previous one answered (peak throughput).

Each worker has its own :class:`~benchmarks.drivers.sender.Sender` (a raw keep-alive connection
in the load run, an API client call in the quality and compare runs' latency sections) and sends
until ``max_requests`` have been started or ``duration_s`` has passed. A request's latency runs
from the moment it was started to its complete answer. Throughput is bounded by the service
*and* by the number of workers: it is the right tool for "how many requests per second at most",
the wrong one for tail latency (a slow answer holds back the requests that would have been sent
meanwhile — coordinated omission; the open loop, :mod:`benchmarks.drivers.open_loop`, avoids
it). The level's numbers are :mod:`benchmarks.drivers.level_summary`'s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence

from benchmarks.drivers.samples import InFlightMeter, LevelRun, Sample, timed_send
from benchmarks.drivers.sender import Sender


async def closed_loop(
    senders: Sequence[Sender],
    *,
    max_requests: int,
    duration_s: float,
    first_index: int = 0,
) -> LevelRun:
    """Run one closed-loop level: one worker per sender.

    Args:
        senders: one per worker (concurrency = ``len(senders)``), connected or not.
        max_requests: requests started at most.
        duration_s: no request is started after this many seconds.
        first_index: index of the first request (payload selection continues from it).
    """
    if not senders or max_requests < 1 or duration_s <= 0:
        raise ValueError("need ≥ 1 sender, max_requests ≥ 1 and duration_s > 0")
    clock = time.perf_counter
    samples: list[Sample] = []
    counter = iter(range(first_index, first_index + max_requests))
    start = clock()
    meter = InFlightMeter(start)
    deadline = start + duration_s
    cpu_start = time.process_time()

    async def worker(sender: Sender) -> None:
        for index in counter:
            now = clock()
            if now >= deadline:
                return
            sample = Sample(intended=now, dispatched=now)
            samples.append(sample)
            await timed_send(sender, sample, index, meter)

    async with asyncio.TaskGroup() as group:
        for sender in senders:
            group.create_task(worker(sender))
    end = clock()
    return LevelRun(
        mode="closed",
        samples=samples,
        start=start,
        end=end,
        in_flight_mean=meter.mean(end),
        in_flight_peak=meter.peak,
        cpu_s=time.process_time() - cpu_start,
        concurrency=len(senders),
    )


async def warmed_closed_loop(
    senders: Sequence[Sender], *, requests: int, warmup: int, first_index: int = 0
) -> LevelRun:
    """One closed-loop level with no time limit: ``warmup`` unrecorded requests, then
    ``requests`` measured ones, at ``len(senders)`` in flight.

    Request indices run from ``first_index`` (warm-up first, the measured requests after it).
    """
    if warmup < 0:
        raise ValueError("warmup must be ≥ 0")
    if warmup:
        await closed_loop(
            senders, max_requests=warmup, duration_s=math.inf, first_index=first_index
        )
    return await closed_loop(
        senders, max_requests=requests, duration_s=math.inf, first_index=first_index + warmup
    )

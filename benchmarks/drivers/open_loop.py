"""The open-loop driver: requests sent at the intended times of a seeded Poisson process (tail
latency at an offered rate, no coordinated omission).

Arrivals follow a seeded Poisson process at ``rate`` per second (:func:`poisson_schedule`),
bounded by ``max_requests`` and ``duration_s``. At each *intended* send time the dispatcher hands
the request to an idle connection of a pool (:class:`SenderPool`: LIFO, so few connections stay
hot; at most ``max_connections``); when none is idle the request waits for one. Latency runs from
the intended send time, so time spent waiting for a late dispatcher or a busy pool counts: a
stalled server shows up as the whole backlog it caused. ``drain_s`` after the last intended
arrival the level stops: requests still on the wire count as ``timeout``, requests never sent as
``unsent`` (both are errors and not in the percentiles). The level's numbers are
:mod:`benchmarks.drivers.level_summary`'s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from benchmarks.drivers.samples import InFlightMeter, LevelRun, Sample, timed_send
from benchmarks.drivers.sender import Sender, SenderFactory


def poisson_schedule(
    rate: float, duration_s: float, max_requests: int, seed: int | Sequence[int]
) -> list[float]:
    """Intended send times of a Poisson process: exponential gaps with mean ``1/rate``.

    Args:
        rate: arrivals per second (> 0).
        duration_s: arrivals are kept while their time is < ``duration_s`` seconds.
        max_requests: at most this many arrivals.
        seed: ``numpy.random.default_rng`` seed (an int or a sequence of ints).

    Returns:
        Seconds from the start, increasing, the first one after 0.
    """
    if rate <= 0 or duration_s <= 0 or max_requests < 1:
        raise ValueError("need rate > 0, duration_s > 0 and max_requests ≥ 1")
    rng = np.random.default_rng(seed)
    expected = rate * duration_s
    draw = int(min(max_requests, expected + 6.0 * math.sqrt(expected) + 16))
    times = np.cumsum(rng.exponential(1.0 / rate, size=draw))
    while times[-1] < duration_s and times.size < max_requests:
        more = np.cumsum(rng.exponential(1.0 / rate, size=draw)) + times[-1]
        times = np.concatenate([times, more])
    kept = times[times < duration_s][:max_requests]
    return [float(value) for value in kept]


class SenderPool:
    """Up to ``max_size`` senders; idle ones are reused last-in first-out; waiters first-in
    first-out. LIFO keeps as few connections busy as the load needs, so idle ones age out
    harmlessly rather than every connection going stale at low rates.
    """

    def __init__(self, factory: SenderFactory, max_size: int) -> None:
        if max_size < 1:
            raise ValueError("max_size must be ≥ 1")
        self._factory = factory
        self.max_size = max_size
        self._idle: list[Sender] = []
        self._all: list[Sender] = []
        self._waiters: list[asyncio.Future[Sender]] = []

    @property
    def size(self) -> int:
        """Senders created so far."""
        return len(self._all)

    @property
    def senders(self) -> tuple[Sender, ...]:
        """Every sender created so far."""
        return tuple(self._all)

    def has_idle(self) -> bool:
        """Whether a sender can be had without waiting."""
        return bool(self._idle) or len(self._all) < self.max_size

    async def acquire(self) -> Sender:
        """An idle sender, a new one (below ``max_size``), or the next one released."""
        if self._idle:
            return self._idle.pop()
        if len(self._all) < self.max_size:
            sender = self._factory()
            self._all.append(sender)
            return sender
        waiter: asyncio.Future[Sender] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif waiter.done() and not waiter.cancelled():
                self.release(waiter.result())
            raise

    def release(self, sender: Sender) -> None:
        """Give ``sender`` back: to the oldest waiter, else to the idle stack."""
        while self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                waiter.set_result(sender)
                return
        self._idle.append(sender)

    async def prewarm(self, count: int, connect: Callable[[Sender], Awaitable[None]]) -> None:
        """Create up to ``count`` senders now and ``connect`` each (connect cost off the clock)."""
        while len(self._all) < min(count, self.max_size):
            sender = self._factory()
            self._all.append(sender)
            self._idle.append(sender)
        await asyncio.gather(*(connect(sender) for sender in self._idle))

    async def aclose(self) -> None:
        """Close every sender."""
        await asyncio.gather(*(sender.aclose() for sender in self._all))


async def open_loop(
    pool: SenderPool,
    schedule: Sequence[float],
    *,
    rate: float,
    drain_s: float,
    first_index: int = 0,
    lead_s: float = 0.02,
    warmup_s: float = 0.0,
) -> LevelRun:
    """Run one open-loop level: send request ``i`` at ``start + schedule[i]``.

    The requests intended in the first ``warmup_s`` seconds are the warm-up: sent like the
    others, but kept apart (``LevelRun.warmup``); the level's window, in-flight meter and client
    CPU start after them. What a service does at the onset of a load (before it has adapted to
    it) then does not blur its steady state, and is still reported.

    Args:
        pool: the connections (senders) requests are handed to.
        schedule: intended send times, seconds from the start (:func:`poisson_schedule`).
        rate: the nominal offered rate, requests/s (reported).
        drain_s: after the last intended send, how long answers are awaited, seconds; then
            what is still out is cut (``timeout`` if on the wire, ``unsent`` if never sent).
        first_index: index of the first request (payload selection continues from it).
        lead_s: the schedule starts this long after the call, seconds.
    """
    if not schedule:
        raise ValueError("empty schedule")
    clock = time.perf_counter
    loop = asyncio.get_running_loop()
    origin = clock() + lead_s
    measured_from = origin + warmup_s
    meter = InFlightMeter(origin)
    samples: list[Sample] = []
    warmup: list[Sample] = []
    tasks: set[asyncio.Task[None]] = set()
    backlogged = 0
    # Senders created before the level (prewarmed) do not count as connections of the level.
    connections_before = pool.size

    async def one(sample: Sample, index: int) -> None:
        sender = await pool.acquire()
        try:
            await timed_send(sender, sample, index, meter)
        finally:
            pool.release(sender)

    cpu_start = time.process_time()
    warming = warmup_s > 0
    for offset, index in zip(
        schedule, range(first_index, first_index + len(schedule)), strict=True
    ):
        target = origin + offset
        wait = target - clock()
        if wait > 0:
            await asyncio.sleep(wait)
        if warming and target >= measured_from:
            warming = False
            meter.restart(measured_from)
            cpu_start = time.process_time()
        sample = Sample(intended=target, dispatched=clock())
        (warmup if warming else samples).append(sample)
        if not warming and not pool.has_idle():
            backlogged += 1
        task = loop.create_task(one(sample, index))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    cut = origin + schedule[-1] + drain_s
    remaining = cut - clock()
    if tasks and remaining > 0:
        await asyncio.wait(set(tasks), timeout=remaining)
    end = clock()
    leftover = list(tasks)
    for task in leftover:
        task.cancel()
    await asyncio.gather(*leftover, return_exceptions=True)
    for sample in (*warmup, *samples):
        if sample.done is None:
            sample.failure = "unsent" if sample.sent is None else "timeout"
    if leftover:
        end = max(end, cut)
    return LevelRun(
        mode="open",
        samples=samples,
        start=measured_from,
        end=end,
        in_flight_mean=meter.mean(end),
        in_flight_peak=meter.peak,
        cpu_s=time.process_time() - cpu_start,
        concurrency=pool.max_size,
        rate=rate,
        scheduled_s=schedule[-1] - warmup_s,
        connections=max(0, pool.size - connections_before),
        backlogged=backlogged,
        warmup=warmup,
    )

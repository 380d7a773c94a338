"""Load drivers: closed loop and open loop (Poisson arrivals), with honest accounting.

Both drivers send requests through :class:`Sender` objects — one per connection, one request at a
time — and keep a :class:`Sample` per measured request. Time is ``time.perf_counter`` seconds;
reports are in milliseconds.

Closed loop (peak throughput)
    ``concurrency`` workers, each with its own sender, send the next request as soon as the
    previous one answered, until ``max_requests`` have been started or ``duration_s`` has
    passed. A request's latency runs from the moment it was started to its complete answer.
    Throughput is bounded by the service *and* by the number of workers: it is the right tool
    for "how many requests per second at most", the wrong one for tail latency (a slow answer
    holds back the requests that would have been sent meanwhile — coordinated omission).

Open loop (tail latency at an offered rate)
    Arrivals follow a seeded Poisson process at ``rate`` per second (:func:`poisson_schedule`),
    bounded by ``max_requests`` and ``duration_s``. At each *intended* send time the dispatcher
    hands the request to an idle connection of a pool (LIFO, so few connections stay hot; at most
    ``max_connections``); when none is idle the request waits for one. Latency runs from the
    intended send time, so time spent waiting for a late dispatcher or a busy pool counts: a
    stalled server shows up as the whole backlog it caused. ``drain_s`` after the last intended
    arrival the level stops: requests still on the wire count as ``timeout``, requests never
    sent as ``unsent`` (both are errors and not in the percentiles).

Per level (:func:`summarize`): p50/p95/p99/max of the 2xx answers; ``qps`` = 2xx answers ÷
window; ``503`` answers (``rejected``, the service's fast "overloaded" refusals) counted apart
from other errors and with their own percentiles; errors by status or transport failure kind;
the client's CPU time per request (``time.process_time``); and the Little's law check.

Little's law (L = X·W)
    The client integrates the number of requests it has on the wire over the window
    (:class:`InFlightMeter`): its mean is L. X = answered-or-failed requests ÷ window, W = their
    mean latency as reported. Closed loop: ``c`` workers with no idle time keep ``c`` requests
    out, so X·W must be within 10 % of ``c``; less means the workers idled between requests
    (the client is the bottleneck). Open loop: X·W must be within 10 % of the measured L; more
    means latency accrued off the wire, in the client (late dispatch or an exhausted pool);
    less means requests still on the wire when the level was cut (a growing backlog).
    Either disagreement sets ``littles_law_ok`` false and logs a warning.

Client-side bottleneck (``client_bound``, with a warning)
    Closed loop: the Little's law check failed (workers idled). Open loop: the client
    dispatched more than :data:`SEND_RATE_SHORTFALL` slower than the schedule, or its mean
    dispatch lag (intended send time → dispatched) exceeded :data:`LATE_DISPATCH_MS`. Either
    loop: the client used more than :data:`CLIENT_CPU_BUSY` of a core. A dispatch-lag p99 above
    :data:`LATE_DISPATCH_MS` only warns (the client process waited for a CPU now and then; the
    lag is in the latencies either way).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from benchmarks.rawhttp import RawConnection, TransportFailure

logger = logging.getLogger(__name__)

LITTLE_TOLERANCE = 0.10
"""Largest relative disagreement of Little's law terms before a level is flagged."""
LATE_DISPATCH_MS = 10.0
"""Open loop: a mean dispatch lag (intended send time → dispatched), ms, above which the client is
flagged as unable to sustain the offered rate; a p99 above it only warns."""
SEND_RATE_SHORTFALL = 0.05
"""Open loop: dispatching this share slower than the schedule flags the client."""
CLIENT_CPU_BUSY = 0.9
"""Client CPU use (cores, ``process_time`` ÷ wall) above which the client is flagged as busy;
the event loop runs on one core."""
PERCENTILES = (50.0, 95.0, 99.0)


class Sender(Protocol):
    """Sends request number ``index`` on one connection and returns the HTTP status.

    Raises :class:`~benchmarks.rawhttp.TransportFailure` when no complete answer came.
    """

    async def send(self, index: int) -> int:
        """Send request ``index`` (the caller maps indices to payloads) and await the answer."""
        ...

    async def aclose(self) -> None:
        """Close the underlying connection."""
        ...


SenderFactory = Callable[[], Sender]


class RawSender:
    """A :class:`Sender` over one :class:`~benchmarks.rawhttp.RawConnection`.

    Args:
        connection: the keep-alive connection.
        payloads: pre-serialised requests; request ``i`` sends ``payloads[i % len(payloads)]``.
    """

    def __init__(self, connection: RawConnection, payloads: Sequence[bytes]) -> None:
        if not payloads:
            raise ValueError("need at least one request payload")
        self.connection = connection
        self.payloads = payloads

    async def send(self, index: int) -> int:
        """Send payload ``index`` and return the answer's status (the body is read, not parsed)."""
        response = await self.connection.request(self.payloads[index % len(self.payloads)])
        return response.status

    async def aclose(self) -> None:
        """Close the connection."""
        await self.connection.aclose()


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


@dataclass(slots=True)
class Sample:
    """One request's timeline (``perf_counter`` seconds) and outcome.

    Attributes:
        intended: when it should have been sent (closed loop: when its worker started it).
        dispatched: when the dispatcher handled it (closed loop: = intended).
        sent: when a connection took it, or ``None`` if it never got one.
        done: when the answer was complete or the failure known, or ``None`` if cut at the end.
        status: the HTTP status, or 0 when there was no HTTP answer.
        failure: the transport failure kind (``timeout``, ``connection``, ...), ``unsent``, or
            ``None`` for an HTTP answer.
    """

    intended: float
    dispatched: float
    sent: float | None = None
    done: float | None = None
    status: int = 0
    failure: str | None = None

    @property
    def latency_ms(self) -> float | None:
        """Time from the intended send time to the complete answer, ms (``None`` if not done)."""
        return None if self.done is None else (self.done - self.intended) * 1000.0


class InFlightMeter:
    """The client's own count of requests on the wire, integrated over time.

    ``enter``/``leave`` take ``perf_counter`` seconds the caller has already read.
    """

    def __init__(self, start: float) -> None:
        self.start = start
        self.in_flight = 0
        self.peak = 0
        self._area = 0.0
        self._last = start

    def enter(self, now: float) -> None:
        """One more request is on the wire from ``now``."""
        self._area += self.in_flight * (now - self._last)
        self._last = now
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    def leave(self, now: float) -> None:
        """One request left the wire at ``now``."""
        self._area += self.in_flight * (now - self._last)
        self._last = now
        self.in_flight -= 1

    def restart(self, now: float) -> None:
        """Measure from ``now`` on, keeping the requests on the wire (the end of a warm-up)."""
        self.start = now
        self._area = 0.0
        self._last = now
        self.peak = self.in_flight

    def mean(self, end: float) -> float:
        """Mean number in flight from ``start`` to ``end`` (seconds)."""
        span = end - self.start
        if span <= 0:
            return 0.0
        return (self._area + self.in_flight * max(0.0, end - self._last)) / span


@dataclass
class LevelRun:
    """The raw outcome of one load level, before :func:`summarize`.

    Attributes:
        mode: ``closed`` or ``open``.
        samples: one per measured request.
        start: window start, ``perf_counter`` s; end: window end (last answer or the cut).
        in_flight_mean: the :class:`InFlightMeter` mean over the window (requests on the wire).
        in_flight_peak: the most requests on the wire at once.
        cpu_s: client CPU time over the window (``process_time``), seconds.
        concurrency: closed loop: workers; open loop: ``max_connections``.
        rate: open loop: the offered rate, requests/s; closed loop: ``None``.
        scheduled_s: open loop: the schedule's duration, seconds.
        connections: TCP connections opened during the level.
        resends: requests resent once after a reused connection turned out closed.
        backlogged: open loop: requests that found no idle connection at dispatch.
        warmup: open loop: the requests of the warm-up (sent at the same rate before
            ``start``, not in ``samples``).
    """

    mode: str
    samples: list[Sample]
    start: float
    end: float
    in_flight_mean: float
    in_flight_peak: int
    cpu_s: float
    concurrency: int
    rate: float | None = None
    scheduled_s: float | None = None
    connections: int = 0
    resends: int = 0
    backlogged: int = 0
    warmup: list[Sample] = field(default_factory=list)


async def _timed_send(sender: Sender, sample: Sample, index: int, meter: InFlightMeter) -> None:
    """Send, fill ``sample`` (sent/done/status/failure) and account the wire time."""
    clock = time.perf_counter
    sent = clock()
    sample.sent = sent
    meter.enter(sent)
    try:
        sample.status = await sender.send(index)
    except TransportFailure as failure:
        sample.failure = failure.kind
    finally:
        done = clock()
        meter.leave(done)
    sample.done = done


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
            await _timed_send(sender, sample, index, meter)

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
            await _timed_send(sender, sample, index, meter)
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


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100) with linear interpolation between order statistics
    (numpy's default ``linear`` method); ``None`` for no values."""
    if not values:
        return None
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * fraction


def littles_law(
    mode: str, concurrency: int, in_flight_mean: float, throughput: float, mean_latency_s: float
) -> tuple[float, float, bool]:
    """Little's law check of one level.

    Args:
        mode: ``closed`` (compare X·W to ``concurrency``) or ``open`` (compare X·W to the
            measured ``in_flight_mean``).
        concurrency: closed-loop workers.
        in_flight_mean: the client's time-averaged count of requests on the wire.
        throughput: X, finished requests per second (answers and failures).
        mean_latency_s: W, their mean latency, seconds.

    Returns:
        (X·W, the reference it is compared to, whether they agree within
        :data:`LITTLE_TOLERANCE`).
    """
    product = throughput * mean_latency_s
    reference = float(concurrency) if mode == "closed" else in_flight_mean
    scale = max(product, reference)
    agree = scale == 0.0 or abs(product - reference) <= LITTLE_TOLERANCE * scale
    return product, reference, agree


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _outcomes(
    samples: Sequence[Sample],
) -> tuple[list[float], list[float], list[float], dict[str, int]]:
    """The latencies (ms, in sample order) of the 2xx answers, of the 503 answers and of every
    finished request; and the count of everything else by status code or failure kind."""
    ok_ms: list[float] = []
    rejected_ms: list[float] = []
    finished_ms: list[float] = []
    by_status: dict[str, int] = {}
    for sample in samples:
        latency = sample.latency_ms
        if sample.failure is not None:
            by_status[sample.failure] = by_status.get(sample.failure, 0) + 1
        elif 200 <= sample.status < 300:
            assert latency is not None
            ok_ms.append(latency)
        elif sample.status == 503:
            assert latency is not None
            rejected_ms.append(latency)
        else:
            key = str(sample.status)
            by_status[key] = by_status.get(key, 0) + 1
        if latency is not None:
            finished_ms.append(latency)
    return ok_ms, rejected_ms, finished_ms, by_status


def summarize(run: LevelRun) -> dict[str, object]:
    """The report entry of one level (times in ms, rates in requests/s).

    Keys: ``mode``, ``concurrency``, ``offered_rps`` (open: nominal rate), ``scheduled_rps``
    (open: the drawn schedule's rate), ``requests``, ``ok``, ``p50_ms``, ``p95_ms``,
    ``p99_ms``, ``max_ms``, ``mean_ms`` (2xx only), ``qps`` (2xx per second),
    ``answered_rps`` (every HTTP answer per second), ``errors`` (non-2xx non-503 answers and
    failures), ``errors_by_status`` (status code or failure kind → count), ``rejected`` (503
    answers), ``rejected_p50_ms``, ``rejected_p99_ms``, ``client_cpu_ms_per_request``,
    ``client_cpu_cores``, ``in_flight_mean``, ``in_flight_peak``, ``littles_law_xw``,
    ``littles_law_reference``, ``littles_law_ok``, ``dispatch_lag_p99_ms`` /
    ``pool_wait_p99_ms`` / ``backlogged`` (open loop), ``client_bound``, ``warnings``,
    ``wall_s``, ``connections``, ``resends``.
    """
    window = max(run.end - run.start, 1e-9)
    ok_ms, rejected_ms, finished_ms, by_status = _outcomes(run.samples)
    requests = len(run.samples)
    answered = sum(1 for sample in run.samples if sample.failure is None)
    throughput = len(finished_ms) / window
    mean_latency_s = (sum(finished_ms) / len(finished_ms) / 1000.0) if finished_ms else 0.0
    product, reference, agree = littles_law(
        run.mode, run.concurrency, run.in_flight_mean, throughput, mean_latency_s
    )
    cpu_cores = run.cpu_s / window
    warnings: list[str] = []
    label = f"{run.mode} {'c' + str(run.concurrency) if run.mode == 'closed' else run.rate}"
    if not agree:
        if run.mode == "closed":
            warnings.append(
                f"Little's law: X·W = {product:.2f} but {run.concurrency} workers; the workers "
                "idled between requests (client-side bottleneck)"
            )
        elif product > reference:
            warnings.append(
                f"Little's law: X·W = {product:.2f} but {run.in_flight_mean:.2f} on the wire; "
                "latency accrued in the client (late dispatch or every connection busy)"
            )
        else:
            warnings.append(
                f"Little's law: X·W = {product:.2f} but {run.in_flight_mean:.2f} on the wire; "
                "requests were still out when the level was cut (a backlog that kept growing)"
            )
    entry: dict[str, object] = {
        "mode": run.mode,
        "concurrency": run.concurrency,
    }
    client_bound = run.mode == "closed" and not agree
    if run.mode == "open":
        lag_ms = [(s.dispatched - s.intended) * 1000.0 for s in run.samples]
        pool_wait_ms = [(s.sent - s.dispatched) * 1000.0 for s in run.samples if s.sent]
        lag_p99 = percentile(lag_ms, 99.0)
        lag_mean = sum(lag_ms) / len(lag_ms) if lag_ms else 0.0
        scheduled_rps = (
            requests / run.scheduled_s if run.scheduled_s and run.scheduled_s > 0 else None
        )
        dispatch_span = max(s.dispatched for s in run.samples) - run.start if requests else 0.0
        dispatched_rps = requests / dispatch_span if dispatch_span > 0 else None
        entry |= {
            "offered_rps": run.rate,
            "scheduled_rps": None if scheduled_rps is None else round(scheduled_rps, 3),
            "dispatched_rps": None if dispatched_rps is None else round(dispatched_rps, 3),
            "dispatch_lag_mean_ms": _ms(lag_mean),
            "dispatch_lag_p99_ms": _ms(lag_p99),
            "pool_wait_p99_ms": _ms(percentile(pool_wait_ms, 99.0)),
            "backlogged": run.backlogged,
        }
        behind = (
            scheduled_rps is not None
            and dispatched_rps is not None
            and dispatched_rps < (1.0 - SEND_RATE_SHORTFALL) * scheduled_rps
        )
        if behind or lag_mean > LATE_DISPATCH_MS:
            client_bound = True
            warnings.append(
                f"the client could not send at the offered rate: dispatched "
                f"{dispatched_rps or 0.0:.1f}/s of {scheduled_rps or 0.0:.1f}/s scheduled, mean "
                f"lag {lag_mean:.1f} ms, at {cpu_cores:.2f} CPU cores of its own "
                "(client-side bottleneck; low own CPU means it waited for a CPU)"
            )
        elif lag_p99 is not None and lag_p99 > LATE_DISPATCH_MS:
            warnings.append(
                f"dispatch lag p99 {lag_p99:.1f} ms (mean {lag_mean:.1f} ms): the client was "
                f"sometimes late to send, at {cpu_cores:.2f} CPU cores of its own, so it waited "
                "for a CPU (machine shared with the service?); latency includes the lag"
            )
        if run.backlogged:
            warnings.append(
                f"{run.backlogged} requests found all {run.concurrency} connections busy and "
                "waited in the client (counted from their intended send time)"
            )
    if cpu_cores > CLIENT_CPU_BUSY:
        client_bound = True
        warnings.append(f"client used {cpu_cores:.2f} CPU cores: it may be the bottleneck")
    cpu_per_request = run.cpu_s * 1000.0 / requests if requests else None
    entry |= {
        "requests": requests,
        "ok": len(ok_ms),
        "p50_ms": _ms(percentile(ok_ms, 50.0)),
        "p95_ms": _ms(percentile(ok_ms, 95.0)),
        "p99_ms": _ms(percentile(ok_ms, 99.0)),
        "max_ms": _ms(max(ok_ms) if ok_ms else None),
        "mean_ms": _ms(sum(ok_ms) / len(ok_ms) if ok_ms else None),
        "qps": round(len(ok_ms) / window, 3),
        "answered_rps": round(answered / window, 3),
        "errors": sum(by_status.values()),
        "errors_by_status": dict(sorted(by_status.items())),
        "rejected": len(rejected_ms),
        "rejected_p50_ms": _ms(percentile(rejected_ms, 50.0)),
        "rejected_p99_ms": _ms(percentile(rejected_ms, 99.0)),
        "client_cpu_ms_per_request": _ms(cpu_per_request),
        "client_cpu_cores": round(cpu_cores, 4),
        "in_flight_mean": round(run.in_flight_mean, 4),
        "in_flight_peak": run.in_flight_peak,
        "littles_law_xw": round(product, 4),
        "littles_law_reference": round(reference, 4),
        "littles_law_ok": agree,
        "client_bound": client_bound,
        "warnings": warnings,
        "wall_s": round(window, 4),
        "connections": run.connections,
        "resends": run.resends,
    }
    for warning in warnings:
        logger.warning("%s: %s", label, warning)
    return entry


def onset_summary(samples: Sequence[Sample]) -> dict[str, object]:
    """The warm-up of an open level, apart from its steady state: ``requests``, ``ok``,
    ``p50_ms`` / ``p99_ms`` (2xx), ``rejected`` (503) and ``rejected_p99_ms``, ``errors``
    (anything else, failures included)."""
    ok_ms, rejected_ms, _, by_status = _outcomes(samples)
    return {
        "requests": len(samples),
        "ok": len(ok_ms),
        "p50_ms": _ms(percentile(ok_ms, 50.0)),
        "p99_ms": _ms(percentile(ok_ms, 99.0)),
        "rejected": len(rejected_ms),
        "rejected_p99_ms": _ms(percentile(rejected_ms, 99.0)),
        "errors": sum(by_status.values()),
    }


def latencies_ok_ms(run: LevelRun) -> list[float]:
    """The 2xx answers' latencies of a level, ms, in sample order (for plots)."""
    return _outcomes(run.samples)[0]

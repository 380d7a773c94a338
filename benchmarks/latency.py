"""Client-side latency under closed-loop load (DESIGN §7).

Closed loop at concurrency ``c``: ``c`` workers each send a request, wait for its answer, and
send the next, until the phase's request count is reached. A warm-up phase at the same
concurrency runs first and is not recorded. Every measured request's wall time (send to parsed
answer, ``time.perf_counter``) is kept; failed requests (any non-2xx or transport error; 503s
are *not* retried here) count as errors and are left out of the percentiles.

Reported per level: p50/p95/p99 (linear interpolation, ms) and mean of the successful
requests, throughput ``qps`` = successful requests ÷ measured-phase wall time, the error and
request counts, and Little's law's mean number in flight (Σ request time ÷ wall time). When that
falls clearly under the configured concurrency, the client itself was the bottleneck and the
numbers understate the service; a warning is logged.

This is the ``cxc`` run's small latency section (over the httpx client). Load testing proper —
closed and open loop (Poisson arrivals, latency from the intended send time), 503s counted apart,
the client's own CPU, Little's law on the client's in-flight accounting, over a light raw
asyncio HTTP client — is :mod:`benchmarks.load` / ``python -m benchmarks load``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import numpy as np

from benchmarks.client import ServiceError

logger = logging.getLogger(__name__)

# Little's law in-flight share below which the client is flagged as the bottleneck.
CLIENT_BOUND_RATIO = 0.85

SendRequest = Callable[[int], Awaitable[object]]


@dataclass(frozen=True)
class LatencyResult:
    """One load level's measurements.

    Attributes:
        concurrency: requests kept in flight.
        requests: measured requests sent (warm-up excluded), successes and errors.
        errors: measured requests that failed.
        latencies_ms: per successful measured request, its latency in ms, in completion order.
        wall_s: wall time of the measured phase, seconds.
        busy_s: sum of all measured requests' durations (errors included), seconds.
    """

    concurrency: int
    requests: int
    errors: int
    latencies_ms: tuple[float, ...]
    wall_s: float
    busy_s: float

    def percentile_ms(self, q: float) -> float | None:
        """The ``q``-th percentile (0–100) of successful latencies, ms; ``None`` if none."""
        if not self.latencies_ms:
            return None
        return float(np.percentile(np.asarray(self.latencies_ms), q))

    @property
    def qps(self) -> float:
        """Successful requests per second over the measured phase."""
        successes = self.requests - self.errors
        return successes / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def in_flight_mean(self) -> float:
        """Little's law: mean requests in flight = total request time ÷ wall time."""
        return self.busy_s / self.wall_s if self.wall_s > 0 else 0.0

    def as_report(self) -> dict[str, object]:
        """The ``latency.c<N>`` entry of ``report.json`` (times in ms)."""
        mean = float(np.mean(self.latencies_ms)) if self.latencies_ms else None
        return {
            "p50_ms": self.percentile_ms(50),
            "p95_ms": self.percentile_ms(95),
            "p99_ms": self.percentile_ms(99),
            "mean_ms": mean,
            "qps": self.qps,
            "errors": self.errors,
            "requests": self.requests,
            "concurrency": self.concurrency,
            "in_flight_mean": self.in_flight_mean,
        }


async def _run_phase(
    send: SendRequest, first_index: int, count: int, concurrency: int
) -> tuple[list[float], int, float, float]:
    """Run ``count`` requests closed-loop; returns (latencies ms, errors, wall s, busy s)."""
    latencies: list[float] = []
    errors = 0
    busy = 0.0
    indices = iter(range(first_index, first_index + count))

    async def worker() -> None:
        nonlocal errors, busy
        for index in indices:
            started = time.perf_counter()
            try:
                await send(index)
            except (ServiceError, httpx.HTTPError) as error:
                elapsed = time.perf_counter() - started
                errors += 1
                if errors <= 3:
                    logger.warning("request %d failed: %s", index, error)
            else:
                elapsed = time.perf_counter() - started
                latencies.append(elapsed * 1000.0)
            busy += elapsed

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    return latencies, errors, time.perf_counter() - started, busy


async def closed_loop(
    send: SendRequest, concurrency: int, requests: int, warmup: int = 20
) -> LatencyResult:
    """Measure ``requests`` closed-loop requests at ``concurrency`` after ``warmup`` ones.

    Args:
        send: sends request number ``i`` (warm-up uses 0..warmup-1, measured requests follow)
            and awaits its answer; raises :class:`ServiceError` or an httpx error on failure.
        concurrency: requests in flight (≥ 1).
        requests: measured requests (≥ 1).
        warmup: unrecorded requests sent first at the same concurrency.
    """
    if concurrency < 1 or requests < 1 or warmup < 0:
        raise ValueError("need concurrency ≥ 1, requests ≥ 1, warmup ≥ 0")
    if warmup:
        await _run_phase(send, 0, warmup, concurrency)
    latencies, errors, wall, busy = await _run_phase(send, warmup, requests, concurrency)
    result = LatencyResult(
        concurrency=concurrency,
        requests=requests,
        errors=errors,
        latencies_ms=tuple(latencies),
        wall_s=wall,
        busy_s=busy,
    )
    if result.in_flight_mean < CLIENT_BOUND_RATIO * concurrency:
        logger.warning(
            "concurrency %d: only %.2f requests in flight on average (Little's law); "
            "the client may be the bottleneck",
            concurrency,
            result.in_flight_mean,
        )
    return result

"""Client-side latency numbers: percentiles, the closed-loop level entry, Little's law.

- :func:`percentile`: linear interpolation between order statistics (numpy's default method).
- :class:`LatencyResult`: one closed-loop level as the quality and compare runs report it
  (``latency.c<N>``): p50/p95/p99 and mean of the successful requests, ``qps`` = successes ÷
  the measured wall time, errors, requests, and Little's law's mean number in flight (Σ request
  time ÷ wall time). The load run's richer per-level entry is
  :func:`benchmarks.drivers.level_summary.summarize`.
- :func:`littles_law`: L = X·W against the client's own count of requests on the wire.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LITTLE_TOLERANCE = 0.10
"""Largest relative disagreement of Little's law terms before a level is flagged."""


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


@dataclass(frozen=True)
class LatencyResult:
    """One closed-loop level's measurements, as the quality and compare reports keep them.

    Attributes:
        concurrency: requests kept in flight.
        requests: measured requests sent (warm-up excluded), successes and errors.
        errors: measured requests that failed.
        latencies_ms: per successful measured request, its latency in ms.
        wall_s: wall time of the measured phase, seconds.
        busy_s: sum of all measured requests' durations (errors included), seconds.
    """

    concurrency: int
    requests: int
    errors: int
    latencies_ms: tuple[float, ...]
    wall_s: float
    busy_s: float

    @classmethod
    def merged(cls, concurrency: int, parts: Sequence[LatencyResult]) -> LatencyResult:
        """Several measured chunks of one level as one: counts, latencies, wall and busy
        time added up (percentiles over all latencies, throughput over the summed wall)."""
        return cls(
            concurrency=concurrency,
            requests=sum(part.requests for part in parts),
            errors=sum(part.errors for part in parts),
            latencies_ms=tuple(value for part in parts for value in part.latencies_ms),
            wall_s=sum(part.wall_s for part in parts),
            busy_s=sum(part.busy_s for part in parts),
        )

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

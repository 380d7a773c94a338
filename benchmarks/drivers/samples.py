"""What a driver records of one level: a :class:`Sample` per request, the level's
:class:`LevelRun`, and the client's own count of requests on the wire (:class:`InFlightMeter`).

Time is ``time.perf_counter`` seconds; reports are in milliseconds
(:mod:`benchmarks.drivers.level_summary`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from benchmarks.drivers.sender import Sender, TransportFailure


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

    @property
    def from_send_ms(self) -> float | None:
        """Time from when a connection took the request to the complete answer, ms: the latency
        without the client's dispatch lag and pool wait (``None`` if not sent or not done)."""
        if self.sent is None or self.done is None:
            return None
        return (self.done - self.sent) * 1000.0


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


async def timed_send(sender: Sender, sample: Sample, index: int, meter: InFlightMeter) -> None:
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

"""The door's admission gate: at most ``limit`` requests in flight, a short waiting room for
bursts, and none for sustained overload.

A fixed in-flight limit alone refuses the bursts of a Poisson stream well below saturation (on
2 CPU cores with a limit of 3, 8 % of requests got 503 at half the saturation rate). A waiting
room fixes that, but under sustained overload it would only add its wait to every admitted
request. So the gate tells the two apart: it counts arrivals and completions over short
windows, and while the arrivals of a window outnumber by more than :data:`OVERLOAD_RATIO` the
most completions of the last :data:`CAPACITY_WINDOWS` windows (what the service has shown it can
do) the service is *overloaded* — a request that finds no free slot is refused at once.
Otherwise it waits, first come first served, for up to ``max_wait_s``, beside at most
``max_waiting`` others. (Comparing with the window's own completions would never end an
overload: refusing leaves slots idle between arrivals, so completions fall with it.)

Everything runs on one event loop (no locks); ``clock`` is injectable for tests.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Final, Literal

OVERLOAD_RATIO: Final = 1.1
"""Arrivals per window over the capacity seen (most completions per window) above which the
service counts as overloaded: below saturation the ratio stays under 1, at twice saturation it
is about 2."""

CAPACITY_WINDOWS: Final = 8
"""How many recent windows the capacity (most completions in one window) is taken over."""

WINDOW_S: Final = 0.25
"""Length of one counting window, in seconds: short, so that the start of an overload queues
few requests before the gate stops queueing."""

Refusal = Literal["in_flight", "waiting_room_full", "queue_timeout"]
"""Why a request was refused: no free slot while overloaded, the waiting room full, or its
wait of ``max_wait_s`` ran out."""


class AdmissionGate:
    """``limit`` slots, a FIFO waiting room of ``max_waiting`` requests that wait at most
    ``max_wait_s`` seconds (0: no waiting room), and overload detection (see the module)."""

    def __init__(
        self,
        limit: int,
        max_waiting: int,
        max_wait_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or max_waiting < 0 or max_wait_s < 0:
            raise ValueError(f"bad admission gate: {limit=}, {max_waiting=}, {max_wait_s=}")
        self.limit = limit
        self.max_waiting = max_waiting
        self.max_wait_s = max_wait_s
        self._clock = clock
        self.in_flight = 0
        self.overloaded = False
        self._waiters: deque[asyncio.Future[bool]] = deque()
        self._window_start = clock()
        self._arrivals = 0
        self._completions = 0
        self._recent_completions: deque[int] = deque(maxlen=CAPACITY_WINDOWS)

    @property
    def waiting(self) -> int:
        """Requests in the waiting room now."""
        return len(self._waiters)

    async def acquire(self) -> Refusal | None:
        """Take a slot, waiting for one if the gate allows; None once admitted (the caller
        must :meth:`release` it), else why the request is refused."""
        self._count_arrival()
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return None
        if self.overloaded or self.max_wait_s == 0:
            return "in_flight"
        if len(self._waiters) >= self.max_waiting:
            return "waiting_room_full"
        handed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append(handed)
        try:
            await asyncio.wait_for(asyncio.shield(handed), timeout=self.max_wait_s)
        except TimeoutError:
            self._withdraw(handed)
            return "queue_timeout"
        except asyncio.CancelledError:
            self._withdraw(handed)
            raise
        return None

    def release(self) -> None:
        """Give a slot back: to the longest-waiting request, if any, else to the pool."""
        self._completions += 1
        while self._waiters:
            handed = self._waiters.popleft()
            if not handed.done():
                handed.set_result(True)  # the slot passes on: in_flight is unchanged
                return
        self.in_flight -= 1

    def _withdraw(self, handed: asyncio.Future[bool]) -> None:
        """A waiter leaves (timed out or cancelled); a slot already handed to it goes back."""
        if handed.done():
            self.release()
            self._completions -= 1  # that slot served no request
            return
        handed.cancel()
        self._waiters.remove(handed)

    def _count_arrival(self) -> None:
        now = self._clock()
        if now - self._window_start >= WINDOW_S:
            self._recent_completions.append(self._completions)
            capacity = max(self._recent_completions)
            self.overloaded = self._arrivals > OVERLOAD_RATIO * capacity + 1
            self._window_start = now
            self._arrivals = 0
            self._completions = 0
        self._arrivals += 1

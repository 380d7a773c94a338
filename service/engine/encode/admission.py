"""The door's admission gate: two in-flight limits, a short waiting room for bursts, and none
for sustained overload.

Below overload a request is admitted while fewer than ``limit`` are in flight; batching many
queued inputs is what gives a saturated service its throughput, and a closed-loop client
(one request after another) waits for its answers anyway. One that finds every slot taken
waits, first come first served, for up to ``max_wait_s`` beside at most ``max_waiting`` others:
a fixed limit alone would refuse the bursts of a Poisson stream well below saturation.

Under sustained overload — more arrivals than the service completes — every admitted request
would only queue behind the others. So the gate counts arrivals and completions over short
windows, and while the service is *overloaded* it admits only up to ``overload_limit`` (a few
per core: the admitted requests keep near-unloaded latency), empties the waiting room and
refuses the excess at once: fast 503s instead of slow answers.

The service counts as overloaded after :data:`TURNING_WINDOWS` windows in a row in which it
was saturated — requests queued at the door (every slot taken; without a waiting room, every
slot taken) for half the window or more: a short burst after a quiet spell is not an
overload — and the arrivals outnumbered the completions by more than :data:`OVERLOAD_RATIO`.
(One such window is not enough: a closed loop of clients starting up sends all its first
requests at once, then one per completion.) A closed loop of at most ``limit`` clients never
queues at the door, so it never counts as overloaded however its arrivals bunch up: clients
joining a few at a time, or coming back together after an encoder batch answered them all,
once made 32 clients look 10 % over capacity two windows in a row. The overload ends
after as many windows in a row whose arrivals are within the capacity seen: the most
completions of any of the last :data:`CAPACITY_WINDOWS` windows outside overload (the
overload's own completions understate it: refusing leaves slots idle between arrivals, and the
lower limit admits fewer). Windows without a single arrival count too: after a quiet spell the
overload is over, even when the next clients retry each 503 at once. Without the margin
between the two rules, random arrivals a little over capacity would flip the gate back and
forth.

The first windows of an overload still admit up to ``limit``: those requests queue, and answer
late. ``benchmarks load`` sends a warm-up at each open-loop rate and reports it apart.

Everything runs on one event loop (no locks); ``clock`` is injectable for tests.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Final, Literal

OVERLOAD_RATIO: Final = 1.1
"""Arrivals per window over the completions above which the service counts as overloaded:
below saturation, or in a closed loop, the ratio stays near 1; at twice saturation it is 2."""

TURNING_WINDOWS: Final = 2
"""Windows in a row that start an overload (saturated, arrivals over completions) or end it
(arrivals within the capacity seen): one window can be a closed loop starting up, or a lull in
random arrivals."""

CAPACITY_WINDOWS: Final = 8
"""How many recent windows outside overload the capacity (most completions in one window) is
taken over."""

WINDOW_S: Final = 0.25
"""Length of one counting window, in seconds: short, so that the start of an overload admits
few requests at the high limit before the low one applies."""

Refusal = Literal["in_flight", "waiting_room_full", "queue_timeout"]
"""Why a request was refused: no free slot while overloaded, the waiting room full, or its
wait of ``max_wait_s`` ran out."""


class AdmissionGate:
    """``limit`` slots (``overload_limit`` while overloaded), a FIFO waiting room of
    ``max_waiting`` requests that wait at most ``max_wait_s`` seconds (0: no waiting room), and
    overload detection (see the module). ``overload_limit`` above ``limit`` counts as
    ``limit``."""

    def __init__(
        self,
        limit: int,
        overload_limit: int,
        max_waiting: int,
        max_wait_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or max_waiting < 0 or max_wait_s < 0:
            raise ValueError(f"bad admission gate: {limit=}, {max_waiting=}, {max_wait_s=}")
        self.limit = limit
        self.overload_limit = limit
        self.set_overload_limit(overload_limit)
        self.max_waiting = max_waiting
        self.max_wait_s = max_wait_s
        self._clock = clock
        self.in_flight = 0
        self.overloaded = False
        self._waiters: deque[asyncio.Future[bool]] = deque()
        self._window_start = clock()
        self._arrivals = 0
        self._completions = 0
        # Seconds of this window saturated (requests queued at the door), and since when
        # (None while not).
        self._saturated_s = 0.0
        self._saturated_since: float | None = None
        self._capacity_seen: deque[int] = deque(maxlen=CAPACITY_WINDOWS)
        # Windows in a row that point to the other state (overloaded or not).
        self._turning_windows = 0

    def set_overload_limit(self, overload_limit: int) -> None:
        """From now on, ``overload_limit`` slots while overloaded (above ``limit``: ``limit``);
        requests already in flight keep theirs."""
        if overload_limit < 1:
            raise ValueError(f"bad admission gate: {overload_limit=}")
        self.overload_limit = min(overload_limit, self.limit)

    @property
    def waiting(self) -> int:
        """Requests in the waiting room now."""
        return len(self._waiters)

    @property
    def current_limit(self) -> int:
        """The in-flight limit that applies now: ``overload_limit`` while overloaded."""
        return self.overload_limit if self.overloaded else self.limit

    async def acquire(self) -> Refusal | None:
        """Take a slot, waiting for one if the gate allows; None once admitted (the caller
        must :meth:`release` it), else why the request is refused."""
        now = self._clock()
        self._count_arrival(now)
        if self.in_flight < self.current_limit and not self._waiters:
            self.in_flight += 1
            self._track_saturation(now)
            return None
        if self.overloaded or self.max_wait_s == 0:
            return "in_flight"
        if len(self._waiters) >= self.max_waiting:
            return "waiting_room_full"
        handed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append(handed)
        self._track_saturation(now)
        try:
            admitted = await asyncio.wait_for(asyncio.shield(handed), timeout=self.max_wait_s)
        except TimeoutError:
            self._withdraw(handed)
            return "queue_timeout"
        except asyncio.CancelledError:
            self._withdraw(handed)
            raise
        return None if admitted else "in_flight"

    def release(self) -> None:
        """Give a slot back: to the longest-waiting request, if any, else to the pool."""
        self._completions += 1
        while self._waiters:
            handed = self._waiters.popleft()
            if not handed.done():
                handed.set_result(True)  # the slot passes on: in_flight is unchanged
                self._track_saturation(self._clock())
                return
        self.in_flight -= 1
        self._track_saturation(self._clock())

    def _withdraw(self, handed: asyncio.Future[bool]) -> None:
        """A waiter leaves (timed out or cancelled); a slot already handed to it goes back."""
        if handed.done():
            if handed.result():
                self.release()
                self._completions -= 1  # that slot served no request
            return
        handed.cancel()
        self._waiters.remove(handed)
        self._track_saturation(self._clock())

    def _track_saturation(self, now: float) -> None:
        """Start or stop the saturation clock: requests queue at the door (without a waiting
        room: every slot is taken)."""
        if self.max_wait_s > 0 and self.max_waiting > 0:
            saturated = bool(self._waiters)
        else:
            saturated = self.in_flight >= self.limit
        if saturated and self._saturated_since is None:
            self._saturated_since = now
        elif not saturated and self._saturated_since is not None:
            self._saturated_s += now - self._saturated_since
            self._saturated_since = None

    def _count_arrival(self, now: float) -> None:
        if now - self._window_start >= WINDOW_S:
            self._close_window(now)
        self._arrivals += 1

    def _close_window(self, now: float) -> None:
        """Judge the window that ends at ``now`` (see the module) and start the next."""
        elapsed = now - self._window_start
        saturated_s = self._saturated_s
        if self._saturated_since is not None:
            saturated_s += now - self._saturated_since
            self._saturated_since = now
        if self.overloaded:
            capacity = max(max(self._capacity_seen, default=0), self._completions)
            turning = self._arrivals <= capacity
        else:
            self._capacity_seen.append(self._completions)
            turning = (
                saturated_s >= elapsed / 2
                and self._arrivals > OVERLOAD_RATIO * self._completions + 1
            )
        self._turning_windows = self._turning_windows + 1 if turning else 0
        # Whole windows after this one's start without an arrival: quiet windows end an
        # overload and break a run of overloaded-looking ones.
        quiet_windows = int(elapsed // WINDOW_S) - 1
        if quiet_windows > 0:
            self._turning_windows = self._turning_windows + quiet_windows if self.overloaded else 0
        if self._turning_windows >= TURNING_WINDOWS:
            self._turning_windows = 0
            self.overloaded = not self.overloaded
            if self.overloaded:
                self._refuse_waiters()
        self._window_start = now
        self._arrivals = 0
        self._completions = 0
        self._saturated_s = 0.0

    def _refuse_waiters(self) -> None:
        """An overload began: nobody waits any more, and those waiting are refused now rather
        than when their wait runs out."""
        while self._waiters:
            handed = self._waiters.popleft()
            if not handed.done():
                handed.set_result(False)
        self._track_saturation(self._clock())

"""A signal raised whenever a live collection makes writes visible: what reads that wait for a
sequence number (``X-Min-Seq``), a leader's replication fetches and its acknowledgement waits
sleep on, instead of polling."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable


class CommitSignal:
    """Wakes every waiter at each :meth:`fire` (event-loop thread only)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def fire(self) -> None:
        """Wake the waiters (a new round starts for the next ones)."""
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, timeout_s: float) -> None:
        """Sleep until the next :meth:`fire`, at most ``timeout_s``."""
        if timeout_s <= 0:
            return
        event = self._event
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout_s)

    async def wait_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``done()`` holds (checked at every fire), at most ``timeout_s``; returns
        whether it does."""
        deadline = time.monotonic() + timeout_s
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await self.wait(remaining)
        return True

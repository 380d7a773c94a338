"""The commit signal: every fire wakes every waiter; a wait ends at its timeout."""

from __future__ import annotations

import asyncio
import time

from service.engine.collection.commit_signal import CommitSignal


def test_a_fire_wakes_every_waiter_and_a_wait_ends_at_its_timeout() -> None:
    async def run() -> None:
        signal = CommitSignal()
        waiters = [asyncio.create_task(signal.wait(5.0)) for _ in range(3)]
        await asyncio.sleep(0)
        started = time.monotonic()
        signal.fire()
        await asyncio.gather(*waiters)
        assert time.monotonic() - started < 1.0
        started = time.monotonic()
        await signal.wait(0.05)  # nobody fires
        assert 0.04 <= time.monotonic() - started < 1.0
        await signal.wait(0)

    asyncio.run(run())


def test_wait_until_checks_its_condition_at_every_fire() -> None:
    async def run() -> None:
        signal = CommitSignal()
        state = {"n": 0}

        async def bump() -> None:
            for _ in range(3):
                await asyncio.sleep(0.01)
                state["n"] += 1
                signal.fire()

        bumper = asyncio.create_task(bump())
        assert await signal.wait_until(lambda: state["n"] >= 3, 5.0)
        await bumper
        assert not await signal.wait_until(lambda: state["n"] >= 4, 0.05)

    asyncio.run(run())

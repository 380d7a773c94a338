"""A run's phases run in order over one context."""

from __future__ import annotations

import asyncio

from benchmarks.runs.phases import Phase, run_phases


def test_phases_run_in_order_over_the_context() -> None:
    async def first(seen: list[str]) -> None:
        seen.append("first")

    async def second(seen: list[str]) -> None:
        seen.append(f"second after {len(seen)}")

    seen: list[str] = []
    asyncio.run(run_phases((Phase("first", first), Phase("second", second)), seen))
    assert seen == ["first", "second after 1"]

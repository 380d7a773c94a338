"""The admission gate on its own: slots, the waiting room, overload detection, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from service.engine.encode.admission import (
    OVERLOAD_RATIO,
    TURNING_WINDOWS,
    WINDOW_S,
    AdmissionGate,
    Refusal,
)


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def gate(limit: int = 1, max_waiting: int = 4, max_wait_s: float = 5.0) -> AdmissionGate:
    return AdmissionGate(limit, limit, max_waiting, max_wait_s, clock=Clock())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_requests_within_the_limit_pass_and_release_frees_the_slot() -> None:
    async def scenario() -> None:
        door = gate(limit=2)
        assert await door.acquire() is None
        assert await door.acquire() is None
        assert door.in_flight == 2
        door.release()
        assert door.in_flight == 1

    asyncio.run(scenario())


def test_waiters_get_freed_slots_first_come_first_served() -> None:
    async def scenario() -> list[str]:
        door = gate(limit=1)
        order: list[str] = []
        assert await door.acquire() is None

        async def wait(name: str) -> None:
            assert await door.acquire() is None
            order.append(name)

        tasks = [asyncio.create_task(wait(name)) for name in ("a", "b")]
        await settle()
        assert door.waiting == 2
        door.release()  # to "a"
        await settle()
        door.release()  # "a" is done: to "b"
        await asyncio.gather(*tasks)
        assert door.in_flight == 1
        assert door.waiting == 0
        return order

    assert asyncio.run(scenario()) == ["a", "b"]


@pytest.mark.parametrize(
    ("max_waiting", "max_wait_s", "refusal"),
    [(0, 5.0, "waiting_room_full"), (4, 0.0, "in_flight"), (4, 0.01, "queue_timeout")],
)
def test_a_request_that_cannot_wait_is_refused_with_the_reason(
    max_waiting: int, max_wait_s: float, refusal: Refusal
) -> None:
    async def scenario() -> Refusal | None:
        door = gate(limit=1, max_waiting=max_waiting, max_wait_s=max_wait_s)
        assert await door.acquire() is None
        answer = await door.acquire()
        assert door.waiting == 0
        assert door.in_flight == 1
        return answer

    assert asyncio.run(scenario()) == refusal


def test_saturated_windows_with_more_arrivals_than_completions_start_an_overload() -> None:
    async def scenario() -> None:
        clock = Clock()
        door = AdmissionGate(4, 2, max_waiting=64, max_wait_s=5.0, clock=clock)
        assert TURNING_WINDOWS == 2
        # Window 1: five arrivals, four slots: one waits all window; no completion.
        for _ in range(4):
            assert await door.acquire() is None
        waiters = [asyncio.create_task(door.acquire())]
        await settle()
        clock.now += WINDOW_S
        # Window 2: three more arrive and wait, one completion (its slot goes to the first).
        waiters += [asyncio.create_task(door.acquire()) for _ in range(3)]
        await settle()
        assert not door.overloaded  # one window of excess is not enough
        assert door.waiting == 4
        door.release()
        await settle()
        clock.now += WINDOW_S
        # Window 2 closes: overloaded. The waiting room is refused at once, nobody waits.
        assert await door.acquire() == "in_flight"
        assert door.overloaded
        assert door.current_limit == 2
        assert await asyncio.gather(*waiters) == [None, "in_flight", "in_flight", "in_flight"]
        assert door.waiting == 0
        assert door.in_flight == 4
        # Slots free up to the overload limit only.
        door.release()
        door.release()
        assert await door.acquire() == "in_flight"  # 2 in flight: at the overload limit
        door.release()
        assert await door.acquire() is None
        assert door.in_flight == 2

    asyncio.run(scenario())


def test_a_quiet_spell_ends_an_overload_even_if_clients_then_retry_at_once() -> None:
    async def scenario() -> list[bool]:
        clock = Clock()
        door = AdmissionGate(1, 1, max_waiting=0, max_wait_s=0.0, clock=clock)
        assert await door.acquire() is None  # the one slot stays taken
        seen = []
        for _ in range(3):  # 50 arrivals, no completion: overloaded after two windows
            for _ in range(50):
                await door.acquire()
            clock.now += WINDOW_S
        seen.append(door.overloaded)
        door.release()
        clock.now += 3 * WINDOW_S  # nobody comes
        for _ in range(200):  # then a loop of clients retrying every refusal at once
            await door.acquire()
        seen.append(door.overloaded)
        return seen

    assert asyncio.run(scenario()) == [True, False]


def test_a_burst_after_a_quiet_spell_is_not_an_overload() -> None:
    async def scenario() -> None:
        clock = Clock()
        door = AdmissionGate(64, 2, max_waiting=4, max_wait_s=1.0, clock=clock)
        # Quiet for most of the window, then ten arrive at once: saturated for a tenth of it.
        clock.now += 0.9 * WINDOW_S
        for _ in range(10):
            assert await door.acquire() is None
        clock.now += 0.1 * WINDOW_S
        assert await door.acquire() is None
        assert not door.overloaded
        assert door.in_flight == 11

    asyncio.run(scenario())


def test_at_saturation_arrivals_match_completions_and_nobody_counts_as_overloaded() -> None:
    async def scenario() -> None:
        clock = Clock()
        door = AdmissionGate(8, 2, max_waiting=4, max_wait_s=1.0, clock=clock)
        # A closed loop of 8 clients starting up: 8 arrivals at once, then one per completion.
        for _ in range(8):
            assert await door.acquire() is None
        for _ in range(4):
            for _ in range(20):
                door.release()
                assert await door.acquire() is None
                assert not door.overloaded
            clock.now += WINDOW_S
        assert door.current_limit == 8
        assert OVERLOAD_RATIO > 1

    asyncio.run(scenario())


def test_a_cancelled_waiter_leaves_the_room_and_a_slot_handed_to_it_goes_on() -> None:
    async def scenario() -> None:
        door = gate(limit=1)
        assert await door.acquire() is None
        first = asyncio.create_task(door.acquire())
        second = asyncio.create_task(door.acquire())
        await settle()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        assert door.waiting == 1
        # The slot is handed to "second", then "second" is cancelled before it runs: either it
        # still got in (and holds the slot) or the slot went back. It must not leak.
        door.release()
        second.cancel()
        (outcome,) = await asyncio.gather(second, return_exceptions=True)
        if isinstance(outcome, asyncio.CancelledError):
            assert door.in_flight == 0
        else:
            assert outcome is None
            assert door.in_flight == 1
            door.release()
        assert door.waiting == 0
        assert await door.acquire() is None
        assert door.in_flight == 1

    asyncio.run(scenario())


def test_bad_gates_are_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        AdmissionGate(0, 1, 1, 1.0)
    with pytest.raises(ValueError, match="overload_limit"):
        AdmissionGate(4, 0, 1, 1.0)
    assert AdmissionGate(2, 8, 1, 1.0).overload_limit == 2


def test_an_overload_ends_once_arrivals_fall_below_the_capacity_seen() -> None:
    async def window(door: AdmissionGate, clock: Clock, arrivals: int, completions: int) -> None:
        # Arrivals fill the door (the rest are refused: no waiting room), it stays full all
        # window, and the completions come at its end.
        for _ in range(arrivals):
            await door.acquire()
        clock.now += WINDOW_S
        for _ in range(min(completions, door.in_flight)):
            door.release()

    async def scenario() -> list[bool]:
        clock = Clock()
        door = AdmissionGate(5_000, 1, max_waiting=0, max_wait_s=0.0, clock=clock)
        for _ in range(5_000):  # a standing backlog keeps the door full
            assert await door.acquire() is None
        clock.now += WINDOW_S
        seen = []
        # Capacity 40 per window; then twice that arrives (two windows start the overload);
        # then 30 arrive while the overload's completions are 20: within the capacity seen, so
        # after two such windows no longer overloaded.
        for arrivals, completions in [
            (40, 40),
            (40, 40),
            (80, 40),
            (80, 40),
            (80, 40),
            (30, 20),
            (30, 20),
            (30, 30),
        ]:
            await window(door, clock, arrivals, completions)
            seen.append(door.overloaded)
        return seen

    # the flag is decided by the first arrival of the next window
    assert asyncio.run(scenario()) == [False, False, False, False, True, True, True, False]


@pytest.mark.parametrize("clients", [8, 32, 64])
def test_a_closed_loop_of_at_most_limit_clients_is_never_overloaded(clients: int) -> None:
    # Clients join two at a time (as a load generator's connections open), an encoder answers
    # batches of up to 8 requests at once every 47 ms and the clients come back
    # a moment later; now and then they all stop and start again (a benchmark's warm-up, then
    # its measured phase). While they join, arrivals exceed completions by far more than
    # OVERLOAD_RATIO for two windows and more: measured on the real service, 98 arrivals for 80
    # completions, then 98 for 86, which turned 32 clients into an "overload" that their
    # instant retries of each 503 then kept going.
    async def scenario() -> tuple[int, bool]:
        clock = Clock()
        door = AdmissionGate(64, 2, max_waiting=64, max_wait_s=0.05, clock=clock)
        batch_s = 0.047
        refused = 0
        for phase in range(6):
            started = 0
            for _ in range(40):
                joining = min(clients - started, 2)
                for _ in range(joining):
                    refused += await door.acquire() is not None
                started += joining
                clock.now += batch_s
                answered = min(8, door.in_flight)
                for _ in range(answered):
                    door.release()
                clock.now += 0.001 * (1 + phase)
                for _ in range(answered):
                    refused += await door.acquire() is not None
            while door.in_flight:  # the clients stop: everything in flight completes
                clock.now += batch_s
                for _ in range(min(8, door.in_flight)):
                    door.release()
            clock.now += 0.3
        return refused, door.overloaded

    assert asyncio.run(scenario()) == (0, False)


def test_the_overload_limit_can_change_and_stays_capped_at_the_limit() -> None:
    door = AdmissionGate(8, 2, max_waiting=4, max_wait_s=1.0, clock=Clock())
    door.set_overload_limit(5)
    assert door.overload_limit == 5
    door.set_overload_limit(100)
    assert door.overload_limit == 8
    with pytest.raises(ValueError, match="overload_limit=0"):
        door.set_overload_limit(0)

"""The leader's hub: what a fetch answers (records, or an install and why), acknowledgements
counted from followers' positions in the leader's term only, the lease, long polls woken by a
commit, and a fetch of a later term refused."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.collection.live_collections import LiveCollections
from service.engine.replication.leader import LeaderHub, StaleLeaderError
from service.engine.replication.wire import FetchRequest, Position
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.live.log import read_frames
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec


async def _leader(
    root: Path, set_size: int = 3, lease_s: float = 5.0
) -> tuple[LiveCollections, LeaderHub]:
    live = LiveCollections(Settings(collections_dir=root), ServiceMetrics())
    await live.create(CollectionSpec("c", 4, {"cat": FieldType.STRING}, uid="u"), taken=set())
    hub = LeaderHub(
        live, ServiceMetrics(), term=2, own_url="http://l", set_size=set_size, lease_s=lease_s
    )
    return live, hub


async def _write(live: LiveCollections, item: str) -> int:
    operation = Upsert((item,), np.eye(1, 4, dtype=np.float32), ({},), (None,))
    return (await live.require("c").writer.write(lambda _v: operation)).seq


def _fetch(
    replica: str, after: int, term: int = 0, uid: str = "u", wait_ms: int = 0
) -> FetchRequest:
    positions = {"c": Position(uid, after, term)}
    return FetchRequest(replica, f"http://{replica}", 2, positions, wait_ms=wait_ms)


def test_a_fetch_answers_the_records_after_the_follower_and_counts_its_position(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        live, hub = await _leader(tmp_path)
        for n in range(3):
            await _write(live, f"i{n}")
        answer = await hub.fetch(_fetch("f1", 1))
        (state,) = answer.collections
        assert state.install is None
        assert [r.seq for r in read_frames(state.records, 1)] == [2, 3]
        assert hub.acked("c", "u", 1) == 2
        assert hub.acked("c", "u", 2) == 1  # f1 holds up to 1 durably
        await hub.fetch(_fetch("f1", 3))
        assert hub.acked("c", "u", 3) == 2
        assert hub.acked("c", "other-uid", 3) == 1
        assert answer.members == ("http://l", "http://f1")
        await live.close()

    asyncio.run(run())


@pytest.mark.parametrize(
    ("position", "reason"),
    [
        (None, "new on this follower"),
        (Position("old", 0, 0), "replaced by a collection of the same name"),
        (Position("u", 9, 0), "holds records the leader does not"),
        (Position("u", 1, 5), "diverged from the leader's log"),
    ],
)
def test_a_copy_that_does_not_go_on_is_told_to_install(
    tmp_path: Path, position: Position | None, reason: str
) -> None:
    async def run() -> None:
        live, hub = await _leader(tmp_path)
        await _write(live, "a")
        positions = {} if position is None else {"c": position}
        answer = await hub.fetch(FetchRequest("f", None, 2, positions))
        assert answer.collections[0].install == reason
        assert hub.acked("c", "u", 1) == 1
        await live.close()

    asyncio.run(run())


def test_a_copy_behind_the_base_is_told_to_install(tmp_path: Path) -> None:
    async def run() -> None:
        live, hub = await _leader(tmp_path)
        await _write(live, "a")
        await _write(live, "b")
        await live.require("c").writer.compact()
        answer = await hub.fetch(_fetch("f", 1))
        assert answer.collections[0].install == "behind the leader's base"
        assert answer.collections[0].base_seq == 2
        await live.close()

    asyncio.run(run())


def test_the_lease_needs_a_majority_followed_within_it(tmp_path: Path) -> None:
    async def run() -> None:
        live, hub = await _leader(tmp_path, set_size=3, lease_s=0.2)
        assert not hub.has_quorum()
        await hub.fetch(_fetch("f1", 0))
        assert hub.has_quorum()
        await asyncio.sleep(0.3)
        assert not hub.has_quorum()
        alone = LeaderHub(live, ServiceMetrics(), term=1, own_url="x", set_size=1, lease_s=1)
        assert alone.has_quorum()
        await live.close()

    asyncio.run(run())


def test_a_long_poll_returns_at_the_next_commit_and_acks_wake_writers(tmp_path: Path) -> None:
    async def run() -> None:
        live, hub = await _leader(tmp_path)
        poll = asyncio.create_task(hub.fetch(_fetch("f1", 0, wait_ms=5000)))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        seq = await _write(live, "a")
        answer = await poll
        assert time.monotonic() - started < 2.0
        assert [r.seq for r in read_frames(answer.collections[0].records, 0)] == [seq]
        waiter = asyncio.create_task(hub.wait_acks("c", "u", seq, 2, 5.0))
        await asyncio.sleep(0.02)
        await hub.fetch(_fetch("f1", seq))
        assert await waiter
        assert not await hub.wait_acks("c", "u", seq, 3, 0.05)
        await live.close()

    asyncio.run(run())


def test_a_fetch_from_a_later_term_is_refused(tmp_path: Path) -> None:
    async def run() -> None:
        live, hub = await _leader(tmp_path)
        with pytest.raises(StaleLeaderError):
            await hub.fetch(FetchRequest("f", None, 3, {}))
        await live.close()

    asyncio.run(run())

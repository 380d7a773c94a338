"""The follower's loop against a leader in process: a new collection is installed, records are
applied, added fields and drops are followed, a copy behind the leader's base is installed from
it, and lag is measured; a leader that is gone is retried without losing the copy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from formats.field_types import FieldType
from service.engine.collection.live_collections import LiveCollections
from service.engine.replication.follower import Follower
from service.engine.replication.replica_set import ReplicaSet
from service.engine.replication.wire import FetchAnswer
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec
from tests.fakes.replica_links import ReplicaNetwork

LEADER = "http://leader"


async def _until(condition: object, timeout_s: float = 10.0) -> None:
    assert callable(condition)
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


def test_a_follower_copies_creates_writes_fields_compactions_and_drops(tmp_path: Path) -> None:
    async def run() -> None:
        network = ReplicaNetwork()
        settings = Settings(collections_dir=tmp_path / "leader", advertise_url=LEADER)
        leader_live = LiveCollections(settings, ServiceMetrics())
        leader = ReplicaSet(settings, leader_live, ServiceMetrics(), link=network.link())
        network.members[LEADER] = leader
        await leader.start()
        live = LiveCollections(Settings(collections_dir=tmp_path / "copy"), ServiceMetrics())
        answers: list[FetchAnswer] = []

        async def on_answer(answer: FetchAnswer) -> None:
            answers.append(answer)

        async def on_moved(_leader: str | None) -> None:
            raise AssertionError("the leader never moves here")

        def following() -> Follower:
            made = Follower(
                live,
                network.link(),
                ServiceMetrics(),
                leader=LEADER,
                replica="f",
                url="http://f",
                term=lambda: 0,
                on_answer=on_answer,
                on_moved=on_moved,
                max_bytes=1 << 20,
            )
            made.start()
            return made

        follower = following()
        spec = CollectionSpec("c", 4, {"cat": FieldType.STRING}, uid="u1")
        entry = await leader_live.create(spec, taken=set())

        async def write(item: str) -> int:
            op = Upsert((item,), np.eye(1, 4, dtype=np.float32), ({"cat": "x"},), (None,))
            return (await entry.writer.write(lambda _v: op)).seq

        seq = await write("a")
        await _until(
            lambda: live.get("c") is not None and live.require("c").collection.visible_seq == seq
        )
        await leader_live.add_fields("c", {"n": FieldType.INTEGER}, max_fields=10)
        await _until(lambda: "n" in live.require("c").collection.spec.fields)
        # A field added and written while the follower is away arrives before its records.
        await follower.stop()
        await leader_live.add_fields("c", {"m": FieldType.INTEGER}, max_fields=10)
        with_m = Upsert(("m1",), np.eye(1, 4, dtype=np.float32), ({"cat": "x", "m": 3},), (None,))
        seq = (await entry.writer.write(lambda _v: with_m)).seq
        follower = following()
        await _until(lambda: live.require("c").collection.visible_seq == seq)
        copy = live.require("c")
        assert "m" in copy.collection.spec.fields
        assert "m" in copy.fields.columns
        view = copy.collection.view()
        row = view.row_of("m1")
        assert row is not None
        assert view.metadata(row)["m"] == 3
        # Stop following, let the leader compact past the copy, follow again: installed.
        await follower.stop()
        await write("b")
        seq = await write("c")
        await entry.writer.compact()
        follower = following()
        await _until(lambda: follower.progress.installs == 1)
        await _until(lambda: live.require("c").collection.visible_seq == seq)
        copy = live.require("c").collection
        assert copy.base_seq == seq
        assert {copy.view().item_id(int(r)) for r in copy.view().live_rows()} == {
            "a",
            "b",
            "c",
            "m1",
        }
        assert follower.progress.installs == 1
        await _until(lambda: "c" in follower.progress.confirmed)  # the next answer confirms it
        # The leader goes away and comes back: the copy stays, the loop goes on.
        del network.members[LEADER]
        await _until(lambda: follower.progress.last_error is not None)  # after its long poll
        network.members[LEADER] = leader
        await leader_live.drop("c")
        await _until(lambda: live.get("c") is None)
        await follower.stop()
        await leader.stop()
        await leader_live.close()
        await live.close()
        assert answers

    asyncio.run(run())


def test_a_long_apply_keeps_the_leaders_lease_with_heartbeats(tmp_path: Path) -> None:
    async def run() -> None:
        network = ReplicaNetwork()
        settings = Settings(
            collections_dir=tmp_path / "leader",
            advertise_url=LEADER,
            replica_set_size=2,
            leader_lease_s=1.5,
        )
        leader_live = LiveCollections(settings, ServiceMetrics())
        leader = ReplicaSet(settings, leader_live, ServiceMetrics(), link=network.link())
        network.members[LEADER] = leader
        await leader.start()
        entry = await leader_live.create(CollectionSpec("c", 4, {}, uid="u"), taken=set())
        follower_settings = Settings(
            collections_dir=tmp_path / "f",
            advertise_url="http://f",
            follow=LEADER,
            replica_set_size=2,
        )
        live = LiveCollections(follower_settings, ServiceMetrics())
        replica = ReplicaSet(follower_settings, live, ServiceMetrics(), link=network.link())
        await replica.start()
        await _until(lambda: live.get("c") is not None)
        copy_writer = live.require("c").writer
        slow = copy_writer.replicate

        async def slow_replicate(data: bytes) -> int:
            await asyncio.sleep(4.0)  # a compaction of a large collection
            return await slow(data)

        copy_writer.replicate = slow_replicate  # type: ignore[method-assign]
        op = Upsert(("a",), np.eye(1, 4, dtype=np.float32), ({},), (None,))
        await entry.writer.write(lambda _v: op)
        hub = leader.hub
        assert hub is not None
        for _ in range(30):  # 3 s into the 4 s apply, twice the lease: still followed
            await asyncio.sleep(0.1)
            assert hub.has_quorum()
        await replica.stop()
        await live.close()
        await leader.stop()
        await leader_live.close()

    asyncio.run(run())

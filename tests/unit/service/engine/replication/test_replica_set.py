"""Three replicas of a live collection in process, against a reference model: seeded random
writes (upserts, replacements, metadata patches, deletes by ids and by filter) acknowledged by a
majority, compactions on the leader and on followers, follower restarts (catching up from the
log, or across a compaction from the leader's base), promotions of the most advanced follower,
and a stale leader's return with writes only it held (acks=leader, its followers down) — after
every round all replicas equal the model: the same items in the same order, vectors byte-equal,
metadata as written; the stale leader's own writes are gone, and it took no write while
stale. Plus the rules one at a time: votes, fencing, idempotency, acknowledgement timeouts,
reads that wait for a sequence number."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.collection.live_collections import LiveCollections
from service.engine.collection.write_path import Plan
from service.engine.replication.replica_set import ReplicaSet
from service.engine.replication.wire import FetchRequest, Position
from service.exceptions import (
    NoQuorumError,
    NotLeaderError,
    PromotionRefusedError,
    ReplicaBehindError,
    ReplicationTimeoutError,
)
from service.metrics import ServiceMetrics
from service.settings import Acks, Settings
from storage.live.operations import Delete, Operation, Upsert
from storage.live.segment import SegmentView
from storage.live.spec import CollectionSpec
from tests.fakes.replica_links import ReplicaNetwork

DIM = 8
NAME = "v"
URLS = ("http://r0", "http://r1", "http://r2")
Model = dict[str, tuple[bytes, dict[str, Any]]]


class Cluster:
    """Three replica sets over one in-process network, their folders under ``root``."""

    def __init__(self, root: Path, **settings: Any) -> None:
        self.root = root
        self.network = ReplicaNetwork()
        self.settings = settings

    def node(self, url: str) -> ReplicaSet:
        return self.network.members[url]

    @property
    def up(self) -> list[str]:
        return [url for url in URLS if url in self.network.members]

    async def start(self, url: str, follow: str | None = None) -> ReplicaSet:
        options: dict[str, Any] = {
            "replica_set_size": 3,
            "leader_lease_s": 30.0,
            "ack_timeout_s": 5.0,
            "read_wait_s": 5.0,
            **self.settings,
        }
        settings = Settings(
            collections_dir=self.root / url.removeprefix("http://"),
            advertise_url=url,
            follow=follow,
            **options,
        )
        live = LiveCollections(settings, ServiceMetrics())
        await asyncio.to_thread(live.open_all)
        replicas = ReplicaSet(settings, live, ServiceMetrics(), link=self.network.link())
        self.network.members[url] = replicas
        await replicas.start()
        return replicas

    async def stop(self, url: str) -> None:
        replicas = self.network.members.pop(url)
        await replicas.stop()
        await replicas.live.close()

    def leader(self) -> str:
        """The leader of the latest term (a stale one may still think it leads its own)."""
        leaders = [url for url in self.up if self.node(url).role == "leader"]
        assert leaders, "no leader"
        return max(leaders, key=lambda url: self.node(url).state.term)

    async def caught_up(self, timeout_s: float = 15.0) -> None:
        """Wait until every replica up holds what the leader holds."""
        leader = self.node(self.leader())

        def done() -> bool:
            target = leader.position()
            for url in self.up:
                node = self.node(url)
                if node.position() != target:
                    return False
                follower = node.follower
                if follower is not None and not set(target) <= follower.progress.confirmed:
                    return False
            return True

        for _ in range(int(timeout_s / 0.02)):
            if done():
                return
            await asyncio.sleep(0.02)
        positions = {url: self.node(url).position() for url in self.up}
        raise AssertionError(f"replicas did not catch up: {positions}")

    async def close(self) -> None:
        for url in list(self.up):
            await self.stop(url)


async def _write(
    replicas: ReplicaSet, plan: Plan, acks: Acks = "majority", key: str | None = None
) -> int:
    replicas.check_writes()
    entry = replicas.live.require(NAME)
    result = await entry.writer.write(plan, None, key or uuid.uuid4().hex)
    await replicas.acknowledge(entry.collection, result.seq, acks)
    return result.seq


def _upsert(ids: list[str], rng: np.random.Generator, cat: str) -> tuple[Plan, Model]:
    vectors = rng.standard_normal((len(ids), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    operation = Upsert(tuple(ids), vectors, tuple({"cat": cat} for _ in ids), (None,) * len(ids))
    written = {item: (vectors[i].tobytes(), {"cat": cat}) for i, item in enumerate(ids)}
    return (lambda _view: operation), written


def _delete_by_cat(cat: str, deleted: list[str]) -> Plan:
    def plan(view: SegmentView) -> Operation:
        ids = tuple(
            view.item_id(int(r)) for r in view.live_rows() if view.metadata(int(r)) == {"cat": cat}
        )
        deleted.extend(ids)
        return Delete(ids)

    return plan


def _patch(item: str, cat: str) -> Plan:
    def plan(view: SegmentView) -> Operation:
        row = view.row_of(item)
        assert row is not None
        return Upsert((item,), view.vectors_of(np.array([row])), ({"cat": cat},), (None,))

    return plan


def _contents(replicas: ReplicaSet) -> list[tuple[str, bytes, dict[str, Any]]]:
    view = replicas.live.require(NAME).collection.view()
    return [
        (view.item_id(int(r)), view.vector(int(r)).tobytes(), dict(view.metadata(int(r))))
        for r in view.live_rows()
    ]


def _assert_all_equal(cluster: Cluster, model: Model) -> None:
    leader = _contents(cluster.node(cluster.leader()))
    assert {item: (vector, meta) for item, vector, meta in leader} == model
    for url in cluster.up:
        assert _contents(cluster.node(url)) == leader, url  # same items, same order


def _run(body: Callable[[Cluster], Awaitable[None]], root: Path, **settings: Any) -> None:
    async def main() -> None:
        cluster = Cluster(root, **settings)
        try:
            await body(cluster)
        finally:
            await cluster.close()

    asyncio.run(main())


async def _three(cluster: Cluster) -> ReplicaSet:
    leader = await cluster.start(URLS[0])
    await cluster.start(URLS[1], follow=URLS[0])
    await cluster.start(URLS[2], follow=URLS[0])
    spec = CollectionSpec(NAME, DIM, {"cat": FieldType.STRING}, uid=uuid.uuid4().hex)
    await leader.live.create(spec, taken=set())
    for _ in range(500):
        if leader.hub is not None and leader.hub.has_quorum():
            break
        await asyncio.sleep(0.01)
    await cluster.caught_up()
    return leader


async def _promote_most_advanced(cluster: Cluster) -> str:
    followers = sorted(
        (url for url in cluster.up if cluster.node(url).role == "follower"),
        key=lambda url: cluster.node(url).position().get(NAME, 0),
        reverse=True,
    )
    for url in followers:
        try:
            await cluster.node(url).promote()
        except PromotionRefusedError:
            continue
        return url
    raise AssertionError("no follower could be promoted")


@pytest.mark.parametrize("seed", [0, 1])
def test_random_rounds_keep_every_replica_equal_to_the_model(tmp_path: Path, seed: int) -> None:
    rng_py = random.Random(seed)
    rng = np.random.default_rng(seed)
    model: Model = {}
    tally: dict[str, int] = {}

    async def body(cluster: Cluster) -> None:
        await _three(cluster)
        for round_number in range(24):
            leader_url = cluster.leader()
            leader = cluster.node(leader_url)
            for _ in range(rng_py.randint(3, 8)):
                kind = rng_py.choice(["upsert", "upsert", "patch", "delete", "filter"])
                tally[kind] = tally.get(kind, 0) + 1
                if kind == "upsert" or not model:
                    ids = rng_py.sample(range(80), rng_py.randint(1, 6))
                    plan, written = _upsert([f"i{n}" for n in ids], rng, rng_py.choice("abc"))
                    await _write(leader, plan)
                    model.update(written)
                elif kind == "patch":
                    item, cat = rng_py.choice(sorted(model)), rng_py.choice("abc")
                    await _write(leader, _patch(item, cat))
                    model[item] = (model[item][0], {"cat": cat})
                elif kind == "delete":
                    ids = rng_py.sample(sorted(model), min(len(model), 3))
                    await _write(leader, lambda _v, ids=tuple(ids): Delete(ids))
                    for item in ids:
                        del model[item]
                else:
                    deleted: list[str] = []
                    await _write(leader, _delete_by_cat(rng_py.choice("abc"), deleted))
                    for item in deleted:
                        del model[item]
            fault = rng_py.choice(["restart", "compact", "follower-compact", "promote", "stale"])
            tally[fault] = tally.get(fault, 0) + 1
            followers = [url for url in cluster.up if url != leader_url]
            if fault == "restart":
                url = rng_py.choice(followers)
                await cluster.stop(url)
                plan, written = _upsert([f"r{round_number}"], rng, "a")
                await _write(leader, plan)  # the leader and the other follower: a majority
                model.update(written)
                if rng_py.random() < 0.5:
                    await leader.live.require(NAME).writer.compact()  # past the stopped one
                await cluster.start(url, follow=leader_url)
            elif fault == "compact":
                await leader.live.require(NAME).writer.compact()
            elif fault == "follower-compact":
                await cluster.caught_up()
                await cluster.node(rng_py.choice(followers)).live.require(NAME).writer.compact()
            elif fault == "promote":
                await cluster.stop(leader_url)
                await _promote_most_advanced(cluster)
                await cluster.start(leader_url)  # comes back leading its old term, fenced out
                with pytest.raises((NoQuorumError, NotLeaderError)):
                    cluster.node(leader_url).check_writes()
                await cluster.node(leader_url).follow(cluster.leader())
            else:  # the leader alone takes writes (acks=leader), then dies with them
                for url in followers:
                    await cluster.stop(url)
                lost, _ = _upsert([f"lost{round_number}"], rng, "z")
                await _write(leader, lost, acks="leader")
                await cluster.stop(leader_url)
                for url in followers:
                    await cluster.start(url, follow=leader_url)
                new_leader = await _promote_most_advanced(cluster)
                plan, written = _upsert([f"after{round_number}"], rng, "b")
                await _write(cluster.node(new_leader), plan)
                model.update(written)
                await cluster.start(leader_url)
                with pytest.raises((NoQuorumError, NotLeaderError)):
                    cluster.node(leader_url).check_writes()
                await cluster.node(leader_url).follow(new_leader)
            await cluster.caught_up()
            _assert_all_equal(cluster, model)

    _run(body, tmp_path)
    assert tally.get("promote", 0) + tally.get("stale", 0) > 0, tally


def test_a_vote_is_refused_to_a_candidate_behind_a_voter(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        leader = await _three(cluster)
        await cluster.stop(URLS[2])
        plan, _ = _upsert(["x"], np.random.default_rng(0), "a")
        await _write(leader, plan)  # on r0 and r1, not on r2
        await cluster.stop(URLS[0])
        await cluster.start(URLS[2], follow=URLS[0])
        with pytest.raises(PromotionRefusedError, match="holds collection"):
            await cluster.node(URLS[2]).promote()  # r1 holds a write r2 lacks
        assert cluster.node(URLS[2]).role == "follower"
        await cluster.node(URLS[1]).promote()
        assert cluster.leader() == URLS[1]
        assert cluster.node(URLS[2]).state.leader == URLS[1]  # the voter follows the winner
        await cluster.caught_up()
        view = cluster.node(URLS[2]).live.require(NAME).collection.view()
        assert view.row_of("x") is not None

    _run(body, tmp_path)


def test_a_leader_fetched_from_by_a_later_term_is_fenced(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        leader = await _three(cluster)
        request = FetchRequest("someone", None, leader.state.term + 1, {}, wait_ms=0)
        with pytest.raises(NotLeaderError, match="steps down"):
            await leader.fetch(request)
        assert leader.role == "fenced"
        with pytest.raises(NotLeaderError):
            leader.check_writes()

    _run(body, tmp_path)


def test_a_retried_write_applies_once_on_any_replica_after_a_failover(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        leader = await _three(cluster)
        plan, _ = _upsert(["a", "b"], np.random.default_rng(1), "a")
        first = await _write(leader, plan, key="retry-me")
        assert await _write(leader, plan, key="retry-me") == first
        await cluster.caught_up()
        await cluster.stop(URLS[0])
        new_leader = cluster.node(await _promote_most_advanced(cluster))
        assert await _write(new_leader, plan, key="retry-me") == first  # remembered there too
        assert new_leader.live.require(NAME).collection.visible_seq == first

    _run(body, tmp_path)


def test_an_acknowledgement_that_cannot_come_times_out(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        leader = await _three(cluster)
        await cluster.stop(URLS[2])
        plan, _ = _upsert(["a"], np.random.default_rng(2), "a")
        await _write(leader, plan, acks="majority")
        with pytest.raises(ReplicationTimeoutError) as raised:
            await _write(leader, plan, acks="all")
        assert raised.value.seq == leader.live.require(NAME).collection.visible_seq

    _run(body, tmp_path, ack_timeout_s=0.3)


def test_a_read_waits_for_its_sequence_number_then_gives_up(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        leader = await _three(cluster)
        follower = cluster.node(URLS[1])
        plan, _ = _upsert(["a"], np.random.default_rng(3), "a")
        seq = await _write(leader, plan, acks="leader")
        await follower.await_reads([NAME], {NAME: seq})
        assert follower.live.require(NAME).collection.visible_seq >= seq
        with pytest.raises(ReplicaBehindError, match="not 999"):
            await follower.await_reads([NAME], {NAME: 999})
        # Without X-Min-Seq a follower asks the leader (follower_reads=leader).
        seq = await _write(leader, plan, acks="leader", key="second")
        await follower.await_reads([NAME], {})
        assert follower.live.require(NAME).collection.visible_seq >= seq

    _run(body, tmp_path, read_wait_s=0.3)


def test_writes_to_a_follower_name_the_leader(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        await _three(cluster)
        with pytest.raises(NotLeaderError) as raised:
            cluster.node(URLS[1]).check_writes()
        assert raised.value.leader == URLS[0]

    _run(body, tmp_path)


def test_positions_of_a_diverged_copy_are_not_counted(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        leader = await _three(cluster)
        hub = leader.hub
        assert hub is not None
        uid = leader.live.require(NAME).collection.spec.uid
        wrong_term = FetchRequest("x", None, 0, {NAME: Position(uid, 0, 7)}, wait_ms=0)
        answer = await leader.fetch(wrong_term)
        assert answer.collections[0].install == "diverged from the leader's log"
        assert hub.followers["x"].positions == {}

    _run(body, tmp_path)


def test_a_follower_of_a_dead_leader_finds_the_leader_of_the_latest_term(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        await _three(cluster)
        await cluster.stop(URLS[0])
        await cluster.node(URLS[1]).promote()
        # r2 restarts told to follow the first leader (a deployment's fixed setting): it finds
        # that r1 leads a later term and follows it.
        await cluster.stop(URLS[2])
        await cluster.start(URLS[2], follow=URLS[0])
        for _ in range(400):
            follower = cluster.node(URLS[2]).follower
            if follower is not None and follower.leader == URLS[1]:
                break
            await asyncio.sleep(0.02)
        assert cluster.node(URLS[2]).state.leader == URLS[1]
        # And r1, restarted with the same fixed setting, leads again: it was promoted.
        await cluster.stop(URLS[1])
        await cluster.start(URLS[1], follow=URLS[0])
        assert cluster.node(URLS[1]).role == "leader"

    _run(body, tmp_path)


def test_a_member_told_to_follow_its_own_url_leads(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        first = await cluster.start(URLS[0], follow=URLS[0])
        assert first.role == "leader"
        follower = await cluster.start(URLS[1], follow=URLS[0])
        assert follower.role == "follower"

    _run(body, tmp_path)

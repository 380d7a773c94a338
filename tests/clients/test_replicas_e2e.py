"""The clients against a real replica set: two ``python -m service serve`` processes on free
loopback ports, a leader and a follower (``--replica-set-size 2``; the follower reads locally,
``follower_reads=local``, so only ``X-Min-Seq`` makes it wait for a write). A client pointed at
the follower creates a collection of client vectors (dim 8) and writes it: each write is
refused there (421 not_leader) and sent on to the leader it names; acknowledged by the leader
alone (``acks="leader"``), it is read back at once from the follower, which waits for it because
the client asks for its own writes."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import pytest

import crisscross_client as cc
from tests.e2e.conftest import LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

T = TypeVar("T")
WAIT_S = 15.0
"""The longest wait for the replica set to form or a collection to reach the follower."""
DIM = 8


@dataclass(frozen=True)
class ReplicaSet:
    """A running leader and follower."""

    leader: LiveService
    follower: LiveService


def eventually(probe: Callable[[], T | None], what: str, timeout_s: float = WAIT_S) -> T:
    """``probe()``'s first answer that is not None, asked every 0.1 s for ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {timeout_s} s")


@pytest.fixture(scope="module")
def replica_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaSet]:
    """A leader and its follower, each with its own collections folder, no keys, no bundles;
    stopped (SIGTERM, bounded wait) afterwards."""
    root = tmp_path_factory.mktemp("replicas-e2e")
    variants_root, bundles_root = root / "variants", root / "bundles"
    variants_root.mkdir()
    bundles_root.mkdir()
    common = {"CRISSCROSS_REPLICA_SET_SIZE": "2"}
    leader = start_service(
        variants_root,
        bundles_root,
        root / "leader.log",
        {**common, "CRISSCROSS_COLLECTIONS_DIR": str(root / "leader")},
    )
    follower: LiveService | None = None
    try:
        follower = start_service(
            variants_root,
            bundles_root,
            root / "follower.log",
            {
                **common,
                "CRISSCROSS_COLLECTIONS_DIR": str(root / "follower"),
                "CRISSCROSS_FOLLOW": leader.url,
                "CRISSCROSS_FOLLOWER_READS": "local",
            },
        )
        yield ReplicaSet(leader, follower)
    finally:
        codes = [stop_service(service) for service in (follower, leader) if service is not None]
        logs = [service.log() for service in (follower, leader) if service is not None]
        shutil.rmtree(root, ignore_errors=True)
    assert codes == [0] * len(codes), "\n".join(logs)


def _followed(client: cc.Client, follower_url: str) -> bool | None:
    """True once the leader ``client`` reaches counts the follower among its followers."""
    followers = client.replication_status().followers
    return True if follower_url in [info.url for info in followers] else None


def _known(client: cc.Client, name: str) -> bool | None:
    """True once the server ``client`` reaches holds collection ``name``."""
    try:
        client.get_collection(name)
    except cc.NotFoundError:
        return None
    return True


def _vector(n: int) -> list[float]:
    return [1.0 if i == n % DIM else 0.1 for i in range(DIM)]


def test_writes_through_a_follower_reach_the_leader_and_read_back_there(
    replica_set: ReplicaSet,
) -> None:
    leader_url, follower_url = replica_set.leader.url, replica_set.follower.url
    with (
        cc.Client(leader_url, max_retries=5) as at_leader,
        cc.Client(follower_url, max_retries=5, acks="leader") as client,
    ):
        eventually(lambda: _followed(at_leader, follower_url), "the follower following")
        status = client.replication_status()
        assert (status.role, status.leader) == ("follower", leader_url)

        created = client.create_collection("vectors", dim=DIM, fields={"cat": "string"})
        assert created.dim == DIM
        assert client.last_response is not None
        assert client.last_response.url.startswith(leader_url)  # 421 -> the leader
        eventually(lambda: _known(client, "vectors"), "the collection on the follower")

        items = [{"id": f"i{n}", "vector": _vector(n), "metadata": {"cat": "a"}} for n in range(5)]
        written = client.upsert("vectors", items, batch_size=2)
        assert written.upserted == 5
        assert client.last_response is not None
        assert client.last_response.url.startswith(leader_url)
        assert client.written_seqs == {"vectors": written.seq}

        # Read back from the follower at once: it waits for the write the client names.
        got = client.get_items("vectors", [item["id"] for item in items])
        assert [stored.id for stored in got.items] == [item["id"] for item in items]
        assert got.seq >= written.seq
        assert client.last_response is not None
        assert client.last_response.url.startswith(follower_url)
        sent = client.last_response.response
        assert sent is not None
        assert sent.request.headers["x-min-seq"] == f"vectors={written.seq}"

        patched = client.patch_item("vectors", "i1", {"cat": "b"})
        assert client.count_items("vectors", {"field": "cat", "eq": "b"}) == 1
        deleted = client.delete_items("vectors", filter={"field": "cat", "eq": "a"})
        assert deleted.deleted == 4
        assert deleted.seq > patched.seq > written.seq
        assert client.count_items("vectors") == 1
        found = client.search("vectors", vector=_vector(1), k=3)
        assert [hit.id for hit in found.results] == ["i1"]
        assert [item.id for item in client.iter_items("vectors")] == ["i1"]

        # The leader lists both replicas; the follower took no write itself.
        info = at_leader.get_collection("vectors")
        assert info.seq == deleted.seq
        assert {replica.url for replica in info.replicas} == {leader_url, follower_url}
        # A raw request is not sent on: the follower's refusal names the leader.
        with cc.Client(follower_url, max_retries=0) as direct:
            with pytest.raises(cc.NotLeaderError) as refused:
                direct.request("POST", "/v1/collections/vectors/items/delete", json={"ids": []})
            assert refused.value.leader == leader_url


def test_the_async_client_reads_its_writes_from_the_follower(replica_set: ReplicaSet) -> None:
    follower_url = replica_set.follower.url

    async def scenario() -> tuple[list[str], int]:
        async with cc.AsyncClient(follower_url, max_retries=5) as client:
            await client.create_collection("async-vectors", dim=DIM)
            deadline = time.monotonic() + WAIT_S
            while True:  # bounded: until the follower holds the collection
                try:
                    await client.get_collection("async-vectors")
                    break
                except cc.NotFoundError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.1)
            items = [{"id": f"a{n}", "vector": _vector(n)} for n in range(3)]
            written = await client.upsert("async-vectors", items, acks="leader")
            got = await client.get_items("async-vectors", ["a0", "a1", "a2"])
            return [stored.id for stored in got.items], got.seq - written.seq

    ids, ahead = asyncio.run(scenario())
    assert ids == ["a0", "a1", "a2"]
    assert ahead >= 0

"""The contract holds in a replicated layout: the schemathesis CLI with every check finds
nothing against a leader and against its follower, both serving the scenes bundle and a live
collections folder of their own (the follower refuses writes with the documented 421, reads
wait for what they need, the replication routes answer as documented)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.contract.test_schemathesis_live import run_schemathesis
from tests.e2e.conftest import LiveService, build_scenes_roots, start_service, stop_service

pytestmark = [pytest.mark.e2e]

REPLICATED_PATHS = (
    "/v1/collections",
    "/v1/collections/{name}",
    "/v1/collections/{name}/items",
    "/v1/collections/{name}/items/delete",
    "/v1/collections/{name}/items/get",
    "/v1/collections/{name}/items/{id}",
    "/v1/search",
    "/v1/replication",
    "/v1/replication/position",
    "/v1/replication/fetch",
    "/v1/replication/vote",
    "/v1/replication/follow",
    "/v1/replication/promote",
    "/v1/replication/collections/{name}/base",
)


@pytest.fixture(scope="module")
def replicated(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LiveService, LiveService]]:
    """A leader and its follower (replica set of 2), each with its own collections folder."""
    root = tmp_path_factory.mktemp("replicas")
    variants_root, bundles_root = build_scenes_roots(root)
    base = {"CRISSCROSS_REPLICA_SET_SIZE": "2", "CRISSCROSS_ACK_TIMEOUT_S": "2"}
    leader = start_service(
        variants_root,
        bundles_root,
        root / "leader.log",
        {**base, "CRISSCROSS_COLLECTIONS_DIR": str(root / "leader")},
    )
    follower = start_service(
        variants_root,
        bundles_root,
        root / "follower.log",
        {
            **base,
            "CRISSCROSS_COLLECTIONS_DIR": str(root / "follower"),
            "CRISSCROSS_FOLLOW": leader.url,
        },
    )
    try:
        assert httpx.get(f"{follower.url}/v1/replication").json()["role"] == "follower"
        yield leader, follower
    finally:
        assert stop_service(follower) == 0, follower.log()
        assert stop_service(leader) == 0, leader.log()


def test_schemathesis_finds_nothing_against_a_follower(
    replicated: tuple[LiveService, LiveService],
) -> None:
    follower = replicated[1]
    result = run_schemathesis(follower, None)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "status=421" in follower.log(), "no write reached the follower"


def test_schemathesis_finds_nothing_against_a_leader_of_two(
    replicated: tuple[LiveService, LiveService],
) -> None:
    leader = replicated[0]
    # The routes a replica set changes (the others are the single server's, run in
    # test_schemathesis_live.py): the writes that wait for acknowledgements, the reads that
    # wait for a sequence number, and the replication routes.
    result = run_schemathesis(leader, None, *REPLICATED_PATHS)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]

"""Helpers of the tests of the replicated layouts (``deploy/compose/compose.replicas.yaml``,
``deploy/kubernetes/overlays/replicas``) and of the replication panels and alerts: start a real
replica set (a leader and its followers, each a ``python -m service serve`` process with its own
collections folder) and give it one write of each kind the metrics count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from unittest import mock

import httpx

from tests.deploy.monitoring import wait_for
from tests.e2e import conftest as e2e_conftest
from tests.e2e.conftest import LiveService, free_port, start_service, stop_service

ADMIN_KEY = "deploy-replicas-admin-key-0123456789"
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
COLLECTION = "replicated"
HTTP_TIMEOUT_S = 10.0
SET_TIMEOUT_S = 30.0


def replication(service: LiveService) -> dict[str, object]:
    """``GET /v1/replication`` of ``service``."""
    answer = httpx.get(f"{service.url}/v1/replication", headers=ADMIN, timeout=HTTP_TIMEOUT_S)
    assert answer.status_code == 200, answer.text
    document: dict[str, object] = answer.json()
    return document


def start_replica_set(
    variants_root: Path,
    bundles_root: Path,
    root: Path,
    members: int,
    environments: Sequence[Mapping[str, str]] | None = None,
) -> list[LiveService]:
    """A leader and ``members - 1`` followers of it, each with its own collections folder under
    ``root``, a replica set of ``members`` (or the settings of ``environments``, one per member,
    leader first), all with the admin key :data:`ADMIN_KEY`; returned once every follower
    follows. A follower's ``CRISSCROSS_FOLLOW`` is the leader's real URL; the leader has none,
    unless its environment names one: then, as on a StatefulSet's pod 0, it is started with
    ``CRISSCROSS_FOLLOW`` and ``CRISSCROSS_ADVERTISE_URL`` both its own real URL."""
    if environments is None:
        environments = [{"CRISSCROSS_REPLICA_SET_SIZE": str(members)} for _ in range(members)]
    assert len(environments) == members
    services: list[LiveService] = []
    try:
        for index, environment in enumerate(environments):
            env = {
                "CRISSCROSS_ADMIN_KEYS": ADMIN_KEY,
                **environment,
                "CRISSCROSS_COLLECTIONS_DIR": str(root / f"member-{index}" / "collections"),
            }
            log_path = root / f"member-{index}.log"
            if index > 0:
                env["CRISSCROSS_FOLLOW"] = services[0].url
            elif "CRISSCROSS_FOLLOW" in env:
                services.append(start_following_itself(variants_root, bundles_root, log_path, env))
                continue
            services.append(start_service(variants_root, bundles_root, log_path, env))

        def all_follow() -> bool | None:
            followers = replication(services[0])["followers"]
            assert isinstance(followers, list)
            return len(followers) == members - 1 or None

        wait_for(all_follow, f"{members - 1} followers to follow the leader", SET_TIMEOUT_S)
    except BaseException:
        stop_replica_set(services)
        raise
    return services


def start_following_itself(
    variants_root: Path, bundles_root: Path, log_path: Path, environment: Mapping[str, str]
) -> LiveService:
    """:func:`start_service` with ``environment`` whose ``CRISSCROSS_FOLLOW`` and
    ``CRISSCROSS_ADVERTISE_URL`` are both the URL the process serves at. That URL must be known
    before the process starts, so its port is chosen here and handed to ``start_service`` in
    place of the one its ``free_port`` would pick."""
    port = free_port()
    own_url = f"http://127.0.0.1:{port}"
    env = {**environment, "CRISSCROSS_FOLLOW": own_url, "CRISSCROSS_ADVERTISE_URL": own_url}
    with mock.patch.object(e2e_conftest, "free_port", return_value=port):
        service = start_service(variants_root, bundles_root, log_path, env)
    assert service.url == own_url
    return service


def stop_replica_set(services: Sequence[LiveService]) -> None:
    """Stop every member (followers first); fails unless each exits 0."""
    codes = [(service, stop_service(service)) for service in reversed(services)]
    for service, code in codes:
        assert code == 0, service.log()


def drive_replication(leader: LiveService, followers: Sequence[LiveService]) -> int:
    """A live collection created on the leader and written with acks=majority (an acknowledged
    wait), applied by every follower (a new collection installed, log records copied), then a
    write sent to a follower (421 not_leader naming the leader). Returns the write's seq."""
    with httpx.Client(headers=ADMIN, timeout=HTTP_TIMEOUT_S) as client:
        created = client.post(f"{leader.url}/v1/collections", json={"name": COLLECTION, "dim": 4})
        assert created.status_code == 201, created.text
        items = [{"id": f"i{n}", "vector": [1.0, float(n), 0.5, -1.0]} for n in range(3)]
        written = client.post(
            f"{leader.url}/v1/collections/{COLLECTION}/items",
            params={"acks": "majority"},
            json={"items": items},
        )
        assert written.status_code == 200, written.text
        seq = int(written.json()["seq"])
        for follower in followers:

            def applied(follower: LiveService = follower) -> bool | None:
                collections = replication(follower)["collections"]
                assert isinstance(collections, dict)
                return int(collections.get(COLLECTION, 0)) >= seq or None

            wait_for(applied, f"{follower.url} to apply seq {seq}", SET_TIMEOUT_S)
            refused = client.post(
                f"{follower.url}/v1/collections/{COLLECTION}/items",
                json={"items": items[:1]},
            )
            assert refused.status_code == 421, refused.text
            assert refused.headers["x-leader"] == leader.url
    return seq

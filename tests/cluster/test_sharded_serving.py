"""Sharded serving on a local Ray cluster through the one front door: a bundle split into 3
shards, 2 Serve replicas each, behind two replicas' worth of the service's own app (policy
``partial`` with the variant's real ONNX text tower at ``/``; ``fail`` without encoders at
``/fail``), reached over real HTTP through Serve's proxy. Answers equal the unsplit bundle's
top-k; killing one shard's replicas mid-traffic gives answers listing it in ``missing_shards``
and 503 ``shards_unavailable`` naming it, never a 500."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
import pytest

from cluster.shard_settings import ShardSettings
from cluster.shard_split import ShardMap, split_bundle
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import nearest
from service.settings import Settings
from storage.reader import load_bundle
from tests.fakes.tiny_variant import make_tiny_variant
from tests.unit.cluster.sharded_data import hard_queries, item_id, write_hard_bundle

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

from cluster.shard_deployment import build_front_app, build_sharded_app  # noqa: E402

ROWS = 3000
SHARDS_APP = "sharded"


@dataclass(frozen=True)
class Served:
    base: str
    single: ServedCollection
    encoder: OnnxTextEncoder
    shard_map: ShardMap


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def settings(policy: str) -> ShardSettings:
    return ShardSettings(
        missing_shards=policy,  # type: ignore[arg-type]
        replicas_per_shard=2,
        shard_replica_cpus=0.25,
        front_cpus=0.25,
        shard_deadline_ms=3000,
        health_timeout_ms=3000,
    )


@pytest.fixture(scope="module")
def served(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    del ray_session
    root = tmp_path_factory.mktemp("sharded")
    variant_dir = root / "tiny"
    make_tiny_variant(variant_dir)
    manifest = load_variant_manifest(variant_dir)
    source = write_hard_bundle(
        root / "bundles",
        ROWS,
        variant_name=manifest.name,
        variant_fingerprint=manifest.fingerprint,
    )
    map_path = root / "shards.json"
    shard_map = split_bundle(source, "captions", 3, root / "shards", map_path)
    bundle = load_bundle(source)
    single = ServedCollection(
        manifest.name, bundle.name, bundle.version, bundle.collections["captions"]
    )
    port = free_port()
    service = Settings(bundles_root=root / "no-bundles", variants_root=variant_dir.parent)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(
            build_sharded_app(
                service, settings("partial"), map_path, shard_map, embeds_queries=True
            ),
            name=SHARDS_APP,
            route_prefix="/",
        )
        serve.run(
            build_front_app(service, settings("fail"), shard_map, SHARDS_APP, embeds_queries=False),
            name="front-fail",
            route_prefix="/fail",
        )
        yield Served(f"http://127.0.0.1:{port}", single, OnnxTextEncoder(variant_dir), shard_map)
    finally:
        serve.shutdown()


def search(client: httpx.Client, url: str, vector: np.ndarray, k: int, offset: int = 0) -> Any:
    body = {
        "collection": "captions",
        "query": {"vector": vector.tolist()},
        "k": k,
        "offset": offset,
    }
    return client.post(url, json=body, timeout=30.0)


def test_routed_answers_equal_the_unsplit_bundle(served: Served) -> None:
    queries = hard_queries(served.single.collection.vectors, 30)
    with httpx.Client(base_url=served.base) as client:
        for prefix in ("", "/fail"):
            assert wait_for(lambda p=prefix: ready(client, p), 60), f"{prefix}/readyz"
        (sharded,) = client.get("/v1/collections", timeout=30.0).json()["sharded"]
        assert [shard["status"] for shard in sharded["shards"]] == ["ok", "ok", "ok"]
        for number, query in enumerate(queries):
            k, offset = (10, 0) if number % 3 else (25, number)
            for prefix in ("", "/fail"):
                response = search(client, f"{prefix}/v1/search", query, k, offset)
                assert response.status_code == 200, response.text
                data = response.json()
                assert data["missing_shards"] == []
                expected = nearest(served.single, query, k, offset=offset)
                assert [hit["id"] for hit in data["results"]] == [h.item_id for h in expected]
                assert np.allclose(
                    [hit["score"] for hit in data["results"]],
                    [h.score for h in expected],
                    rtol=0,
                    atol=1e-6,
                )
        text = {"collection": "captions", "query": {"text": "a dog sits on the red couch"}}
        by_text = client.post("/v1/search", json=text | {"k": 10}, timeout=30.0)
        assert by_text.status_code == 200, by_text.text
        vector = served.encoder.encode_texts([text["query"]["text"]])[0]
        expected = nearest(served.single, vector, 10)
        assert [hit["id"] for hit in by_text.json()["results"]] == [h.item_id for h in expected]
        refused = client.post("/fail/v1/search", json=text, timeout=30.0)
        assert refused.status_code == 409  # the fail front door loads no encoder
        assert refused.json()["error"]["code"] == "tower_missing"
        filtered = client.post(
            "/v1/search",
            json=text | {"k": 5, "filter": {"field": "group", "eq": 3}},
            timeout=30.0,
        )
        assert filtered.status_code == 200, filtered.text
        rows = [served.single.collection.row_of[hit["id"]] for hit in filtered.json()["results"]]
        assert rows
        assert all(row % 5 == 3 for row in rows)
        assert "crisscross_requests_total" in client.get("/metrics", timeout=30.0).text


def ready(client: httpx.Client, prefix: str) -> bool:
    return client.get(f"{prefix}/readyz", timeout=30.0).status_code == 200


class Traffic(threading.Thread):
    """Sends the same query to both routers, alternately, until stopped; keeps every answer."""

    def __init__(self, base: str, vector: np.ndarray) -> None:
        super().__init__(daemon=True)
        self.base, self.vector = base, vector
        self.answers: list[tuple[str, int, Any]] = []
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.base) as client:
                while not self.stopping.is_set():
                    for prefix in ("", "/fail"):
                        response = search(client, f"{prefix}/v1/search", self.vector, 10)
                        self.answers.append((prefix, response.status_code, response.json()))
        except BaseException as exc:  # reported by the test
            self.failure = exc

    def count(self, test: Any) -> int:
        return sum(1 for answer in list(self.answers) if test(*answer))


def wait_for(condition: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def shard_replicas(shard: str) -> list[dict[str, str]]:
    """The named Serve replica actors of ``shard`` (alive or restarting)."""
    return [
        actor
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if f"{SHARDS_APP}#{shard}#" in actor["name"]
    ]


def full(_prefix: str, status: int, body: Any) -> bool:
    return status == 200 and not body["missing_shards"]


def test_a_killed_shard_mid_traffic(served: Served) -> None:
    query = hard_queries(served.single.collection.vectors, 1)[0]
    traffic = Traffic(served.base, query)
    traffic.start()
    try:
        assert wait_for(lambda: traffic.count(full) >= 6, 30), traffic.answers[-3:]
        assert len(shard_replicas("shard-1")) == 2
        seen = len(traffic.answers)

        def flagged(prefix: str, status: int, body: Any) -> bool:
            return prefix == "" and status == 200 and body["missing_shards"] == ["shard-1"]

        def refused(prefix: str, status: int, _body: Any) -> bool:
            return prefix == "/fail" and status == 503

        def shard_1_down() -> bool:
            # Serve replaces a killed replica, on a quiet machine within the shard deadline, so
            # the shard is kept down by killing whatever replicas it has until both policies
            # have answered without it.
            for actor in shard_replicas("shard-1"):
                with contextlib.suppress(ValueError):  # already gone
                    ray.kill(ray.get_actor(actor["name"], namespace=actor["namespace"]))
            return traffic.count(flagged) >= 1 and traffic.count(refused) >= 1

        assert wait_for(shard_1_down, 60), traffic.answers[seen:][-4:]
        # Serve replaces the killed replicas: both front doors answer whole again.
        recovered = len(traffic.answers)
        assert wait_for(lambda: sum(full(*a) for a in traffic.answers[recovered:]) >= 4, 60), (
            traffic.answers[-4:]
        )
    finally:
        traffic.stopping.set()
        traffic.join(timeout=30)
    assert traffic.failure is None, traffic.failure
    statuses = {(prefix, status) for prefix, status, _ in traffic.answers}
    assert statuses <= {("", 200), ("/fail", 200), ("/fail", 503)}, statuses
    expected = [h.item_id for h in nearest(served.single, query, 10)]
    entry = served.shard_map.shards[1]
    shard_1 = {item_id(row) for row in range(entry.row_offset, entry.row_offset + entry.count)}
    ranked = [h.item_id for h in nearest(served.single, query, ROWS)]
    without_shard_1 = [i for i in ranked if i not in shard_1][:10]
    for prefix, status, body in traffic.answers:
        if status == 503:
            assert body["error"]["code"] == "shards_unavailable"
            assert "shard-1" in body["error"]["message"]
        elif body["missing_shards"]:
            assert prefix == ""
            assert body["missing_shards"] == ["shard-1"]
            # Left out at its candidates: the best 10 of the other shards; left out between its
            # candidates and its hits: the whole collection's 10 less shard-1's rows.
            ids = [hit["id"] for hit in body["results"]]
            assert ids in (without_shard_1, [i for i in expected if i not in shard_1]), ids
        else:
            assert [hit["id"] for hit in body["results"]] == expected

"""Sharded serving on a local Ray cluster: a bundle split into 3 shards, 2 Serve replicas each,
behind two routers (policy ``partial`` at ``/``, ``fail`` at ``/fail``) reached over real HTTP
through Serve's proxy. Answers equal the unsplit bundle's top-k; killing one shard's replicas
mid-traffic gives flagged partial answers and 503s naming the shard, never a 500."""

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

from cluster.router_settings import RouterSettings
from cluster.shard_split import ShardMap, split_bundle
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import nearest
from storage.reader import load_bundle
from tests.fakes.tiny_variant import make_tiny_variant
from tests.unit.cluster.sharded_data import hard_queries, write_hard_bundle

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

from cluster.shard_deployment import build_router_app, build_sharded_app  # noqa: E402

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


def settings(policy: str) -> RouterSettings:
    return RouterSettings(
        missing_shards=policy,  # type: ignore[arg-type]
        replicas_per_shard=2,
        shard_replica_cpus=0.25,
        router_cpus=0.25,
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
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(
            build_sharded_app(settings("partial"), map_path, shard_map, variant_dir),
            name=SHARDS_APP,
            route_prefix="/",
        )
        serve.run(
            build_router_app(settings("fail"), shard_map, SHARDS_APP),
            name="router-fail",
            route_prefix="/fail",
        )
        yield Served(f"http://127.0.0.1:{port}", single, OnnxTextEncoder(variant_dir), shard_map)
    finally:
        serve.shutdown()


def search(client: httpx.Client, url: str, vector: np.ndarray, k: int, offset: int = 0) -> Any:
    body = {"query": {"vector": vector.tolist()}, "k": k, "offset": offset}
    return client.post(url, json=body, timeout=30.0)


def test_routed_answers_equal_the_unsplit_bundle(served: Served) -> None:
    queries = hard_queries(served.single.collection.vectors, 30)
    with httpx.Client(base_url=served.base) as client:
        assert client.get("/readyz", timeout=30.0).json() == {"status": "ready"}
        shards = client.get("/v1/shards", timeout=30.0).json()["shards"]
        assert [shard["status"] for shard in shards] == ["ok", "ok", "ok"]
        for number, query in enumerate(queries):
            k, offset = (10, 0) if number % 3 else (25, number)
            for prefix in ("", "/fail"):
                response = search(client, f"{prefix}/v1/search", query, k, offset)
                assert response.status_code == 200, response.text
                data = response.json()
                assert (data["partial"], data["missing_shards"]) == (False, [])
                expected = nearest(served.single, query, k, offset=offset)
                assert [hit["id"] for hit in data["results"]] == [h.item_id for h in expected]
                assert np.allclose(
                    [hit["score"] for hit in data["results"]],
                    [h.score for h in expected],
                    rtol=0,
                    atol=1e-6,
                )
        text = "a dog sits on the red couch"
        by_text = client.post("/v1/search", json={"query": {"text": text}, "k": 10}, timeout=30.0)
        assert by_text.status_code == 200, by_text.text
        expected = nearest(served.single, served.encoder.encode_texts([text])[0], 10)
        assert [hit["id"] for hit in by_text.json()["results"]] == [h.item_id for h in expected]
        refused = client.post("/fail/v1/search", json={"query": {"text": text}}, timeout=30.0)
        assert refused.status_code == 422  # the fail router holds no encoder


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
    return status == 200 and not body["partial"]


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
        # Serve replaces the killed replicas: both routers answer whole again.
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
    for prefix, status, body in traffic.answers:
        if status == 503:
            assert body["error"]["code"] == "shards_unavailable"
            assert "shard-1" in body["error"]["message"]
        elif body["partial"]:
            assert prefix == ""
            assert body["missing_shards"] == ["shard-1"]
            assert len(body["results"]) == 10
        else:
            assert [hit["id"] for hit in body["results"]] == expected

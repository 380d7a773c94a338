"""The router's HTTP API over in-process shards: answers, error shapes, the policy's statuses,
health routes, and the settings' refusals."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from cluster.router_app import create_router_app
from cluster.router_settings import RouterSettings
from cluster.shard_router import ShardRouter, ShardSpec
from cluster.shard_split import ShardMap, split_bundle
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import nearest
from storage.reader import load_bundle
from tests.unit.cluster.sharded_data import (
    DIM,
    LocalShardClient,
    hard_queries,
    local_client,
    write_hard_bundle,
)

ROWS = 600


class FakeTextEncoder:
    """Every text → the first basis vector."""

    name = "hard-variant"
    dim = DIM
    max_tokens = 16
    precision = "fp32"
    fingerprint = "f" * 64
    providers = ["CPUExecutionProvider"]  # noqa: RUF012 - a protocol attribute

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.eye(1, DIM, dtype=np.float32), (len(texts), 1))


class Down:
    """A shard client whose ``down`` shards raise."""

    def __init__(self, inner: LocalShardClient, down: set[str]) -> None:
        self.inner, self.down = inner, down

    async def search(self, shard: str, queries: np.ndarray, depth: int, meta: bool) -> object:
        if shard in self.down:
            raise RuntimeError("replica died")
        return await self.inner.search(shard, queries, depth, meta)

    async def health(self, shard: str) -> object:
        if shard in self.down:
            await asyncio.sleep(5)
        return await self.inner.health(shard)


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ShardMap]:
    root = tmp_path_factory.mktemp("app")
    source = write_hard_bundle(root / "bundles", ROWS)
    map_path = root / "shards.json"
    return source, map_path, split_bundle(source, "captions", 3, root / "shards", map_path)


@pytest.fixture(scope="module")
def single(split: tuple[Path, Path, ShardMap]) -> ServedCollection:
    bundle = load_bundle(split[0])
    return ServedCollection("v", bundle.name, bundle.version, bundle.collections["captions"])


def make_client(
    split: tuple[Path, Path, ShardMap], down: set[str] | None = None, **settings: Any
) -> TestClient:
    shard_map = split[2]
    options = RouterSettings(**settings)
    router = ShardRouter(
        [ShardSpec(e.name, e.row_offset, e.count) for e in shard_map.shards],
        Down(local_client(split[1], shard_map), down or set()),
        deadline_s=options.shard_deadline_s,
        policy=options.missing_shards,
        min_shards_answered=options.min_shards_answered,
    )
    return TestClient(create_router_app(options, shard_map, router, FakeTextEncoder()))


def test_vector_search_equals_the_unsplit_index(
    split: tuple[Path, Path, ShardMap], single: ServedCollection
) -> None:
    client = make_client(split)
    for query in hard_queries(single.collection.vectors, 6):
        body = {"query": {"vector": query.tolist()}, "k": 15, "offset": 5, "collection": "captions"}
        response = client.post("/v1/search", json=body)
        assert response.status_code == 200, response.text
        data = response.json()
        expected = nearest(single, query, 15, offset=5)
        assert [(r["id"], r["rank"]) for r in data["results"]] == [
            (h.item_id, h.rank) for h in expected
        ]
        assert [r["score"] for r in data["results"]] == [h.score for h in expected]
        assert data["results"][0]["metadata"] == dict(expected[0].metadata)
        assert (data["partial"], data["missing_shards"], data["next_offset"]) == (False, [], 20)
        assert (data["bundle"], data["bundle_version"]) == ("hard", "v1")


def test_text_queries_use_the_encoder(split: tuple[Path, Path, ShardMap]) -> None:
    client = make_client(split)
    by_text = client.post("/v1/search", json={"query": {"text": "a dog"}, "k": 3})
    by_vector = client.post("/v1/search", json={"query": {"vector": [1.0] + [0.0] * 7}, "k": 3})
    assert by_text.status_code == 200
    assert by_text.json()["results"] == by_vector.json()["results"]


def error_of(response: Any, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    error: dict[str, str] = response.json()["error"]
    assert set(error) == {"code", "message", "request_id", "type", "param"}
    assert response.headers["x-request-id"] == error["request_id"]
    return error


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"query": {"vector": [1.0] * 8}, "k": 1001}, 422, "max_k=1000"),
        ({"query": {"vector": [1.0] * 8}, "offset": 10_001}, 422, "max_offset"),
        ({"query": {"vector": [1.0] * 8}, "k": 0}, 422, "k"),
        ({"query": {"vector": [1.0] * 7}}, 422, "dimension 8"),
        ({"query": {"vector": [0.0] * 8}}, 422, "zero norm"),
        ({"query": {"text": "a", "vector": [1.0] * 8}}, 422, "exactly one"),
        ({"query": {"item": {"collection": "captions", "id": "x"}}}, 422, "exactly one"),
        ({"query": {"text": "   "}}, 422, "non-whitespace"),
        ({"query": {"text": "x" * 2001}}, 422, "max_text_chars"),
        ({"query": {"vector": [1.0] * 8}, "k": "5"}, 422, "k"),
        ({"query": {"vector": [1.0] * 8}, "extra": 1}, 422, "extra"),
        ({"query": {"vector": [1.0] * 8}, "collection": "images"}, 404, "unknown collection"),
    ],
)
def test_bad_requests_have_the_one_error_shape(
    split: tuple[Path, Path, ShardMap], body: dict[str, Any], status: int, fragment: str
) -> None:
    error = error_of(make_client(split).post("/v1/search", json=body), status)
    assert fragment in error["message"]


def test_other_http_errors(split: tuple[Path, Path, ShardMap]) -> None:
    client = make_client(split, max_body_bytes=1024)
    big = {"query": {"vector": [0.5] * 8}, "pad": "x" * 2000}
    assert error_of(client.post("/v1/search", json=big), 413)["code"] == "payload_too_large"
    assert error_of(client.post("/v1/search", content=b"{"), 422)["code"] == "invalid_input"
    assert error_of(client.get("/v1/nowhere"), 404)["code"] == "not_found"
    assert error_of(client.get("/v1/search"), 405)["code"] == "method_not_allowed"
    echoed = client.get("/healthz", headers={"x-request-id": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"


def test_without_an_encoder_text_is_refused(split: tuple[Path, Path, ShardMap]) -> None:
    shard_map = split[2]
    router = ShardRouter(
        [ShardSpec(e.name, e.row_offset, e.count) for e in shard_map.shards],
        local_client(split[1], shard_map),
        deadline_s=1.0,
        policy="fail",
    )
    client = TestClient(create_router_app(RouterSettings(), shard_map, router))
    error = error_of(client.post("/v1/search", json={"query": {"text": "a dog"}}), 422)
    assert "no text encoder" in error["message"]


def test_fail_policy_is_503_naming_the_shard(split: tuple[Path, Path, ShardMap]) -> None:
    client = make_client(split, down={"shard-1"}, missing_shards="fail", retry_after_s=3)
    response = client.post("/v1/search", json={"query": {"vector": [1.0] * 8}})
    error = error_of(response, 503)
    assert error["code"] == "shards_unavailable"
    assert "shard-1" in error["message"]
    assert response.headers["retry-after"] == "3"
    assert response.headers["x-missing-shards"] == "shard-1"


def test_partial_policy_flags_the_answer(
    split: tuple[Path, Path, ShardMap], single: ServedCollection
) -> None:
    client = make_client(split, down={"shard-0"}, missing_shards="partial")
    query = np.ones(8, dtype=np.float32) / np.sqrt(8)
    response = client.post("/v1/search", json={"query": {"vector": query.tolist()}, "k": 5})
    assert response.status_code == 200
    data = response.json()
    assert (data["partial"], data["missing_shards"]) == (True, ["shard-0"])
    start = split[2].shards[1].row_offset
    kept = [h for h in nearest(single, query, ROWS) if h.row >= start][:5]
    assert [r["id"] for r in data["results"]] == [h.item_id for h in kept]
    everyone = make_client(split, down={"shard-0", "shard-1", "shard-2"}, missing_shards="partial")
    none_left = everyone.post("/v1/search", json={"query": {"vector": query.tolist()}})
    assert error_of(none_left, 503)["code"] == "shards_unavailable"


def test_health_routes(split: tuple[Path, Path, ShardMap]) -> None:
    healthy = make_client(split)
    assert healthy.get("/healthz").json() == {"status": "ok"}
    assert healthy.get("/readyz").json() == {"status": "ready"}
    shards = healthy.get("/v1/shards").json()
    assert [s["status"] for s in shards["shards"]] == ["ok", "ok", "ok"]
    assert shards["total_count"] == ROWS
    sick = make_client(split, down={"shard-2"}, health_timeout_ms=100)
    assert sick.get("/healthz").status_code == 200
    error = error_of(sick.get("/readyz"), 503)
    assert error["code"] == "not_ready"
    assert "shard-2" in error["message"]
    report = sick.get("/v1/shards").json()
    assert [s["status"] for s in report["shards"]] == ["ok", "ok", "down"]


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"missing_shards": "fail", "min_shards_answered": 2}, "applies to missing_shards"),
        ({"max_k": 1000, "max_offset": 999_001}, r"max_k \+ max_offset"),
        ({"shard_deadline_ms": 10, "health_timeout_ms": 101}, "ten times"),
        ({"missing_shards": "maybe"}, "missing_shards"),
        ({"shard_deadline_ms": 0}, "shard_deadline_ms"),
        ({"replicas_per_shard": 0}, "replicas_per_shard"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_settings_refuse_bad_values(settings: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        RouterSettings(**settings)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_SHARDS_MISSING_SHARDS", "partial")
    monkeypatch.setenv("CRISSCROSS_SHARDS_SHARD_DEADLINE_MS", "250")
    settings = RouterSettings()
    assert (settings.missing_shards, settings.shard_deadline_s) == ("partial", 0.25)


def test_the_map_must_fit_the_settings(split: tuple[Path, Path, ShardMap]) -> None:
    settings = RouterSettings(missing_shards="partial", min_shards_answered=4)
    with pytest.raises(ValueError, match="more than the 3 shards"):
        settings.check_shard_count(len(split[2].shards))


def test_writes_are_refused_naming_the_mode(split: tuple[Path, Path, ShardMap]) -> None:
    client = make_client(split)
    for method, path in [
        ("POST", "/v1/collections"),
        ("POST", "/v1/collections/c/items"),
        ("POST", "/v1/collections/c/items/delete"),
        ("PATCH", "/v1/collections/c/items/x"),
        ("DELETE", "/v1/collections/c"),
    ]:
        error = error_of(client.request(method, path, json={"items": []}), 409)
        assert error["code"] == "writes_unavailable"
        assert "Ray" in error["message"]

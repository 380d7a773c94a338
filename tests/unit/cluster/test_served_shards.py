"""The one front door over shards: the service's own app with a sharded collection (shards in this
process, every call pickled as across processes) answers every lever case as the same app over
the unsplit bundle does; shards that fail follow the policy (503 ``shards_unavailable`` naming
them, or a flagged partial answer); readiness, the collection listing, the OpenAPI document and
the refusals are the service's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cluster.served_shards import ServedShards
from cluster.shard_settings import ShardSettings
from cluster.shard_split import ShardMap, split_bundle
from service.engine.collection.sharded_collections import ShardedCollections
from service.http.app import create_app
from service.settings import Settings
from tests.api.test_view_parity_api import CASES
from tests.fakes.fake_bundles import CAPTIONS, caption_id, write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import clear_service_env, wait_ready
from tests.unit.cluster.sharded_data import LocalShardCalls, local_calls

QUERY = "a man riding a wave on a surfboard"


@dataclass(frozen=True)
class Layout:
    bundles_root: Path
    variants_root: Path
    map_path: Path
    shard_map: ShardMap


@pytest.fixture(autouse=True)
def _no_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_service_env(monkeypatch)


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("front")
    source = write_fake_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    map_path = root / "shards.json"
    shard_map = split_bundle(source, "captions", 3, root / "shards", map_path)
    return Layout(root / "bundles", root / "variants", map_path, shard_map)


@pytest.fixture(scope="module")
def single(layout: Layout) -> Iterator[TestClient]:
    """The service over the unsplit bundle."""
    settings = Settings(bundles_root=layout.bundles_root, variants_root=layout.variants_root)
    with TestClient(create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))) as c:
        wait_ready(c)
        yield c


@dataclass
class Front:
    client: TestClient
    calls: LocalShardCalls


@contextmanager
def open_front(layout: Layout, embeds_queries: bool = True, **options: Any) -> Iterator[Front]:
    """The service over the shards of ``layout``, with shard settings ``options``."""
    calls = local_calls(layout.map_path, layout.shard_map)
    shards = ServedShards(
        layout.shard_map, calls, ShardSettings(**options), embeds_queries=embeds_queries
    )
    settings = Settings(bundles_root=layout.bundles_root, variants_root=layout.variants_root)
    app = create_app(
        settings,
        encoder_factory=fake_factory(FakeTextEncoder()),
        sharded=ShardedCollections([shards]),
    )
    try:
        with TestClient(app) as client:
            wait_ready(client)
            yield Front(client, calls)
    finally:
        shards.close()


@pytest.fixture(scope="module")
def front(layout: Layout) -> Iterator[Front]:
    """The service over the shards, every shard answering."""
    with open_front(layout, missing_shards="partial") as opened:
        yield opened


def _body(collection: str, case: str) -> dict[str, Any]:
    body: dict[str, Any] = {"collection": collection, "query": {"text": QUERY}}
    body.update(CASES[case])
    if "item" in body["query"]:
        body["query"] = {"item": {"collection": collection, "id": body["query"]["item"]["id"]}}
    return body


def _comparable(response: Any) -> Any:
    payload = response.json()
    if response.status_code != 200:
        return response.status_code, payload["error"]["code"]
    payload.pop("timings_ms")
    return response.status_code, payload


@pytest.mark.parametrize("case", list(CASES))
def test_every_lever_answers_as_the_unsplit_bundle(
    single: TestClient, front: Front, case: str
) -> None:
    for name in ("captions", "coco-captions:captions"):
        expected = _comparable(single.post("/v1/search", json=_body(name, case)))
        got = _comparable(front.client.post("/v1/search", json=_body(name, case)))
        assert got == expected
        if expected[0] == 200:
            assert expected[1]["missing_shards"] == []
            if not case.endswith("window under the page"):
                assert expected[1]["results"], "a case that finds nothing proves little"


def test_a_vector_and_a_bulk_answer_as_the_unsplit_bundle(single: TestClient, front: Front) -> None:
    vector = [0.0] * 63 + [1.0]
    body = {"collection": "captions", "query": {"vector": vector}, "k": 7, "offset": 1}
    expected = _comparable(single.post("/v1/search", json=body))
    assert expected[0] == 200
    assert _comparable(front.client.post("/v1/search", json=body)) == expected
    searches = [_body("captions", case) for case in CASES]
    bulk = {"searches": searches}
    answers = single.post("/v1/search/bulk", json=bulk).json()["responses"]
    assert sum(answer["status"] == 200 for answer in answers) > len(CASES) // 2
    assert front.client.post("/v1/search/bulk", json=bulk).json()["responses"] == answers


def test_the_listing_shows_the_shards(front: Front) -> None:
    listing = front.client.get("/v1/collections").json()
    assert listing["collections"] == []
    (sharded,) = listing["sharded"]
    assert (sharded["name"], sharded["qualified_name"]) == ("captions", "coco-captions:captions")
    assert sharded["count"] == len(CAPTIONS)
    assert sharded["missing_shards_policy"] == "partial"
    assert [shard["status"] for shard in sharded["shards"]] == ["ok", "ok", "ok"]
    assert sum(shard["count"] for shard in sharded["shards"]) == len(CAPTIONS)


def test_the_openapi_document_is_the_single_service_s(single: TestClient, front: Front) -> None:
    assert front.client.get("/openapi.json").json() == single.get("/openapi.json").json()


def test_writes_are_the_service_s_refusal(front: Front) -> None:
    for method, path in [
        ("POST", "/v1/collections"),
        ("POST", "/v1/collections/captions/items"),
        ("DELETE", "/v1/collections/captions"),
    ]:
        response = front.client.request(method, path, json={"name": "x", "items": []})
        assert response.status_code in (409, 422), response.text
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "writes_unavailable"


def test_a_fail_policy_is_503_naming_the_shard(layout: Layout) -> None:
    with open_front(layout, missing_shards="fail", retry_after_s=3, health_timeout_ms=200) as f:
        f.calls.down.add("shard-1")
        response = f.client.post(
            "/v1/search", json={"collection": "captions", "query": {"text": QUERY}}
        )
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert (error["code"], error["type"]) == ("shards_unavailable", "service_unavailable_error")
        assert "shard-1" in error["message"]
        assert response.headers["retry-after"] == "3"
        assert response.headers["x-missing-shards"] == "shard-1"
        ready = f.client.get("/readyz")
        assert ready.status_code == 503
        assert "shard-1" in ready.json()["error"]["message"]
        bulk = f.client.post(
            "/v1/search/bulk",
            json={"searches": [{"collection": "captions", "query": {"text": QUERY}}]},
        )
        assert bulk.json()["responses"][0]["status"] == 503


def test_a_partial_policy_answers_without_the_shard_and_says_so(
    single: TestClient, layout: Layout
) -> None:
    shard = layout.shard_map.shards[0]
    held = [caption_id(row) for row in range(shard.row_offset, shard.row_offset + shard.count)]
    cases = ("dense", "dense filter", "hybrid rrf", "lexical")
    with open_front(layout, missing_shards="partial", health_timeout_ms=200) as f:
        for case in cases:  # the keyword index is made from every shard's texts on first use
            assert f.client.post("/v1/search", json=_body("captions", case)).status_code == 200
        f.calls.down.add(shard.name)
        for case in cases:
            got = f.client.post("/v1/search", json=_body("captions", case))
            assert got.status_code == 200, got.text
            data = got.json()
            assert data["missing_shards"] == [shard.name]
            body = _body("captions", case) | {"exclude": held}
            expected = single.post("/v1/search", json=body).json()
            assert [hit["id"] for hit in data["results"]] == [
                hit["id"] for hit in expected["results"]
            ]
        assert f.client.get("/readyz").status_code == 200  # one shard is enough
        f.calls.down.update({"shard-1", "shard-2"})
        none_left = f.client.post(
            "/v1/search", json={"collection": "captions", "query": {"text": QUERY}}
        )
        assert none_left.status_code == 503
        assert none_left.headers["x-missing-shards"] == "shard-0,shard-1,shard-2"


def test_a_slow_shard_misses_its_deadline(layout: Layout) -> None:
    with open_front(layout, missing_shards="partial", shard_deadline_ms=100) as f:
        f.calls.slow.add("shard-2")
        f.calls.delay_s = 0.5
        data = f.client.post(
            "/v1/search", json={"collection": "captions", "query": {"text": QUERY}}
        ).json()
        assert data["missing_shards"] == ["shard-2"]


def test_a_step_that_needs_every_shard_fails_under_either_policy(layout: Layout) -> None:
    with open_front(layout, missing_shards="partial") as f:
        f.calls.down.add("shard-0")
        body = {
            "collection": "captions",
            "query": {"item": {"collection": "captions", "id": caption_id(5)}},
        }
        response = f.client.post("/v1/search", json=body)
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "shards_unavailable"


def test_without_the_variant_texts_are_refused_and_vectors_answered(layout: Layout) -> None:
    with open_front(layout, embeds_queries=False) as f:
        text = f.client.post(
            "/v1/search", json={"collection": "captions", "query": {"text": QUERY}}
        )
        assert text.status_code == 409
        assert text.json()["error"]["code"] == "tower_missing"
        vector = f.client.post(
            "/v1/search", json={"collection": "captions", "query": {"vector": [1.0] * 64}, "k": 3}
        )
        assert vector.status_code == 200, vector.text
        assert len(vector.json()["results"]) == 3


def test_a_plain_search_asks_each_shard_once(front: Front) -> None:
    front.calls.asked.clear()
    assert (
        front.client.post(
            "/v1/search", json={"collection": "captions", "query": {"text": QUERY}, "k": 3}
        ).status_code
        == 200
    )
    methods = sorted(method for _, method in front.calls.asked)
    assert methods.count("top") == 3
    assert "keep" not in methods  # no filter: every row of a bundle shard is alive


def test_the_map_must_fit_the_settings(layout: Layout) -> None:
    settings = ShardSettings(missing_shards="partial", min_shards_answered=4)
    with pytest.raises(ValueError, match="more than the 3 shards"):
        ServedShards(layout.shard_map, local_calls(layout.map_path, layout.shard_map), settings)

"""Live collections over HTTP: create, upsert, delete (by ids and by filter), get, patch and
search, each write durable and visible at its answer; bad input refused whole, nothing logged;
searches equal brute force over the reference model; the state survives a restart."""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from service.http.app import create_app
from service.http.errors import ErrorCode
from service.settings import Settings
from storage.live import log as log_module
from tests.fakes.fake_encoders import FAKE_DIM, FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

DIM = 8


@pytest.fixture
def live_settings(settings: Settings, tmp_path: Path) -> Settings:
    return settings.model_copy(update={"collections_dir": tmp_path / "collections"})


def _client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        yield client


@pytest.fixture
def live(live_settings: Settings) -> Iterator[TestClient]:
    yield from _client(live_settings)


def _unit(rng: np.random.Generator, n: int = 1) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _b64(values: list[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode()


def _create(client: TestClient, name: str = "things") -> None:
    response = client.post(
        "/v1/collections",
        json={"name": name, "dim": DIM, "fields": {"cat": "string", "num": "integer"}},
    )
    assert response.status_code == 201, response.text


def _upsert(client: TestClient, items: list[dict[str, Any]], name: str = "things") -> Any:
    response = client.post(f"/v1/collections/{name}/items", json={"items": items})
    assert response.status_code == 200, response.text
    return response.json()


def _search(client: TestClient, vector: np.ndarray, **options: Any) -> list[str]:
    body = {"query": {"vector": vector.tolist()}, "collection": "things", "k": 10, **options}
    response = client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    return [hit["id"] for hit in response.json()["results"]]


def test_a_write_is_searchable_at_its_answer(live: TestClient) -> None:
    _create(live)
    rng = np.random.default_rng(0)
    vectors = _unit(rng, 3)
    answer = _upsert(
        live,
        [
            {"id": f"i{n}", "vector": vectors[n].tolist(), "metadata": {"cat": "a", "num": n}}
            for n in range(3)
        ],
    )
    assert answer == {"seq": 1, "upserted": 3}
    assert _search(live, vectors[1], k=1) == ["i1"]
    info = live.get("/v1/collections/things").json()
    assert info["count"] == 3
    assert info["seq"] == 1
    assert info["dim"] == DIM
    deleted = live.post("/v1/collections/things/items/delete", json={"ids": ["i1", "nope"]})
    assert deleted.json() == {"seq": 2, "deleted": 1}
    assert "i1" not in _search(live, vectors[1])
    got = live.post("/v1/collections/things/items/get", json={"ids": ["i2", "i1", "i0"]}).json()
    assert [item["id"] for item in got["items"]] == ["i2", "i0"]
    response = live.post(
        "/v1/search",
        json={"query": {"vector": vectors[0].tolist()}, "collection": "things", "k": 1},
    )
    assert response.json()["bundle_version"] == "live@2"
    assert response.json()["variant"] is None


def test_delete_by_filter_touches_only_what_came_before(live: TestClient) -> None:
    _create(live)
    rng = np.random.default_rng(1)
    items = [
        {"id": f"i{n}", "vector": v.tolist(), "metadata": {"cat": "ab"[n % 2]}}
        for n, v in enumerate(_unit(rng, 6))
    ]
    _upsert(live, items)
    answer = live.post(
        "/v1/collections/things/items/delete", json={"filter": {"field": "cat", "eq": "a"}}
    ).json()
    assert answer["deleted"] == 3
    _upsert(live, [{"id": "late", "vector": _unit(rng)[0].tolist(), "metadata": {"cat": "a"}}])
    info = live.get("/v1/collections/things").json()
    assert info["count"] == 4


def test_patch_changes_metadata_and_keeps_the_vector(live: TestClient) -> None:
    _create(live)
    vector = _unit(np.random.default_rng(2))[0]
    _upsert(live, [{"id": "x", "vector": vector.tolist(), "metadata": {"cat": "a", "num": 1}}])
    before = live.post(
        "/v1/collections/things/items/get", json={"ids": ["x"], "include_vectors": True}
    ).json()["items"][0]
    response = live.patch("/v1/collections/things/items/x", json={"metadata": {"num": None}})
    assert response.status_code == 200, response.text
    after = live.post(
        "/v1/collections/things/items/get", json={"ids": ["x"], "include_vectors": True}
    ).json()["items"][0]
    assert after["metadata"] == {"cat": "a"}
    assert after["vector"] == before["vector"]
    missing = live.patch("/v1/collections/things/items/nope", json={"metadata": {}})
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("item", "status", "code", "where"),
    [
        ({"id": "b", "vector": [1.0] * (DIM - 1)}, 409, "dimension_mismatch", "items.1.vector"),
        ({"id": "b", "vector": [0.0] * DIM}, 422, "invalid_input", "items.1.vector"),
        (
            {"id": "b", "vector_base64": _b64([1.0] * (DIM + 1))},
            409,
            "dimension_mismatch",
            "items.1.vector_base64",
        ),
        (
            {"id": "b", "vector_base64": _b64([float("nan")] * DIM)},
            422,
            "invalid_input",
            "items.1.vector_base64",
        ),
        ({"id": "b", "vector_base64": "AAA"}, 422, "invalid_input", "items.1.vector_base64"),
        (
            {"id": "b", "vector": [1.0] * DIM, "metadata": {"colour": "red"}},
            409,
            "field_mismatch",
            "items.1.metadata.colour",
        ),
        (
            {"id": "b", "vector": [1.0] * DIM, "metadata": {"num": "one"}},
            409,
            "field_mismatch",
            "items.1.metadata.num",
        ),
        ({"id": "a", "vector": [1.0] * DIM}, 422, "invalid_input", "items.1.id"),
        ({"id": "b", "text": "a text"}, 409, "tower_missing", "items.1.text"),
        ({"id": "b", "vector": [1.0] * DIM, "text": "both"}, 422, "invalid_input", "items.1"),
    ],
)
def test_one_bad_item_refuses_the_whole_request_and_nothing_is_logged(
    live: TestClient, item: dict[str, Any], status: int, code: str, where: str
) -> None:
    _create(live)
    good = {"id": "a", "vector": [0.5] * DIM}
    response = live.post("/v1/collections/things/items", json={"items": [good, item]})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert where in error["message"]
    info = live.get("/v1/collections/things").json()
    assert info["seq"] == 0
    assert info["count"] == 0
    assert info["log_bytes"] == 0


def test_every_acknowledged_write_was_fsynced_first(
    live: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _create(live)
    calls: list[int] = []
    real = log_module.os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(log_module.os, "fsync", counting)
    for n in range(3):
        _upsert(live, [{"id": f"i{n}", "vector": [1.0 + n] + [0.5] * (DIM - 1)}])
        assert len(calls) == n + 1  # this write's fsync came before its answer


def test_a_text_collection_embeds_with_its_variant(live: TestClient) -> None:
    response = live.post(
        "/v1/collections", json={"name": "notes", "variant": FAKE_VARIANT, "fields": {}}
    )
    assert response.status_code == 201, response.text
    assert response.json()["dim"] == FAKE_DIM
    _upsert(
        live,
        [{"id": "dog", "text": "a dog on a couch"}, {"id": "cat", "text": "a cat in a box"}],
        name="notes",
    )
    body = {"query": {"text": "a cat in a box"}, "collection": "notes", "k": 2}
    hits = live.post("/v1/search", json=body).json()["results"]
    assert hits[0]["id"] == "cat"
    got = live.post("/v1/collections/notes/items/get", json={"ids": ["dog"]}).json()
    assert got["items"][0]["text"] == "a dog on a couch"


def test_names_are_unique_and_drop_removes_everything(live: TestClient) -> None:
    _create(live)
    again = live.post("/v1/collections", json={"name": "things", "dim": 4})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "collection_exists"
    bundle_name = live.post("/v1/collections", json={"name": "captions", "dim": 4})
    assert bundle_name.status_code == 409
    assert live.delete("/v1/collections/things").json() == {"dropped": "things"}
    assert live.get("/v1/collections/things").status_code == 404
    body = {"query": {"vector": [1.0] * FAKE_DIM}, "collection": "things", "k": 1}
    assert live.post("/v1/search", json=body).status_code == 404


def test_a_server_without_collections_dir_refuses_writes(client: TestClient) -> None:
    response = client.post("/v1/collections", json={"name": "x", "dim": 4})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "writes_unavailable"


def _model_search(
    model: dict[str, tuple[np.ndarray, dict[str, Any], int]],
    query: np.ndarray,
    k: int,
    offset: int,
    cat: str | None,
    exclude: set[str],
) -> list[tuple[str, float]]:
    """Brute force over the model: (score desc, write order asc), as a rebuilt collection."""
    rows = [
        (float(np.float32(np.dot(v.astype(np.float64), query.astype(np.float64)))), order, item)
        for item, (v, meta, order) in model.items()
        if (cat is None or meta.get("cat") == cat) and item not in exclude
    ]
    rows.sort(key=lambda row: (-row[0], row[1]))
    return [(item, score) for score, _, item in rows[offset : offset + k]]


@pytest.mark.parametrize("seed", [0, 1])
def test_searches_equal_brute_force_over_the_model_and_survive_a_restart(
    live_settings: Settings, seed: int
) -> None:
    rng, numbers = random.Random(seed), np.random.default_rng(seed)
    model: dict[str, tuple[np.ndarray, dict[str, Any], int]] = {}
    order = 0
    universe = [f"id{n}" for n in range(40)]
    # A few exact duplicates: ties must be broken by write order, as in a rebuilt collection.
    shared = _unit(numbers)[0]

    def check(client: TestClient) -> None:
        for _ in range(4):
            query = _unit(numbers)[0]
            k, offset = rng.randint(1, 8), rng.choice([0, 0, 3])
            cat = rng.choice([None, "a", "b"])
            exclude = set(rng.sample(universe, 3))
            body: dict[str, Any] = {
                "query": {"vector": query.tolist()},
                "collection": "things",
                "k": k,
                "offset": offset,
                "exclude": sorted(exclude),
            }
            if cat is not None:
                body["filter"] = {"field": "cat", "eq": cat}
            hits = client.post("/v1/search", json=body).json()["results"]
            unit = query / np.linalg.norm(query.astype(np.float64))
            expected = _model_search(model, unit.astype(np.float32), k, offset, cat, exclude)
            assert [hit["id"] for hit in hits] == [item for item, _ in expected]
            for hit, (_, score) in zip(hits, expected, strict=True):
                assert hit["score"] == pytest.approx(score, abs=1e-6)

    generator = _client(live_settings)
    client = next(generator)
    _create(client)
    for step in range(60):
        if rng.random() < 0.65:
            ids = rng.sample(universe, rng.randint(1, 5))
            vectors = _unit(numbers, len(ids))
            if rng.random() < 0.2:
                vectors[0] = shared
            items = [
                {"id": item, "vector": vectors[n].tolist(), "metadata": {"cat": rng.choice("ab")}}
                for n, item in enumerate(ids)
            ]
            _upsert(client, items)
            stored = client.post(
                "/v1/collections/things/items/get", json={"ids": ids, "include_vectors": True}
            ).json()["items"]
            for n, item in enumerate(stored):
                order += 1
                model[item["id"]] = (
                    np.array(item["vector"], dtype=np.float32),
                    items[n]["metadata"],
                    order,
                )
        else:
            ids = rng.sample(universe, rng.randint(1, 4))
            client.post("/v1/collections/things/items/delete", json={"ids": ids})
            for item in ids:
                model.pop(item, None)
        if step % 10 == 9:
            check(client)
    check(client)
    with pytest.raises(StopIteration):
        next(generator)  # the app shuts down
    generator = _client(live_settings)
    client = next(generator)
    assert client.get("/v1/collections/things").json()["count"] == len(model)
    check(client)
    with pytest.raises(StopIteration):
        next(generator)


READ_KEY = "read-key-0123456789abcdef"
WRITE_KEY = "write-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"


def test_keys_decide_who_writes_and_who_creates(live_settings: Settings) -> None:
    keyed = live_settings.model_copy(
        update={
            "read_keys": [SecretStr(READ_KEY)],
            "write_keys": [SecretStr(WRITE_KEY)],
            "admin_keys": [SecretStr(ADMIN_KEY)],
        }
    )

    def key(value: str) -> dict[str, str]:
        return {"authorization": f"Bearer {value}"}

    for client in _client(keyed):
        create = {"name": "things", "dim": DIM, "fields": {}}
        assert client.post("/v1/collections", json=create).status_code == 401
        for weak in (READ_KEY, WRITE_KEY):
            refused = client.post("/v1/collections", json=create, headers=key(weak))
            assert refused.status_code == 403, refused.text
            assert "admin key" in refused.json()["error"]["message"]
        assert (
            client.post("/v1/collections", json=create, headers=key(ADMIN_KEY)).status_code == 201
        )
        item = {"items": [{"id": "a", "vector": [1.0] * DIM}]}
        read = client.post("/v1/collections/things/items", json=item, headers=key(READ_KEY))
        assert read.status_code == 403
        for route, body in [
            ("/v1/collections/things/items/delete", {"ids": ["a"]}),
        ]:
            assert client.post(route, json=body, headers=key(READ_KEY)).status_code == 403
        assert (
            client.patch(
                "/v1/collections/things/items/a", json={"metadata": {}}, headers=key(READ_KEY)
            ).status_code
            == 403
        )
        written = client.post("/v1/collections/things/items", json=item, headers=key(WRITE_KEY))
        assert written.status_code == 200
        got = client.post(
            "/v1/collections/things/items/get", json={"ids": ["a"]}, headers=key(READ_KEY)
        )
        assert got.status_code == 200
        assert got.json()["items"][0]["id"] == "a"
        assert client.get("/v1/collections/things", headers=key(READ_KEY)).status_code == 200
        compact = "/v1/collections/things/compact"
        assert client.post(compact, headers=key(WRITE_KEY)).status_code == 403
        assert client.post(compact, headers=key(ADMIN_KEY)).status_code == 200
        snapshot = "/v1/collections/things/snapshots"
        assert client.post(snapshot, headers=key(READ_KEY)).status_code == 403
        assert client.post(snapshot, headers=key(WRITE_KEY)).status_code == 403
        assert client.post(snapshot, headers=key(ADMIN_KEY)).status_code in (200, 409)
        assert client.delete("/v1/collections/things", headers=key(WRITE_KEY)).status_code == 403
        assert client.delete("/v1/collections/things", headers=key(ADMIN_KEY)).status_code == 200


WRITE_CODES = frozenset(
    {
        ErrorCode.FIELD_MISMATCH,
        ErrorCode.COLLECTION_EXISTS,
        ErrorCode.COLLECTION_LIMIT,
        ErrorCode.COLLECTION_EMPTY,
        ErrorCode.WRITES_UNAVAILABLE,
        ErrorCode.WRITE_FAILED,
    }
)
"""The error codes only the write routes answer (each exercised in this module)."""


def test_the_collection_limit_is_a_conflict(live_settings: Settings) -> None:
    for client in _client(live_settings.model_copy(update={"max_collections": 1})):
        _create(client, "one")
        response = client.post("/v1/collections", json={"name": "two", "dim": DIM})
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "collection_limit"


def test_a_failed_log_write_is_503_and_nothing_is_acknowledged(
    live: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _create(live)
    _upsert(live, [{"id": "kept", "vector": [1.0] * DIM}])

    def broken(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(log_module.os, "fsync", broken)
    item = {"items": [{"id": "lost", "vector": [0.5] * DIM}]}
    response = live.post("/v1/collections/things/items", json=item)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "write_failed"
    assert int(response.headers["retry-after"]) >= 1
    monkeypatch.undo()
    got = live.post("/v1/collections/things/items/get", json={"ids": ["kept", "lost"]}).json()
    assert [item["id"] for item in got["items"]] == ["kept"]
    again = live.post("/v1/collections/things/items", json=item)
    assert again.status_code == 503  # the collection takes no more writes until a restart


def test_the_write_routes_document_their_conflicts(live: TestClient) -> None:
    paths = live.get("/openapi.json").json()["paths"]
    conflict = paths["/v1/collections/{name}/items"]["post"]["responses"]["409"]["description"]
    for code in WRITE_CODES - {ErrorCode.WRITE_FAILED}:
        assert code.value in conflict


def test_the_catalog_and_items_routes_see_live_collections(live: TestClient) -> None:
    _create(live)
    _upsert(live, [{"id": "a/b:c", "vector": [1.0] * DIM, "metadata": {"num": 7}}])
    listed = live.get("/v1/collections").json()["live"]
    assert [(entry["name"], entry["count"]) for entry in listed] == [("things", 1)]
    item = live.get("/v1/items/things/a/b:c").json()
    assert item["metadata"] == {"num": 7}
    assert live.get("/v1/items/things/nope").status_code == 404


def test_a_base64_vector_is_the_same_vector_as_a_json_list(live: TestClient) -> None:
    _create(live)
    vector = _unit(np.random.default_rng(9))[0]
    _upsert(
        live,
        [
            {"id": "json", "vector": vector.tolist()},
            {"id": "b64", "vector_base64": _b64(vector.tolist())},
        ],
    )
    got = live.post(
        "/v1/collections/things/items/get", json={"ids": ["json", "b64"], "include_vectors": True}
    ).json()["items"]
    assert got[0]["vector"] == got[1]["vector"]


def test_compaction_keeps_every_answer_and_drops_dead_rows(live: TestClient) -> None:
    _create(live)
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 20)
    vectors[5] = vectors[3]  # an exact tie: write order must still decide it after compaction
    items = [
        {"id": f"i{n}", "vector": v.tolist(), "metadata": {"cat": "ab"[n % 2]}}
        for n, v in enumerate(vectors)
    ]
    _upsert(live, items)
    _upsert(live, items[:6])  # replaced: six dead versions
    live.post("/v1/collections/things/items/delete", json={"ids": ["i7", "i8"]})
    queries = [vectors[3], *_unit(rng, 4)]
    before = [_search(live, q, k=12, filter={"field": "cat", "eq": "a"}) for q in queries]
    before += [_search(live, q, k=5, offset=3) for q in queries]
    done = live.post("/v1/collections/things/compact")
    assert done.status_code == 200, done.text
    answer = done.json()
    assert (answer["rows_before"], answer["rows_after"]) == (26, 18)
    assert answer["log_bytes_after"] < answer["log_bytes_before"]
    after = [_search(live, q, k=12, filter={"field": "cat", "eq": "a"}) for q in queries]
    after += [_search(live, q, k=5, offset=3) for q in queries]
    assert after == before
    info = live.get("/v1/collections/things").json()
    assert (info["count"], info["rows"], info["base_count"]) == (18, 0, 18)
    assert info["base_version"] == answer["base_version"]
    assert answer["index_factory"] == "Flat"
    _upsert(live, items[:2])  # written after the base: searched beside it, same answers
    again = [_search(live, q, k=12, filter={"field": "cat", "eq": "a"}) for q in queries]
    again += [_search(live, q, k=5, offset=3) for q in queries]
    assert [len(page) for page in again] == [len(page) for page in before]


def test_a_snapshot_restores_into_a_collection_that_answers_the_same(live: TestClient) -> None:
    _create(live)
    empty = live.post("/v1/collections/things/snapshots")
    assert empty.status_code == 409
    assert empty.json()["error"]["code"] == "collection_empty"
    rng = np.random.default_rng(12)
    vectors = _unit(rng, 30)
    items = [
        {"id": f"i{n}", "vector": v.tolist(), "metadata": {"cat": "ab"[n % 2]}}
        for n, v in enumerate(vectors)
    ]
    _upsert(live, items)
    live.post("/v1/collections/things/compact")
    _upsert(live, items[:4])
    live.post("/v1/collections/things/items/delete", json={"ids": ["i9"]})
    taken = live.post("/v1/collections/things/snapshots")
    assert taken.status_code == 200, taken.text
    snapshot = taken.json()
    assert snapshot["count"] == 29
    restored = live.post(
        "/v1/collections",
        json={
            "name": "restored",
            "from_snapshot": {"collection": "things", "version": snapshot["version"]},
        },
    )
    assert restored.status_code == 201, restored.text
    assert restored.json()["count"] == 29
    assert restored.json()["fields"] == live.get("/v1/collections/things").json()["fields"]
    for query in _unit(rng, 5):
        original = _search(live, query, k=8, filter={"field": "cat", "eq": "b"})
        copy = _search(live, query, k=8, filter={"field": "cat", "eq": "b"}, collection="restored")
        assert copy == original
    missing = live.post(
        "/v1/collections",
        json={
            "name": "nope",
            "from_snapshot": {"collection": "things", "version": "20260101T000000000000Z"},
        },
    )
    assert missing.status_code == 404
    both = live.post(
        "/v1/collections",
        json={
            "name": "nope",
            "dim": 4,
            "from_snapshot": {"collection": "things", "version": snapshot["version"]},
        },
    )
    assert both.status_code == 422


def test_a_bundle_collection_becomes_a_live_one_that_takes_writes(live: TestClient) -> None:
    served = live.get("/v1/collections").json()["collections"][0]
    created = live.post(
        "/v1/collections", json={"name": "captions-live", "from_bundle": served["qualified_name"]}
    )
    assert created.status_code == 201, created.text
    info = created.json()
    assert (info["count"], info["base_count"], info["rows"]) == (
        served["count"],
        served["count"],
        0,
    )
    assert (info["variant"], info["fields"]) == (served["variant"], served["fields"])

    def ids(collection: str, **options: Any) -> list[str]:
        body = {"query": {"text": "a dog on a sofa"}, "collection": collection, "k": 5, **options}
        response = live.post("/v1/search", json=body)
        assert response.status_code == 200, response.text
        return [hit["id"] for hit in response.json()["results"]]

    bundle_ids = ids(served["qualified_name"])
    assert ids("captions-live") == bundle_ids  # the same files, the same tie rule
    text_filter = {"field": "sentid", "range": {"gte": 0}}
    assert ids("captions-live", filter=text_filter) == ids(
        served["qualified_name"], filter=text_filter
    )
    gone = bundle_ids[0]
    live.post("/v1/collections/captions-live/items/delete", json={"ids": [gone]})
    added = live.post(
        "/v1/collections/captions-live/items",
        json={"items": [{"id": "new", "text": "a dog on a sofa", "metadata": {"sentid": 1}}]},
    )
    assert added.status_code == 200, added.text
    after = ids("captions-live")
    assert after[0] == "new"
    assert gone not in after
    assert ids(served["qualified_name"]) == bundle_ids  # the bundle itself is unchanged
    compacted = live.post("/v1/collections/captions-live/compact").json()
    assert compacted["rows_after"] == served["count"]
    assert ids("captions-live") == after
    unknown = live.post("/v1/collections", json={"name": "x", "from_bundle": "nope:captions"})
    assert unknown.status_code == 404

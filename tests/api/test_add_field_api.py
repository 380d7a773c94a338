"""Adding fields to a live collection over HTTP (``PATCH /v1/collections/{name}``): only
additions, durable at the answer (a restart and a compaction keep it), items written before hold
no value, items written after set it and filters on it work; refused on a bundle collection and
without a write key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

DIM = 4
PATH = "/v1/collections/things"
READ_KEY = "read-key-0123456789abcdef"
WRITE_KEY = "write-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"


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


def _vector(n: int) -> list[float]:
    values = np.ones(DIM)
    values[n % DIM] += 1.0 + n
    return list(values / np.linalg.norm(values))


def _create(client: TestClient) -> None:
    response = client.post(
        "/v1/collections", json={"name": "things", "dim": DIM, "fields": {"cat": "string"}}
    )
    assert response.status_code == 201, response.text


def _upsert(client: TestClient, ids: list[int], **metadata: Any) -> Any:
    items = [
        {"id": f"i{n}", "vector": _vector(n), "metadata": {"cat": "x", **metadata}} for n in ids
    ]
    return client.post(f"{PATH}/items", json={"items": items})


def _ids(client: TestClient, node: dict[str, Any]) -> list[str]:
    """The ids a filter keeps, by scroll, checked against a search and a count."""
    page = client.post(f"{PATH}/items/scroll", json={"filter": node, "limit": 1000})
    assert page.status_code == 200, page.text
    ids = [item["id"] for item in page.json()["items"]]
    search = client.post(
        "/v1/search",
        json={"query": {"vector": _vector(0)}, "collection": "things", "k": 100, "filter": node},
    )
    assert search.status_code == 200, search.text
    assert sorted(hit["id"] for hit in search.json()["results"]) == sorted(ids)
    count = client.post(f"{PATH}/items/count", json={"filter": node}).json()["count"]
    assert count == len(ids)
    return ids


def _add(client: TestClient, fields: dict[str, Any]) -> Any:
    return client.patch(PATH, json={"fields": fields})


def _check_year(client: TestClient) -> None:
    """Old items (i0..i2) hold no year; i10 holds 2024, i11 1999."""
    assert _ids(client, {"field": "year", "exists": False}) == ["i0", "i1", "i2"]
    assert _ids(client, {"field": "year", "exists": True}) == ["i10", "i11"]
    assert _ids(client, {"field": "year", "range": {"gte": 2000}}) == ["i10"]
    assert _ids(client, {"field": "year", "eq": 1999}) == ["i11"]


def _with_year(client: TestClient) -> None:
    _create(client)
    assert _upsert(client, [0, 1, 2]).status_code == 200
    refused = _upsert(client, [9], year=2024)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "field_mismatch"
    response = _add(client, {"year": "integer", "tags": "list[string]"})
    assert response.status_code == 200, response.text
    info = response.json()
    assert info["fields"] == {"cat": "string", "tags": "list[string]", "year": "integer"}
    assert client.get(PATH).json()["fields"] == info["fields"]
    assert _upsert(client, [10], year=2024, tags=["a"]).status_code == 200
    assert _upsert(client, [11], year=1999).status_code == 200
    wrong = _upsert(client, [12], year="soon")
    assert wrong.status_code == 409
    assert wrong.json()["error"]["code"] == "field_mismatch"


def test_a_new_field_filters_new_items_and_old_ones_hold_no_value(live: TestClient) -> None:
    _with_year(live)
    _check_year(live)
    assert _ids(live, {"field": "tags", "eq": "a"}) == ["i10"]


def test_a_new_field_survives_a_restart(live_settings: Settings) -> None:
    clients = _client(live_settings)
    _with_year(next(clients))
    clients.close()
    for client in _client(live_settings):
        assert client.get(PATH).json()["fields"]["year"] == "integer"
        _check_year(client)
        assert _upsert(client, [13], year=2030).status_code == 200
        assert _ids(client, {"field": "year", "range": {"gt": 2025}}) == ["i13"]


def test_a_new_field_survives_compactions_and_a_restart_after_one(
    live_settings: Settings,
) -> None:
    clients = _client(live_settings)
    client = next(clients)
    _create(client)
    _upsert(client, [0, 1, 2])
    assert client.post(f"{PATH}/compact").status_code == 200  # a base without the field
    assert _add(client, {"year": "integer"}).status_code == 200
    assert _ids(client, {"field": "year", "exists": False}) == ["i0", "i1", "i2"]
    _upsert(client, [10], year=2024)
    _upsert(client, [11], year=1999)
    _check_year(client)
    assert client.post(f"{PATH}/compact").status_code == 200  # a base with it
    _check_year(client)
    clients.close()
    for restarted in _client(live_settings):
        _check_year(restarted)
        assert restarted.post(f"{PATH}/compact").status_code == 200
        _check_year(restarted)


def test_fields_are_only_added(live: TestClient) -> None:
    _create(live)
    same = _add(live, {"cat": "string"})
    assert same.status_code == 200
    assert same.json()["fields"] == {"cat": "string"}
    for fields, code in (
        ({"cat": "integer"}, "field_mismatch"),
        ({"cat": None}, "field_mismatch"),
        ({"new": "integer", "cat": "float"}, "field_mismatch"),
    ):
        response = _add(live, fields)
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert error["code"] == code
        assert "'cat'" in error["message"]
        assert error["param"] == "fields.cat"
    assert live.get(PATH).json()["fields"] == {"cat": "string"}  # nothing of a refusal stays


@pytest.mark.parametrize(
    "body",
    [
        {"fields": {}},
        {"fields": {"year": "decimal"}},
        {"fields": {"id": "string"}},
        {"fields": {"Bad-Name": "string"}},
        {"fields": {"year": None}},
        {},
    ],
)
def test_bad_requests_are_invalid_input(live: TestClient, body: dict[str, Any]) -> None:
    _create(live)
    response = live.patch(PATH, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_input"


def test_more_fields_than_the_limit_are_refused(live_settings: Settings) -> None:
    for client in _client(live_settings.model_copy(update={"max_collection_fields": 2})):
        _create(client)
        response = _add(client, {"a": "string", "b": "string"})
        assert response.status_code == 422
        assert "max_collection_fields=2" in response.json()["error"]["message"]
        assert _add(client, {"a": "string"}).status_code == 200


def test_a_bundle_collection_takes_no_fields(live: TestClient) -> None:
    response = live.patch("/v1/collections/captions", json={"fields": {"year": "integer"}})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "writes_unavailable"
    missing = live.patch("/v1/collections/nothing", json={"fields": {"year": "integer"}})
    assert missing.status_code == 404


def test_adding_a_field_needs_a_write_key(settings: Settings, tmp_path: Path) -> None:
    keyed = settings.model_copy(
        update={
            "collections_dir": tmp_path / "collections",
            "read_keys": [SecretStr(READ_KEY)],
            "write_keys": [SecretStr(WRITE_KEY)],
            "admin_keys": [SecretStr(ADMIN_KEY)],
        }
    )
    for client in _client(keyed):
        admin = {"authorization": f"Bearer {ADMIN_KEY}"}
        created = client.post("/v1/collections", json={"name": "things", "dim": DIM}, headers=admin)
        assert created.status_code == 201
        body = {"fields": {"year": "integer"}}
        reader = {"authorization": f"Bearer {READ_KEY}"}
        assert client.patch(PATH, json=body, headers=reader).status_code == 403
        writer = {"authorization": f"Bearer {WRITE_KEY}"}
        assert client.patch(PATH, json=body, headers=writer).status_code == 200

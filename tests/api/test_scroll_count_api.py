"""Scroll and count by filter over HTTP, on a bundle collection and a live one: pages cover
every kept row once, in row order; a live collection's cursor survives writes and compactions;
count equals what a search with the same filter can return; limits, bad cursors and filters
that do not fit are refused as the contract says; any key reads them."""

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
from storage.live.collection import RENUMBERINGS_KEPT
from tests.fakes.fake_bundles import CAPTIONS, caption_id
from tests.fakes.fake_encoders import FAKE_DIM, FakeTextEncoder, embed_bag_of_words, fake_factory
from tests.fakes.service_app import wait_ready

DIM = 4
SCROLL = "/v1/collections/{}/items/scroll"
COUNT = "/v1/collections/{}/items/count"
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


def _scroll_all(
    client: TestClient, name: str, limit: int, **options: Any
) -> tuple[list[dict[str, Any]], int]:
    """Every item, page by page; and how many pages it took."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    pages = 0
    while True:
        body = {"limit": limit, **options, **({"cursor": cursor} if cursor else {})}
        response = client.post(SCROLL.format(name), json=body)
        assert response.status_code == 200, response.text
        page = response.json()
        pages += 1
        assert len(page["items"]) <= limit
        items.extend(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return items, pages
        assert len(page["items"]) == limit


def _count(client: TestClient, name: str, **body: Any) -> int:
    response = client.post(COUNT.format(name), json=body)
    assert response.status_code == 200, response.text
    count: int = response.json()["count"]
    return count


def _vector(n: int) -> list[float]:
    values = np.zeros(DIM)
    values[n % DIM] = 1.0
    values[(n + 1) % DIM] = 0.5 + n / 100
    return list(values / np.linalg.norm(values))


def _create(client: TestClient, name: str = "things") -> None:
    response = client.post(
        "/v1/collections",
        json={"name": name, "dim": DIM, "fields": {"cat": "string", "num": "integer"}},
    )
    assert response.status_code == 201, response.text


def _upsert(client: TestClient, ids: list[int], name: str = "things", **metadata: Any) -> None:
    items = [
        {
            "id": f"i{n}",
            "vector": _vector(n),
            "metadata": {"cat": "ab"[n % 2], "num": n, **metadata},
        }
        for n in ids
    ]
    response = client.post(f"/v1/collections/{name}/items", json={"items": items})
    assert response.status_code == 200, response.text


# --- bundle collections ------------------------------------------------------------------------


def test_bundle_pages_cover_every_row_once_in_row_order(client: TestClient) -> None:
    items, pages = _scroll_all(client, "captions", 5)
    assert [item["id"] for item in items] == [caption_id(row) for row in range(len(CAPTIONS))]
    assert pages == 3
    assert items[3]["metadata"]["text"] == CAPTIONS[3]
    assert all(item["vector"] is None for item in items)
    exact, _ = _scroll_all(client, "captions", len(CAPTIONS))
    assert exact == items  # a page that ends on the last row has no next cursor
    first = client.post(SCROLL.format("captions"), json={"cursor": None, "limit": 2})
    assert [item["id"] for item in first.json()["items"]] == [caption_id(0), caption_id(1)]


def test_bundle_scroll_by_filter_with_vectors_and_without_metadata(client: TestClient) -> None:
    node = {"field": "image_id", "in": [43, 45]}
    items, _ = _scroll_all(
        client, "captions", 3, filter=node, include_vectors=True, include_metadata=False
    )
    rows = [row for row in range(len(CAPTIONS)) if 42 + row // 2 in (43, 45)]
    assert [item["id"] for item in items] == [caption_id(row) for row in rows]
    assert all(item["metadata"] is None for item in items)
    for item, row in zip(items, rows, strict=True):
        assert len(item["vector"]) == FAKE_DIM
        np.testing.assert_allclose(item["vector"], embed_bag_of_words(CAPTIONS[row]), atol=1e-6)


def test_count_equals_what_a_search_with_the_filter_returns(client: TestClient) -> None:
    assert _count(client, "captions") == len(CAPTIONS)
    for node in (
        {"field": "image_id", "range": {"gte": 44, "lt": 47}},
        {"not": {"field": "image_id", "eq": 42}},
        {"field": "image_id", "eq": 1},
    ):
        search = client.post(
            "/v1/search",
            json={"query": {"text": "a man"}, "collection": "captions", "k": 100, "filter": node},
        )
        assert search.status_code == 200, search.text
        assert _count(client, "captions", filter=node) == len(search.json()["results"])
        items, _ = _scroll_all(client, "captions", 4, filter=node)
        assert len(items) == len(search.json()["results"])


def test_a_qualified_name_and_a_variant_find_the_bundle(client: TestClient) -> None:
    assert _count(client, "coco-captions:captions") == len(CAPTIONS)
    assert _count(client, "captions", variant="fake-bow") == len(CAPTIONS)
    response = client.post(COUNT.format("captions"), json={"variant": "nope"})
    assert response.status_code == 404
    assert client.post(COUNT.format("nothing"), json={}).status_code == 404


def test_filters_are_checked_as_a_search_checks_them(client: TestClient) -> None:
    node = {"field": "colour", "eq": "red"}
    for path in (SCROLL, COUNT):
        response = client.post(path.format("captions"), json={"filter": node})
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "filter_not_applicable"
    search = client.post(
        "/v1/search",
        json={"query": {"text": "a"}, "collection": "captions", "filter": node},
    )
    assert search.json()["error"]["code"] == "filter_not_applicable"


def test_limits_are_refused_before_any_work(client: TestClient) -> None:
    for limit in (0, 1001, -1):
        response = client.post(SCROLL.format("captions"), json={"limit": limit})
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "invalid_input"
        assert response.json()["error"]["param"] == "limit"
    assert (
        "max_scroll_limit=1000"
        in (client.post(SCROLL.format("captions"), json={"limit": 1001}).json()["error"]["message"])
    )
    schema = client.get("/openapi.json").json()["components"]["schemas"]["ScrollRequest"]
    assert schema["properties"]["limit"]["maximum"] == 1000


@pytest.mark.parametrize("cursor", ["nope", "!!!", "eyJ2IjoxfQ", "e30"])
def test_a_bad_cursor_is_invalid_input_naming_the_cursor(client: TestClient, cursor: str) -> None:
    response = client.post(SCROLL.format("captions"), json={"cursor": cursor})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["param"] == "cursor"


def test_a_cursor_of_another_collection_is_refused(live: TestClient) -> None:
    _create(live)
    _upsert(live, list(range(4)))
    cursor = live.post(SCROLL.format("captions"), json={"limit": 2}).json()["next_cursor"]
    response = live.post(SCROLL.format("things"), json={"cursor": cursor})
    assert response.status_code == 422
    assert response.json()["error"]["param"] == "cursor"
    assert "captions" in response.json()["error"]["message"]


# --- live collections --------------------------------------------------------------------------


def test_live_pages_cover_every_item_once_in_write_order(live: TestClient) -> None:
    _create(live)
    _upsert(live, list(range(10)))
    _upsert(live, [3])  # a replaced item goes to the end: its new version is a new row
    live.post("/v1/collections/things/items/delete", json={"ids": ["i5"]})
    items, pages = _scroll_all(live, "things", 3, include_vectors=True)
    order = [0, 1, 2, 4, 6, 7, 8, 9, 3]
    assert [item["id"] for item in items] == [f"i{n}" for n in order]
    assert pages == 3
    assert items[0]["metadata"] == {"cat": "a", "num": 0}
    np.testing.assert_allclose(items[1]["vector"], _vector(1), atol=1e-6)
    kept, _ = _scroll_all(live, "things", 2, filter={"field": "cat", "eq": "a"})
    assert [item["id"] for item in kept] == [f"i{n}" for n in order if n % 2 == 0]
    assert _count(live, "things") == 9
    assert _count(live, "things", filter={"field": "cat", "eq": "a"}) == len(kept)
    assert _count(live, "things", filter={"field": "num", "range": {"gt": 100}}) == 0


def test_a_live_cursor_survives_writes(live: TestClient) -> None:
    _create(live)
    _upsert(live, list(range(6)))
    first = live.post(SCROLL.format("things"), json={"limit": 3}).json()
    assert [item["id"] for item in first["items"]] == ["i0", "i1", "i2"]
    _upsert(live, [20, 21])  # written after the page: on a later page
    live.post("/v1/collections/things/items/delete", json={"ids": ["i4"]})  # not reached yet
    _upsert(live, [1])  # passed already: comes again at its new place
    rest = live.post(SCROLL.format("things"), json={"limit": 100, "cursor": first["next_cursor"]})
    assert rest.status_code == 200, rest.text
    assert [item["id"] for item in rest.json()["items"]] == ["i3", "i5", "i20", "i21", "i1"]
    assert rest.json()["next_cursor"] is None


def test_a_live_cursor_survives_compactions(live: TestClient) -> None:
    _create(live)
    _upsert(live, list(range(8)))
    first = live.post(SCROLL.format("things"), json={"limit": 3}).json()
    live.post("/v1/collections/things/items/delete", json={"ids": ["i1", "i3", "i6"]})
    assert live.post("/v1/collections/things/compact").status_code == 200
    _upsert(live, [30])
    assert live.post("/v1/collections/things/compact").status_code == 200
    rest = live.post(SCROLL.format("things"), json={"limit": 2, "cursor": first["next_cursor"]})
    assert rest.status_code == 200, rest.text
    page = rest.json()
    assert [item["id"] for item in page["items"]] == ["i4", "i5"]
    last = live.post(SCROLL.format("things"), json={"limit": 10, "cursor": page["next_cursor"]})
    assert [item["id"] for item in last.json()["items"]] == ["i7", "i30"]


def test_a_cursor_the_collection_cannot_follow_is_refused(live: TestClient) -> None:
    _create(live)
    _upsert(live, list(range(4)))
    cursor = live.post(SCROLL.format("things"), json={"limit": 2}).json()["next_cursor"]
    for n in range(RENUMBERINGS_KEPT + 1):
        _upsert(live, [100 + n])
        assert live.post("/v1/collections/things/compact").status_code == 200
    response = live.post(SCROLL.format("things"), json={"cursor": cursor})
    assert response.status_code == 422
    assert response.json()["error"]["param"] == "cursor"
    assert "start" in response.json()["error"]["message"]


def test_a_live_cursor_survives_a_restart(live_settings: Settings) -> None:
    clients = _client(live_settings)
    client = next(clients)
    _create(client)
    _upsert(client, list(range(5)))
    cursor = client.post(SCROLL.format("things"), json={"limit": 2}).json()["next_cursor"]
    clients.close()
    for client in _client(live_settings):
        rest = client.post(SCROLL.format("things"), json={"cursor": cursor})
        assert rest.status_code == 200, rest.text
        assert [item["id"] for item in rest.json()["items"]] == ["i2", "i3", "i4"]


def test_a_live_collection_refuses_another_variant(live: TestClient) -> None:
    _create(live)
    response = live.post(SCROLL.format("things"), json={"variant": "fake-bow"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "variant_mismatch"


def test_any_key_reads_and_writes_need_a_write_key(settings: Settings, tmp_path: Path) -> None:
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
        reader = {"authorization": f"Bearer {READ_KEY}"}
        response = client.post(
            "/v1/collections", json={"name": "things", "dim": DIM}, headers=admin
        )
        assert response.status_code == 201, response.text
        for name in ("things", "captions"):
            for path in (SCROLL, COUNT):
                assert client.post(path.format(name), json={}, headers=reader).status_code == 200
            assert client.post(COUNT.format(name), json={}).status_code == 401
        response = client.post(
            "/v1/collections/things/items",
            json={"items": [{"id": "a", "vector": _vector(0)}]},
            headers=reader,
        )
        assert response.status_code == 403

"""The clients' scroll, count and add-field methods: what they send (MockTransport), and both
clients against the real app (fake encoder, the fake captions bundle, live collections on)
served on a loopback socket: pages, ``iter_items`` across pages, counts, fields added."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import crisscross_client as cc
from crisscross_client import models as m
from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import CAPTIONS, caption_id, write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import clear_service_env
from tests.fakes.socket_server import serve_on_socket

DIM = 3
INFO: dict[str, Any] = {
    "name": "notes",
    "dim": DIM,
    "variant": None,
    "fields": {"kind": "string", "year": "integer"},
    "count": 0,
    "seq": 0,
    "rows": 0,
    "base_count": 0,
    "base_version": None,
    "index": "Flat",
    "log_bytes": 0,
    "created": "2026-11-28T06:00:00Z",
}


def test_the_methods_send_their_documented_requests() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        path = request.url.path
        if path.endswith("/items/scroll"):
            page = {"items": [{"id": "a", "metadata": {"kind": "x"}}], "next_cursor": None}
            return httpx.Response(200, json=page)
        if path.endswith("/items/count"):
            return httpx.Response(200, json={"count": 7})
        return httpx.Response(200, json=INFO)

    with cc.Client("http://svc", transport=httpx.MockTransport(handler)) as client:
        page = client.scroll_items(
            "notes", filter={"field": "kind", "eq": "x"}, limit=5, cursor="c1", include_vectors=True
        )
        assert page.items[0].id == "a"
        assert page.items[0].vector is None
        assert page.next_cursor is None
        assert client.count_items("notes", filter=m.FieldTest(field="kind", eq="x")) == 7
        info = client.add_fields("notes", {"year": "integer"})
        assert info.fields["year"] == "integer"
        assert [item.id for item in client.iter_items("notes")] == ["a"]
    bodies = [(request.method, request.url.path, json.loads(request.content)) for request in sent]
    assert bodies[:3] == [
        (
            "POST",
            "/v1/collections/notes/items/scroll",
            {
                "filter": {"field": "kind", "eq": "x"},
                "limit": 5,
                "cursor": "c1",
                "include_vectors": True,
            },
        ),
        ("POST", "/v1/collections/notes/items/count", {"filter": {"field": "kind", "eq": "x"}}),
        ("PATCH", "/v1/collections/notes", {"fields": {"year": "integer"}}),
    ]
    assert bodies[3] == ("POST", "/v1/collections/notes/items/scroll", {})


@pytest.fixture(scope="module")
def service_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The root of a served app with live collections (no keys)."""
    root = tmp_path_factory.mktemp("scroll-fields")
    write_fake_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    with pytest.MonkeyPatch.context() as environment:
        clear_service_env(environment)
        settings = Settings(
            bundles_root=root / "bundles",
            variants_root=root / "variants",
            collections_dir=root / "collections",
        )
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with serve_on_socket(app, settings) as server:
        yield f"http://127.0.0.1:{server.port}"


def _items(numbers: range, **metadata: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": f"n{n}",
            "vector": [1.0, float(n), 0.5],
            "metadata": {"kind": "ab"[n % 2], **metadata},
        }
        for n in numbers
    ]


def test_the_sync_client_scrolls_counts_and_adds_fields(service_url: str) -> None:
    name = f"t-{uuid.uuid4().hex[:12]}"
    with cc.Client(service_url) as client:
        client.create_collection(name, dim=DIM, fields={"kind": "string"})
        client.upsert(name, _items(range(7)))
        first = client.scroll_items(name, limit=3)
        assert [item.id for item in first.items] == ["n0", "n1", "n2"]
        assert first.items[0].metadata == {"kind": "a"}
        assert first.next_cursor is not None
        rest = client.scroll_items(name, limit=10, cursor=first.next_cursor, include_vectors=True)
        assert [item.id for item in rest.items] == ["n3", "n4", "n5", "n6"]
        assert rest.items[0].vector is not None
        assert len(rest.items[0].vector) == DIM
        assert rest.next_cursor is None
        kept = [
            item.id
            for item in client.iter_items(name, filter={"field": "kind", "eq": "b"}, limit=2)
        ]
        assert kept == ["n1", "n3", "n5"]
        assert client.count_items(name) == 7
        assert client.count_items(name, {"field": "kind", "eq": "b"}) == 3

        info = client.add_fields(name, {"year": "integer"})
        assert info.fields == {"kind": "string", "year": "integer"}
        assert client.add_fields(name, {"year": "integer"}).fields == info.fields  # repeated
        with pytest.raises(cc.ConflictError) as conflict:
            client.add_fields(name, {"year": "string"})
        assert conflict.value.code == "field_mismatch"
        client.upsert(name, _items(range(10, 12), year=2024))
        assert client.count_items(name, {"field": "year", "exists": True}) == 2
        assert client.count_items(name, {"field": "year", "exists": False}) == 7

        captions = list(client.iter_items("captions", limit=5, include_metadata=False))
        assert [item.id for item in captions] == [caption_id(row) for row in range(len(CAPTIONS))]
        assert client.count_items("captions", {"field": "image_id", "eq": 42}) == 2
        with pytest.raises(cc.InvalidInputError) as bad:
            client.scroll_items(name, cursor="not-a-cursor")
        assert bad.value.param == "cursor"


def test_the_async_client_scrolls_counts_and_adds_fields(service_url: str) -> None:
    name = f"t-{uuid.uuid4().hex[:12]}"

    async def scenario() -> None:
        async with cc.AsyncClient(service_url) as client:
            await client.create_collection(name, dim=DIM, fields={"kind": "string"})
            await client.upsert(name, _items(range(5)))
            page = await client.scroll_items(name, limit=2)
            assert [item.id for item in page.items] == ["n0", "n1"]
            ids = [item.id async for item in client.iter_items(name, limit=2)]
            assert ids == [f"n{n}" for n in range(5)]
            assert await client.count_items(name, {"field": "kind", "eq": "a"}) == 3
            info = await client.add_fields(name, {"tags": "list[string]"})
            assert info.fields["tags"] == "list[string]"

    asyncio.run(scenario())

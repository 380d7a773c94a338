"""The sync and the async client against a real service: uvicorn, the committed scenes dual
encoder (text and image towers) over a generated scenes bundle with thumbnails, read, write and
admin keys on, live collections and admin reload enabled. Every public route is called by both
clients, through the same scenario."""

from __future__ import annotations

import asyncio
import inspect
import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import crisscross_client as cc
from crisscross_client import models as m
from tests.e2e.conftest import LiveService, build_scenes_roots, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

READ_KEY = "client-e2e-read-key-0123456789abcdef"
WRITE_KEY = "client-e2e-write-key-0123456789abcdef"
ADMIN_KEY = "client-e2e-admin-key-0123456789abcdef"
VARIANT = "scenes-dual-encoder"


@pytest.fixture(scope="module")
def keyed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveService, Path]]:
    """The service, and a folder of the scenes' image files."""
    root = tmp_path_factory.mktemp("client-e2e")
    variants_root, bundles_root = build_scenes_roots(root, scenes=6)
    env = {
        "CRISSCROSS_READ_KEYS": READ_KEY,
        "CRISSCROSS_WRITE_KEYS": WRITE_KEY,
        "CRISSCROSS_ADMIN_KEYS": ADMIN_KEY,
        "CRISSCROSS_ADMIN_RELOAD": "true",
        "CRISSCROSS_COLLECTIONS_DIR": str(root / "collections"),
    }
    live = start_service(variants_root, bundles_root, root / "service.log", env)
    yield live, root / "scenes-corpus" / "images" / "val"
    assert stop_service(live) == 0, live.log()
    shutil.rmtree(root, ignore_errors=True)


async def done(value: Any) -> Any:
    """A sync client's answer as it is, an async client's awaited: one scenario for both."""
    return await value if inspect.isawaitable(value) else value


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (48, 40), colour).save(buffer, format="PNG")
    return buffer.getvalue()


async def round_trip(
    reader: Any, writer: Any, admin: Any, anonymous: Any, images_dir: Path, tag: str
) -> None:
    """Every public route, through whichever kind of client is given."""
    image_path = sorted(images_dir.glob("*"))[0]
    assert (await done(reader.health())).status
    assert (await done(reader.ready())).status
    variants = await done(reader.variants())
    assert VARIANT in [variant.name for variant in variants.variants]
    dim = next(variant.dim for variant in variants.variants if variant.name == VARIANT)
    served = await done(reader.collections())
    images = next(info for info in served.collections if info.name == "images")
    assert images.thumbnails

    with pytest.raises(cc.Unauthorized):
        await done(anonymous.variants())
    with pytest.raises(cc.Forbidden):
        await done(reader.create_collection(f"refused-{tag}", variant=VARIANT))

    # embeddings
    texts = await done(reader.embed_texts(["a red circle", "a blue square"]))
    assert (texts.dim, len(texts.embeddings)) == (dim, 2)
    pictures = await done(
        reader.embed_images(
            [image_path, str(image_path), _png((200, 0, 0)), Image.open(image_path)]
        )
    )
    assert len(pictures.embeddings) == 4
    assert pictures.embeddings[0] == pytest.approx(pictures.embeddings[3], abs=1e-4)
    models = await done(reader.models())
    assert VARIANT in [model.id for model in models.data]
    openai_shape = await done(reader.embeddings(["a red circle"], model=VARIANT))
    assert openai_shape.embeddings[0] == pytest.approx(texts.embeddings[0], abs=1e-5)

    # searches: every query kind, pages, filters, bulk, upload
    by_text = await done(reader.search(collection="images", text="a red circle", k=3))
    assert len(by_text.results) == 3
    last = reader.last_response
    assert last.status == 200
    assert last.headers.get("x-request-id")
    assert float(last.headers["x-timing-total-ms"]) >= 0
    assert last.elapsed_s > 0
    first = by_text.results[0].id
    by_image = await done(reader.search(collection="images", image=image_path, k=1))
    assert by_image.results[0].id == image_path.name
    by_item = await done(reader.search("images", item=first, k=2, exclude=[first]))
    assert first not in [hit.id for hit in by_item.results]
    by_vector = await done(reader.search("images", vector=texts.embeddings[0], k=3))
    assert [hit.id for hit in by_vector.results] == [hit.id for hit in by_text.results]
    page = await done(reader.search("images", text="a red circle", k=2, offset=1))
    assert [hit.id for hit in page.results] == [hit.id for hit in by_text.results[1:3]]
    field = sorted(images.fields)[0]
    filtered = await done(
        reader.search("images", text="a shape", k=2, filter={"field": field, "exists": True})
    )
    assert filtered.results
    uploaded = await done(reader.search_upload(image_path, "images", k=1))
    assert uploaded.results[0].id == image_path.name
    many = await done(
        reader.search_many(["a red circle", image_path, ("images", first)], "images", k=2)
    )
    assert [len(result.results) for result in many] == [2, 2, 2]
    assert many[0].results[0].id == first
    bulk = await done(
        reader.search_bulk(
            [
                m.SearchRequest(collection="images", query=m.TextQuery(text="a circle"), k=1),
                {"collection": "images", "query": {"item": {"collection": "images", "id": "x"}}},
            ]
        )
    )
    assert [item.status for item in bulk.responses] == [200, 404]
    scored = await done(reader.score([("a red circle", ("images", first))]))
    assert scored.scores[0] == pytest.approx(by_text.results[0].score, abs=1e-4)
    item = await done(reader.item("images", first))
    assert item.id == first
    thumbnail = await done(reader.thumbnail("images", first))
    assert thumbnail.startswith(b"\xff\xd8")
    with pytest.raises(cc.NotFound):
        await done(reader.item("images", "no-such-item"))

    # a live collection: created and dropped by the admin, written by the writer
    name = f"notes-{tag}"
    created = await done(admin.create_collection(name, variant=VARIANT, fields={"kind": "string"}))
    assert (created.name, created.dim) == (name, dim)
    with pytest.raises(cc.Conflict):
        await done(admin.create_collection(name, variant=VARIANT))
    written = await done(
        writer.upsert(
            name,
            [
                {"id": "t1", "text": "a red circle", "metadata": {"kind": "text"}},
                {"id": "i1", "image": Image.open(image_path), "metadata": {"kind": "image"}},
                {"id": "v1", "vector_base64": cc.pack_vector(texts.embeddings[1])},
            ],
        )
    )
    assert written.upserted == 3
    got = await done(writer.get_items(name, ["t1", "v1", "missing"], include_vectors=True))
    assert [stored.id for stored in got.items] == ["t1", "v1"]
    assert got.items[0].text == "a red circle"
    found = await done(reader.search(collection=name, text="a red circle", k=3))
    assert found.results[0].id == "t1"
    assert found.results[0].metadata == {"kind": "text"}
    assert (await done(writer.patch_item(name, "t1", {"kind": "note"}))).seq > written.seq
    assert (await done(writer.delete_items(name, ids=["v1"]))).deleted == 1
    by_filter = await done(writer.delete_items(name, filter={"field": "kind", "eq": "image"}))
    assert by_filter.deleted == 1
    info = await done(writer.get_collection(name))
    assert info.count == 1
    with pytest.raises(cc.Forbidden):
        await done(writer.compact(name))
    compacted = await done(admin.compact(name))
    assert compacted.rows_after == 1
    snapshot = await done(admin.snapshot(name))
    assert snapshot.count == 1
    assert (await done(admin.delete_collection(name))).dropped == name
    with pytest.raises(cc.NotFound):
        await done(reader.get_collection(name))

    reloaded = await done(admin.reload())
    assert "scenes" in [bundle.bundle for bundle in reloaded.bundles]


def test_the_sync_client_round_trips_every_route(keyed_service: tuple[LiveService, Path]) -> None:
    service, images_dir = keyed_service
    with (
        cc.Client(service.url, api_key=READ_KEY) as reader,
        cc.Client(service.url, api_key=WRITE_KEY) as writer,
        cc.Client(service.url, api_key=ADMIN_KEY) as admin,
        cc.Client(service.url, max_retries=0) as anonymous,
    ):
        asyncio.run(round_trip(reader, writer, admin, anonymous, images_dir, "sync"))


def test_the_async_client_round_trips_every_route(keyed_service: tuple[LiveService, Path]) -> None:
    service, images_dir = keyed_service

    async def scenario() -> None:
        async with (
            cc.AsyncClient(service.url, api_key=READ_KEY) as reader,
            cc.AsyncClient(service.url, api_key=WRITE_KEY) as writer,
            cc.AsyncClient(service.url, api_key=ADMIN_KEY) as admin,
            cc.AsyncClient(service.url, max_retries=0) as anonymous,
        ):
            await round_trip(reader, writer, admin, anonymous, images_dir, "async")

    asyncio.run(scenario())

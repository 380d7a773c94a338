"""The one place a query side becomes a vector (service.engine.search.side_vectors): a client's
vector checked against the space's dimension, a stored item read from a bundle or, as of the
visible sequence, from a live collection (its own items only, for a live search), and a text
embedded ahead taken without the encoder."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from service.engine.collection.live_collections import LiveEntry
from service.engine.collection.live_view import LiveFields
from service.engine.collection.write_path import CollectionWriter
from service.engine.query.images import image_limits
from service.engine.query.query import ItemSide, TextSide, VectorSide
from service.engine.search.planner import VectorSpace
from service.engine.search.side_vectors import SideVectors
from service.exceptions import DimensionMismatchError, NotFoundError
from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from service.settings import Settings
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec
from tests.unit.service.engine.collection.test_catalog import catalog_of, variant


class _Live:
    def __init__(self, entry: LiveEntry) -> None:
        self.entry = entry

    def get(self, name: str) -> LiveEntry | None:
        return self.entry if name == self.entry.collection.name else None


def _sides(tmp_path: Path) -> tuple[SideVectors, LiveEntry]:
    spec = CollectionSpec("c", 2, {}, variant="a")
    collection = LiveCollection.open(create_collection(tmp_path, spec))
    collection.stage(Upsert(("a",), np.array([[0.6, 0.8]], dtype=np.float32), ({},), (None,)))
    collection.commit()
    writer = CollectionWriter(collection, ServiceMetrics(), max_pending=4, retry_after_s=1)
    entry = LiveEntry(writer, LiveFields.of("c", {}))
    sides = SideVectors(ServiceMetrics(), image_limits(Settings()))
    sides.live = _Live(entry)  # type: ignore[assignment]
    return sides, entry


def test_a_clients_vector_is_checked_against_the_space(tmp_path: Path) -> None:
    sides, entry = _sides(tmp_path)
    catalog = catalog_of(variant("a", is_default=True), collection_of="a")
    vector = VectorSide((3.0, 4.0), "query.vector")
    found = sides.given(catalog, VectorSpace(None, 2, "c"), vector)
    assert found.tolist() == pytest.approx([0.6, 0.8])
    with pytest.raises(DimensionMismatchError, match="live collection 'c' has dimension 3"):
        sides.given(catalog, VectorSpace(None, 3, "c"), vector)
    with pytest.raises(DimensionMismatchError, match="the variant's embeddings have dimension 8"):
        sides.given(catalog, VectorSpace(catalog.variant_named("a"), 8), vector)
    entry.collection.close()


def test_stored_items_come_from_their_collection(tmp_path: Path) -> None:
    sides, entry = _sides(tmp_path)
    catalog = catalog_of(variant("a", is_default=True), collection_of="a")
    a = catalog.variant_named("a")
    versions: set[str] = set()
    live_item = sides.given(catalog, VectorSpace(None, 2, "c"), ItemSide("c", "a"), "q", versions)
    assert live_item.tolist() == pytest.approx([0.6, 0.8])
    assert versions == {"live@1"}
    with pytest.raises(NotFoundError, match="unknown item 'b' in collection 'c'"):
        sides.given(catalog, VectorSpace(None, 2, "c"), ItemSide("c", "b"))
    with pytest.raises(NotFoundError, match=r"q\.item: a search of live collection 'c' takes"):
        sides.given(catalog, VectorSpace(None, 2, "c"), ItemSide("captions", "item-0"), "q.item")
    # A bundle search may name a live collection's item of its variant, or a bundle item.
    bundle_space = VectorSpace(a, 8)
    assert sides.given(catalog, bundle_space, ItemSide("c", "a")).shape == (2,)
    stored = sides.given(catalog, bundle_space, ItemSide("captions", "item-3"), "q", versions)
    assert stored.shape == (8,)
    assert versions == {"live@1", "1"}
    entry.collection.close()


def test_a_text_embedded_ahead_needs_no_encoder(tmp_path: Path) -> None:
    sides, entry = _sides(tmp_path)
    catalog = catalog_of(variant("a", is_default=True), collection_of="a")
    a = catalog.variant_named("a")
    assert a is not None
    ahead = {("a", "hello"): np.array([1.0, 0.0], dtype=np.float32)}
    found = asyncio.run(
        sides.vector(
            RequestContext("r"), catalog, VectorSpace(a, 8), TextSide("hello", "q"), "q", ahead
        )
    )
    assert found.tolist() == [1.0, 0.0]
    empty = asyncio.run(sides.embed_texts(RequestContext("r"), a, []))
    assert empty.shape == (0, a.dim)
    entry.collection.close()

"""A live collection's query sides: its stored items by id, and the variant that embeds its
texts and images (none for a collection of client vectors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from service.engine.catalog import Catalog
from service.engine.live_collections import LiveEntry
from service.engine.live_queries import live_variant, stored_live_vector
from service.engine.live_search import LiveFields
from service.engine.write_path import CollectionWriter
from service.exceptions import NotFoundError, TowerMissingError
from service.metrics import ServiceMetrics
from storage.live.collection import CollectionSpec, LiveCollection, create_collection
from storage.live.operations import Upsert


def _entry(tmp_path: Path, variant: str | None) -> LiveEntry:
    spec = CollectionSpec("c", 2, {}, variant=variant)
    collection = LiveCollection.open(create_collection(tmp_path, spec))
    collection.stage(Upsert(("a",), np.array([[0.6, 0.8]], dtype=np.float32), ({},), (None,)))
    collection.commit()
    writer = CollectionWriter(collection, ServiceMetrics(), max_pending=4, retry_after_s=1)
    return LiveEntry(writer, LiveFields.of("c", {}))


def test_a_stored_item_is_read_as_of_the_visible_sequence(tmp_path: Path) -> None:
    entry = _entry(tmp_path, None)
    seq, vector = stored_live_vector(entry, "a")
    assert seq == 1
    assert vector.tolist() == pytest.approx([0.6, 0.8])
    with pytest.raises(NotFoundError):
        stored_live_vector(entry, "b")
    entry.collection.close()


def test_texts_need_a_served_variant(tmp_path: Path) -> None:
    catalog = Catalog({}, [])
    client_vectors = _entry(tmp_path / "one", None)
    with pytest.raises(TowerMissingError, match="client vectors"):
        live_variant(catalog, client_vectors, "text", "query.text")
    unserved = _entry(tmp_path / "two", "gone")
    with pytest.raises(NotFoundError, match="not served"):
        live_variant(catalog, unserved, "text", "query.text")
    client_vectors.collection.close()
    unserved.collection.close()

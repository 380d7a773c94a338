"""Write requests made into operations: metadata held to the declared fields, deletes by filter
and patches resolved against the collection as it stands at their turn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.collection.live_collections import LiveEntry
from service.engine.collection.live_view import LiveFields
from service.engine.collection.write_path import CollectionWriter
from service.engine.query.filter_grammar import FieldTest
from service.engine.writes.item_writes import (
    coerced_metadata,
    delete_filter_plan,
    delete_ids_plan,
    patch_plan,
)
from service.exceptions import FieldMismatchError, FilterNotApplicableError, NotFoundError
from service.metrics import ServiceMetrics
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Delete, Upsert
from storage.live.spec import CollectionSpec

FIELDS = {"cat": FieldType.STRING, "n": FieldType.INTEGER, "at": FieldType.TIMESTAMP}


def _entry(tmp_path: Path) -> LiveEntry:
    collection = LiveCollection.open(create_collection(tmp_path, CollectionSpec("c", 2, FIELDS)))
    vectors = np.eye(2, dtype=np.float32)
    collection.stage(Upsert(("a", "b"), vectors, ({"cat": "x", "n": 1}, {"cat": "y"}), ("t", None)))
    collection.commit()
    writer = CollectionWriter(collection, ServiceMetrics(), max_pending=4, retry_after_s=1)
    return LiveEntry(writer, LiveFields.of("c", FIELDS))


def test_metadata_is_typed_and_nulls_are_left_out() -> None:
    stored = coerced_metadata(FIELDS, {"n": 3, "cat": None, "at": "2024-05-01T12:00:00Z"}, "m")
    assert stored == {"n": 3, "at": "2024-05-01T12:00:00Z"}


@pytest.mark.parametrize(
    ("metadata", "where"),
    [({"colour": "red"}, "m.colour"), ({"n": "3"}, "m.n"), ({"n": 1.5}, "m.n")],
)
def test_metadata_that_does_not_fit_is_refused(metadata: dict[str, object], where: str) -> None:
    with pytest.raises(FieldMismatchError, match=where):
        coerced_metadata(FIELDS, metadata, "m")


def test_a_delete_by_filter_resolves_at_its_turn(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    plan = delete_filter_plan(entry, FieldTest(field="cat", eq="x"))
    assert plan(entry.collection.staged_view()) == Delete(("a",))
    with pytest.raises(FilterNotApplicableError):
        delete_filter_plan(entry, FieldTest(field="colour", eq="x"))
    assert delete_ids_plan(["a", "a", "b"])(entry.collection.view()) == Delete(("a", "b"))
    entry.collection.close()


def test_a_patch_keeps_the_vector_and_text(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    view = entry.collection.view()
    merged = patch_plan(entry, "a", {"n": None, "cat": "z"}, merge=True)(view)
    assert isinstance(merged, Upsert)
    assert merged.metadata == ({"cat": "z"},)
    assert merged.texts == ("t",)
    assert merged.vectors.tobytes() == view.vector(view.row_of("a") or 0).tobytes()
    replaced = patch_plan(entry, "a", {"n": 2}, merge=False)(view)
    assert isinstance(replaced, Upsert)
    assert replaced.metadata == ({"n": 2},)
    with pytest.raises(NotFoundError):
        patch_plan(entry, "nope", {}, merge=True)(view)
    with pytest.raises(FieldMismatchError):
        patch_plan(entry, "a", {"colour": "red"}, merge=True)
    entry.collection.close()

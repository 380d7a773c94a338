"""Scroll and count (service.engine.search.scroll): pages in row order that cover every kept row
once, on a bundle, a sharded and a live collection; cursors that round-trip, are refused when
they are not cursors or belong elsewhere, and go on across a live collection's writes and
compactions; a page never goes on without a shard."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from pydantic import TypeAdapter

from formats.field_types import FieldType
from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import Catalog, ServedCollection
from service.engine.collection.collection_view import CollectionView
from service.engine.collection.live_collections import LiveCollections, LiveEntry
from service.engine.collection.live_view import LiveFields
from service.engine.collection.sharded_view import ShardedView
from service.engine.collection.write_path import CollectionWriter
from service.engine.query.filter_grammar import Filter
from service.engine.search.scroll import (
    Position,
    ScrollTarget,
    check_items_filter,
    count,
    scroll,
    scroll_target,
)
from service.exceptions import (
    FilterNotApplicableError,
    InvalidQueryError,
    ShardsUnavailableError,
    VariantMismatchError,
)
from service.metrics import ServiceMetrics
from storage.columns import build_columns, infer_fields
from storage.id_table import IdTable
from storage.index_files import build_index
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Delete, Upsert
from storage.live.spec import CollectionSpec
from storage.reader import LoadedCollection

COUNT = 23
_FILTER: TypeAdapter[Filter] = TypeAdapter(Filter)


def _filter(document: dict[str, Any]) -> Filter:
    return _FILTER.validate_python(document)


def _served(rows: range) -> ServedCollection:
    ids = [f"item-{row}" for row in rows]
    vectors = np.eye(COUNT, 4, dtype=np.float32)[list(rows)] + 0.5
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    metadata: list[dict[str, object]] = [{"n": row} for row in rows]
    collection = LoadedCollection(
        name="things",
        index=build_index(vectors),
        ids=IdTable(ids),
        row_of={item: n for n, item in enumerate(ids)},
        metadata=metadata,  # type: ignore[arg-type]
        vectors=vectors,
        factory="Flat",
        metric="ip",
        columns=build_columns(metadata, infer_fields(metadata)),
    )
    return ServedCollection(variant="v", bundle="b", bundle_version="1", collection=collection)


def _all(target: ScrollTarget, node: Filter | None, limit: int, **options: Any) -> list[Any]:
    items, cursor = [], None
    while True:
        page = scroll(target, node, limit, cursor, **options)
        items.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return items


@pytest.mark.parametrize("limit", [1, 4, COUNT - 1, COUNT, 100])
def test_pages_cover_every_kept_row_once_in_row_order(limit: int) -> None:
    target = ScrollTarget(BundleView(_served(range(COUNT))), "b@1")
    items = _all(target, None, limit, include_vectors=True)
    assert [item.item_id for item in items] == [f"item-{row}" for row in range(COUNT)]
    assert [item.metadata for item in items] == [{"n": row} for row in range(COUNT)]
    np.testing.assert_array_equal(items[5].vector, target.view.vectors_of(np.array([5]))[0])
    middle = _filter({"field": "n", "range": {"gte": 3, "lt": 15}})
    check_items_filter(target, middle)
    kept = _all(target, middle, limit, include_metadata=False)
    assert [item.item_id for item in kept] == [f"item-{row}" for row in range(3, 15)]
    assert all(item.metadata is None and item.vector is None for item in kept)
    assert count(target, middle) == 12
    assert count(target, None) == COUNT


def test_a_sharded_collection_scrolls_as_the_whole() -> None:
    whole = ScrollTarget(BundleView(_served(range(COUNT))), "b@1")
    parts = [range(7), range(7, 8), range(8, COUNT)]
    sharded = ShardedView("things", [BundleView(_served(part)) for part in parts])
    split = ScrollTarget(sharded, sharded.version)
    node = _filter({"field": "n", "in": [1, 2, 6, 7, 8, 20]})
    for limit in (1, 2, 5):
        ours = [(item.item_id, item.metadata) for item in _all(split, node, limit)]
        theirs = [(item.item_id, item.metadata) for item in _all(whole, node, limit)]
        assert ours == theirs
    assert count(split, node) == 6


@dataclasses.dataclass(frozen=True)
class _Missing:
    """A view whose shard ``s1`` did not answer."""

    view: CollectionView

    def __getattr__(self, name: str) -> Any:
        return getattr(self.view, name)

    @property
    def missing(self) -> tuple[str, ...]:
        return ("s1",)


def test_a_page_never_goes_on_without_a_shard() -> None:
    target = ScrollTarget(cast("CollectionView", _Missing(BundleView(_served(range(3))))), "g")
    with pytest.raises(ShardsUnavailableError) as refused:
        scroll(target, None, 2, None, retry_after_s=3)
    assert refused.value.missing == ("s1",)
    assert refused.value.retry_after_s == 3
    with pytest.raises(ShardsUnavailableError):
        count(target, None)


def test_a_cursor_round_trips_and_bad_ones_name_the_cursor() -> None:
    position = Position("things", "b@1", 17)
    assert Position.decode(position.encode()) == position
    assert "=" not in position.encode()
    target = ScrollTarget(BundleView(_served(range(COUNT))), "b@1")
    for bad in ("", "x", "!!!", Position("things", "b@1", -1).encode(), "eyJ2IjoyfQ"):
        with pytest.raises(InvalidQueryError) as refused:
            scroll(target, None, 2, bad)
        assert refused.value.param == "cursor"
    for other, why in (
        (Position("others", "b@1", 2), "'others'"),
        (Position("things", "b@2", 2), "was reloaded"),
        (Position("things", "b@1", COUNT + 1), "as it stands"),
    ):
        with pytest.raises(InvalidQueryError, match=why) as refused:
            scroll(target, None, 2, other.encode())
        assert refused.value.param == "cursor"
    last = scroll(target, None, 2, Position("things", "b@1", COUNT).encode())
    assert last.items == []
    assert last.next_cursor is None


def test_a_filter_is_checked_as_a_search_checks_it() -> None:
    target = ScrollTarget(BundleView(_served(range(3))), "b@1")
    with pytest.raises(FilterNotApplicableError, match=r"filter\.field"):
        check_items_filter(target, _filter({"field": "colour", "eq": "red"}))
    check_items_filter(target, None)


def _live(tmp_path: Path) -> tuple[LiveCollection, LiveCollections]:
    spec = CollectionSpec("c", 2, {"n": FieldType.INTEGER})
    collection = LiveCollection.open(create_collection(tmp_path, spec))
    writer = CollectionWriter(collection, ServiceMetrics(), max_pending=4, retry_after_s=1)
    entry = LiveEntry(writer, LiveFields.of("c", spec.fields))

    class _One:
        def get(self, name: str) -> LiveEntry | None:
            return entry if name == "c" else None

    return collection, cast("LiveCollections", _One())


def _write(collection: LiveCollection, numbers: list[int]) -> None:
    vectors = np.tile(np.array([[0.6, 0.8]], dtype=np.float32), (len(numbers), 1))
    metadata = tuple({"n": n} for n in numbers)
    collection.stage(
        Upsert(tuple(f"i{n}" for n in numbers), vectors, metadata, (None,) * len(numbers))
    )
    collection.commit()


def test_a_live_cursor_goes_on_across_writes_and_compactions(tmp_path: Path) -> None:
    collection, live = _live(tmp_path)
    catalog = Catalog({}, [])
    _write(collection, list(range(8)))
    first = scroll(scroll_target(catalog, live, None, "c", None), None, 3, None)
    assert [item.item_id for item in first.items] == ["i0", "i1", "i2"]
    collection.stage(Delete(("i3", "i4")))
    collection.commit()
    collection.compact()
    _write(collection, [1])  # replaced after the scroll passed it: it comes again
    second = scroll(scroll_target(catalog, live, None, "c", None), None, 2, first.next_cursor)
    assert [item.item_id for item in second.items] == ["i5", "i6"]
    collection.compact()
    rest = scroll(scroll_target(catalog, live, None, "c", None), None, 9, second.next_cursor)
    assert [item.item_id for item in rest.items] == ["i7", "i1"]
    target = scroll_target(catalog, live, None, "c", None)
    assert count(target, _filter({"field": "n", "range": {"lt": 6}})) == 4
    with pytest.raises(VariantMismatchError):
        scroll_target(catalog, live, None, "c", "v")
    forged = Position("c", "another-time/0", 0).encode()
    with pytest.raises(InvalidQueryError, match="compacted") as refused:
        scroll(target, None, 2, forged)
    assert refused.value.param == "cursor"
    collection.close()

"""The mutable segment: the newest version of an id wins, deletes hide rows, and a view keeps
seeing the collection as of its own sequence number while the writer goes on."""

from __future__ import annotations

import numpy as np
import pytest

from formats.field_types import FieldType
from storage.live.operations import Delete, Upsert
from storage.live.segment import MutableSegment


def _upsert(ids: list[str], seed: int, dim: int = 4) -> Upsert:
    vectors = np.random.default_rng(seed).standard_normal((len(ids), dim)).astype(np.float32)
    return Upsert(tuple(ids), vectors, tuple({"n": i} for i in range(len(ids))), (None,) * len(ids))


def test_the_newest_version_wins_and_old_views_keep_their_picture() -> None:
    segment = MutableSegment(4, {"n": FieldType.INTEGER}, capacity=1)
    first = _upsert(["a", "b"], 1)
    segment.apply(1, first)
    before = segment.view(1)
    second = _upsert(["b", "c"], 2)
    segment.apply(2, second)
    segment.apply(3, Delete(("a", "zz")))
    now = segment.view(3)
    assert before.row_of("b") == 1
    assert before.row_of("c") is None
    assert before.count == 2
    np.testing.assert_array_equal(before.vector(before.row_of("b")), first.vectors[1])
    assert now.row_of("a") is None
    assert now.count == 2
    np.testing.assert_array_equal(now.vector(now.row_of("b")), second.vectors[0])
    assert [now.item_id(row) for row in now.live_rows()] == ["b", "c"]
    assert segment.live_count == 2
    assert segment.rows == 4


def test_a_view_taken_before_the_arrays_grow_stays_consistent() -> None:
    segment = MutableSegment(4, {}, capacity=2)
    segment.apply(1, _upsert(["a", "b"], 1))
    early = segment.view(1)
    for seq in range(2, 40):
        segment.apply(seq, _upsert([f"x{seq}"], seq))
    segment.apply(40, Delete(("a",)))
    assert early.count == 2
    assert early.row_of("a") == 0
    assert segment.view(40).row_of("a") is None


def test_deleting_counts_only_live_ids() -> None:
    segment = MutableSegment(4, {})
    segment.apply(1, _upsert(["a"], 1))
    assert segment.apply(2, Delete(("a", "a", "b"))) == 1
    assert segment.apply(3, Delete(("a",))) == 0


def test_columns_cover_every_row_and_filters_mask_with_alive() -> None:
    segment = MutableSegment(4, {"n": FieldType.INTEGER})
    segment.apply(1, _upsert(["a", "b", "c"], 1))
    segment.apply(2, Delete(("b",)))
    view = segment.view(2)
    column = view.own_columns()["n"]
    assert column.count == 3
    kept = column.range_mask(1.0, True, None, False) & view.alive()
    assert [view.item_id(r) for r in np.flatnonzero(kept)] == ["c"]


def test_wrong_operations_are_refused() -> None:
    segment = MutableSegment(4, {})
    segment.apply(1, _upsert(["a"], 1))
    with pytest.raises(ValueError, match="not after"):
        segment.apply(1, _upsert(["b"], 1))
    with pytest.raises(ValueError, match="dimension"):
        segment.apply(2, _upsert(["b"], 1, dim=3))
    with pytest.raises(ValueError, match="not applied"):
        segment.view(5)


def test_added_fields_reach_new_views_only_and_old_rows_hold_no_value() -> None:
    segment = MutableSegment(4, {"n": FieldType.INTEGER})
    segment.apply(1, _upsert(["a"], 1))
    before = segment.view(1)
    assert segment.generation == 0
    segment.add_fields({"year": FieldType.INTEGER})
    segment.apply(2, Upsert(("b",), np.ones((1, 4), np.float32), ({"year": 7},), (None,)))
    after = segment.view(2)
    assert "year" not in before.fields
    assert after.fields == {"n": FieldType.INTEGER, "year": FieldType.INTEGER}
    assert after.own_columns()["year"].present.tolist() == [False, True]
    assert after.base_columns() == {}
    assert after.generation == 0

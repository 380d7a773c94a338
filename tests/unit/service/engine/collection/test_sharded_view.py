"""A sharded collection as one view (service.engine.collection.sharded_view): any split of the
rows into shards searches, filters, keyword-scores and reads exactly as the unsplit
collection, ties across shard borders included."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.sharded_view import ShardedView
from service.engine.rank.search_params import DEFAULT_PARAMS
from storage.columns import build_columns, infer_fields
from storage.id_table import IdTable
from storage.index_files import build_index
from storage.reader import LoadedCollection

COUNT = 90


def _data(seed: int) -> tuple[np.ndarray, list[dict[str, object]]]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((COUNT, 6)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for row in range(0, COUNT, 11):
        vectors[(row + 29) % COUNT] = vectors[row]  # ties across shard borders
    words = [f"w{n}" for n in range(6)]
    metadata: list[dict[str, object]] = [
        {"cat": str(rng.choice(["a", "b"])), "text": " ".join(rng.choice(words, size=3))}
        for _ in range(COUNT)
    ]
    return vectors, metadata


def _served(
    vectors: np.ndarray, metadata: list[dict[str, object]], rows: range
) -> ServedCollection:
    ids = [f"item-{row}" for row in rows]
    chosen = np.ascontiguousarray(vectors[list(rows)])
    meta = [metadata[row] for row in rows]
    collection = LoadedCollection(
        name="things",
        index=build_index(chosen),
        ids=IdTable(ids),
        row_of={item: n for n, item in enumerate(ids)},
        metadata=meta,  # type: ignore[arg-type]
        vectors=chosen,
        factory="Flat",
        metric="ip",
        columns=build_columns(meta, infer_fields(meta)),
    )
    return ServedCollection(variant="v", bundle="b", bundle_version="1", collection=collection)


@pytest.mark.parametrize("cuts", [(30,), (1, 45, 89), (20, 40, 60, 80)])
def test_any_split_answers_as_the_whole(cuts: tuple[int, ...]) -> None:
    vectors, metadata = _data(seed=len(cuts))
    whole = BundleView(_served(vectors, metadata, range(COUNT)), 1)
    bounds = [0, *cuts, COUNT]
    parts = [range(low, high) for low, high in itertools.pairwise(bounds)]
    sharded = ShardedView("things", [BundleView(_served(vectors, metadata, p), 1) for p in parts])
    assert sharded.rows == COUNT
    rng = np.random.default_rng(0)
    for trial in range(10):
        query = vectors[int(rng.integers(COUNT))].copy()
        exclude = {f"item-{n}" for n in rng.choice(COUNT, size=8)}
        keep = whole.keep(None, exclude)
        split_keep = sharded.keep(None, exclude)
        assert np.array_equal(keep, split_keep)  # type: ignore[arg-type]
        wanted = int(rng.integers(1, 40))
        expected = whole.top(query, wanted, keep, DEFAULT_PARAMS)
        found = sharded.top(query, wanted, split_keep, DEFAULT_PARAMS)
        assert found.rows.tolist() == expected.rows.tolist(), trial
        assert found.scores.tolist() == expected.scores.tolist()
        assert sharded.hits(found, 3) == whole.hits(expected, 3)
        terms = [f"w{trial % 6}"]
        assert sharded.keyword_leg("text", terms, keep, 20)[0].rows.tolist() == (
            whole.keyword_leg("text", terms, keep, 20)[0].rows.tolist()
        )
        assert sharded.keyword_leg("text", terms, keep, 20)[0].scores.tolist() == (
            whole.keyword_leg("text", terms, keep, 20)[0].scores.tolist()
        )
    rows = np.array([0, 29, 30, 89], dtype=np.int64)
    assert sharded.ids_of(rows) == whole.ids_of(rows)
    assert np.array_equal(sharded.vectors_of(rows), whole.vectors_of(rows))
    assert sharded.vectors_of(rows[:0]).shape == (0, 6)
    assert sharded.row_of("item-77") == 77
    assert sharded.row_of("nope") is None
    assert sharded.field_texts("text", 28, 32) == whole.field_texts("text", 28, 32)
    assert sharded.version == "1"
    assert sharded.batch_key(DEFAULT_PARAMS) is None


def test_a_sharded_view_needs_a_shard() -> None:
    with pytest.raises(ValueError, match="at least one shard"):
        ShardedView("things", [])


def test_an_empty_shard_is_passed_over() -> None:
    vectors, metadata = _data(seed=9)
    whole = BundleView(_served(vectors, metadata, range(COUNT)), 1)
    parts = [range(50), range(50, COUNT)]
    shards = [BundleView(_served(vectors, metadata, part), 1) for part in parts]
    keep = np.zeros(COUNT, dtype=np.bool_)
    keep[60:70] = True  # nothing kept in the first shard
    sharded = ShardedView("things", shards)
    query = vectors[65].copy()
    found = sharded.top(query, 5, keep, DEFAULT_PARAMS)
    assert found.rows.tolist() == whole.top(query, 5, keep, DEFAULT_PARAMS).rows.tolist()
    assert sharded.kept_count(keep) == 10
    assert dataclasses.replace(sharded).name == "things"

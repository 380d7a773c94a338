"""A live collection against a reference model: seeded random upserts, replacements and deletes,
with reopens (replay) and torn tails, always equal to the model; readers see only what was
committed."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from storage.live.collection import (
    LOG_FILE,
    CollectionExistsError,
    CollectionSpec,
    CollectionSpecError,
    LiveCollection,
    collection_names,
    create_collection,
    drop_collection,
)
from storage.live.operations import Delete, Upsert

DIM = 8
Model = dict[str, tuple[bytes, dict[str, object]]]


def _spec(name: str = "items") -> CollectionSpec:
    return CollectionSpec(name=name, dim=DIM, fields={"cat": FieldType.STRING})


def _assert_equal(collection: LiveCollection, model: Model) -> None:
    view = collection.view()
    assert view.count == len(model)
    live = {view.item_id(row) for row in view.live_rows()}
    assert live == set(model)  # no phantom, none missing
    for item_id, (vector, metadata) in model.items():
        row = view.row_of(item_id)
        assert row is not None
        assert view.vectors[row].tobytes() == vector
        assert dict(view.metadata(row)) == metadata


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_operations_with_reopens_equal_the_model(tmp_path: Path, seed: int) -> None:
    rng, numbers = random.Random(seed), np.random.default_rng(seed)
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    model: Model = {}
    universe = [f"id{i}" for i in range(60)]
    for _step in range(600):
        roll = rng.random()
        if roll < 0.55:
            ids = rng.sample(universe, rng.randint(1, 6))
            vectors = numbers.standard_normal((len(ids), DIM)).astype(np.float32)
            metadata = tuple({"cat": rng.choice("abc")} for _ in ids)
            collection.stage(Upsert(tuple(ids), vectors, metadata, (None,) * len(ids)))
            for i, item in enumerate(ids):
                model[item] = (vectors[i].tobytes(), dict(metadata[i]))
        elif roll < 0.8:
            ids = rng.sample(universe, rng.randint(1, 4))
            collection.stage(Delete(tuple(ids)))
            for item in ids:
                model.pop(item, None)
        elif roll < 0.9:  # a delete by filter, resolved against the staged state
            cat = rng.choice("abc")
            view = collection.staged_view()
            ids = [view.item_id(r) for r in view.live_rows() if view.metadata(r)["cat"] == cat]
            collection.stage(Delete(tuple(ids)))
            for item in ids:
                del model[item]
        if rng.random() < 0.5:
            collection.commit()
            _assert_equal(collection, model)
        if rng.random() < 0.03:  # compaction: the log becomes one checkpoint, same items
            collection.commit()
            done = collection.compact()
            assert done.rows_after == len(model)
            _assert_equal(collection, model)
        if rng.random() < 0.03:  # restart: what was committed comes back from the log
            collection.commit()
            collection.close()
            collection = LiveCollection.open(folder)
            _assert_equal(collection, model)
    collection.commit()
    _assert_equal(collection, model)
    collection.close()


def test_staged_operations_are_unseen_until_committed(tmp_path: Path) -> None:
    collection = LiveCollection.open(create_collection(tmp_path, _spec()))
    vectors = np.ones((1, DIM), dtype=np.float32)
    collection.stage(Upsert(("a",), vectors, ({"cat": "a"},), (None,)))
    assert collection.view().count == 0
    assert collection.staged_view().count == 1
    assert collection.commit() == 1
    assert collection.view().count == 1
    collection.close()


def test_an_uncommitted_record_is_gone_after_a_crash_and_a_torn_one_cut(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    vectors = np.ones((2, DIM), dtype=np.float32)
    collection.stage(Upsert(("a", "b"), vectors, ({}, {}), (None, None)))
    collection.commit()
    collection.stage(Delete(("a",)))  # staged, never committed: the crash loses it
    size = (folder / LOG_FILE).stat().st_size
    with (folder / LOG_FILE).open("ab") as handle:
        handle.write(b"CXW1\x02\x00")  # the start of a record torn by the crash
    reopened = LiveCollection.open(folder)
    assert reopened.view().count == 2
    assert reopened.recovery.truncated_bytes == 6
    assert (folder / LOG_FILE).stat().st_size == size


def test_create_list_and_drop(tmp_path: Path) -> None:
    create_collection(tmp_path, _spec("one"))
    create_collection(tmp_path, _spec("two"))
    (tmp_path / ".staging-three-x").mkdir()  # a create that crashed half way
    with pytest.raises(CollectionExistsError):
        create_collection(tmp_path, _spec("one"))
    assert collection_names(tmp_path) == ["one", "two"]
    drop_collection(tmp_path, "one")
    assert collection_names(tmp_path) == ["two"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two"]


@pytest.mark.parametrize("name", ["", "a:b", "../x", ".hidden", "x" * 65])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(CollectionSpecError):
        _spec(name)


def test_a_spec_round_trips() -> None:
    spec = CollectionSpec("x", 3, {"n": FieldType.INTEGER}, "minilm", "abc", "2026-01-01T00:00:00Z")
    assert CollectionSpec.from_json(spec.to_json()) == spec


def test_compaction_keeps_the_items_and_their_order_and_drops_the_rest(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    vectors = np.ones((3, DIM), dtype=np.float32)
    collection.stage(Upsert(("a", "b", "c"), vectors, ({}, {}, {}), (None, None, None)))
    collection.stage(Upsert(("a",), vectors[:1] * 2, ({"cat": "x"},), ("t",)))
    collection.stage(Delete(("b",)))
    collection.commit()
    size = (folder / LOG_FILE).stat().st_size
    done = collection.compact()
    assert (done.seq, done.rows_before, done.rows_after) == (3, 4, 2)
    assert done.log_bytes_before == size
    view = collection.view()
    assert [view.item_id(row) for row in view.live_rows()] == ["c", "a"]  # write order kept
    collection.stage(Delete(("c",)))  # the log goes on after the checkpoint
    collection.commit()
    collection.close()
    reopened = LiveCollection.open(folder)
    view = reopened.view()
    assert view.seq == 4
    assert [view.item_id(row) for row in view.live_rows()] == ["a"]
    assert dict(view.metadata(view.row_of("a") or 0)) == {"cat": "x"}
    assert view.text(view.row_of("a") or 0) == "t"
    reopened.close()


def test_a_rewrite_cut_short_by_a_crash_leaves_the_old_log(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    collection.stage(Upsert(("a",), np.ones((1, DIM), dtype=np.float32), ({},), (None,)))
    collection.commit()
    collection.close()
    (folder / (LOG_FILE + ".rewrite")).write_bytes(b"CXW1 half a checkpoint")
    reopened = LiveCollection.open(folder)
    assert reopened.view().count == 1
    assert not (folder / (LOG_FILE + ".rewrite")).exists()
    reopened.close()

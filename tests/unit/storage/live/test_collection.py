"""A live collection against a reference model: 1,500 seeded random operations a seed (upserts,
replacements, deletes by ids and by filter, compactions, snapshots, reopens), always equal to the
model; readers see only what was committed; crashes inside compaction; torn tails."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from storage.live import collection as collection_module
from storage.live.base import (
    BASE_FOLDER,
    ITEMS,
    BaseError,
    read_base_pointer,
    read_snapshot,
)
from storage.live.collection import (
    LOG_FILE,
    CollectionExistsError,
    LiveCollection,
    collection_names,
    create_collection,
    drop_collection,
)
from storage.live.log import WriteAheadLog
from storage.live.operations import Delete, Upsert
from storage.live.spec import CollectionSpec, CollectionSpecError
from storage.reader import load_bundle

DIM = 8
Model = dict[str, tuple[bytes, dict[str, object]]]


def _spec(name: str = "items") -> CollectionSpec:
    return CollectionSpec(name=name, dim=DIM, fields={"cat": FieldType.STRING})


def _unit(values: np.ndarray) -> np.ndarray:
    values = values.astype(np.float32)
    unit: np.ndarray = values / np.linalg.norm(values, axis=1, keepdims=True)
    return unit.astype(np.float32)


def _assert_snapshot_equal(version_dir: Path, model: Model) -> None:
    items = load_bundle(version_dir).collections[ITEMS]
    assert sorted(items.ids) == sorted(model)
    for row, item_id in enumerate(items.ids):
        assert items.vectors[row].tobytes() == model[item_id][0]
        assert dict(items.metadata[row]) == model[item_id][1]


def _assert_equal(collection: LiveCollection, model: Model) -> None:
    view = collection.view()
    assert view.count == len(model)
    live = {view.item_id(row) for row in view.live_rows()}
    assert live == set(model)  # no phantom, none missing
    for item_id, (vector, metadata) in model.items():
        row = view.row_of(item_id)
        assert row is not None
        assert view.vector(row).tobytes() == vector
        assert dict(view.metadata(row)) == metadata


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_operations_with_reopens_equal_the_model(tmp_path: Path, seed: int) -> None:
    rng, numbers = random.Random(seed), np.random.default_rng(seed)
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    model: Model = {}
    universe = [f"id{i}" for i in range(60)]
    for _step in range(1500):
        roll = rng.random()
        if roll < 0.55:
            ids = rng.sample(universe, rng.randint(1, 6))
            vectors = _unit(numbers.standard_normal((len(ids), DIM)))
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
        if rng.random() < 0.03:  # compaction: a new base of the same items, the log emptied
            collection.commit()
            done = collection.compact()
            assert done.rows_after == len(model)
            assert (done.base_version is None) == (not model)
            _assert_equal(collection, model)
        if rng.random() < 0.02 and model:  # a snapshot reads back as the model
            collection.commit()
            taken = collection.snapshot(tmp_path / "snapshots")
            _assert_snapshot_equal(taken.path, model)
        if rng.random() < 0.03:  # restart: what was committed comes back from the log
            collection.commit()
            collection.close()
            collection = LiveCollection.open(folder)
            _assert_equal(collection, model)
    collection.commit()
    _assert_equal(collection, model)
    collection.close()


def test_a_compaction_of_no_item_leaves_a_collection_that_reads_and_writes(
    tmp_path: Path,
) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    vectors = np.ones((1, DIM), dtype=np.float32)
    collection.stage(Upsert(("a",), vectors, ({"cat": "a"},), (None,)))
    collection.commit()
    collection.stage(Delete(("a",)))
    collection.commit()
    done = collection.compact()
    assert done.base_version is None
    assert collection.view().count == 0
    collection.stage(Upsert(("b",), vectors, ({"cat": "b"},), (None,)))
    assert collection.commit() == 3
    _assert_equal(collection, {"b": (vectors[0].tobytes(), {"cat": "b"})})
    collection.close()
    reopened = LiveCollection.open(folder)
    _assert_equal(reopened, {"b": (vectors[0].tobytes(), {"cat": "b"})})
    reopened.close()


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
    vectors = _unit(np.arange(3 * DIM).reshape(3, DIM) + 1.0)
    collection.stage(Upsert(("a", "b", "c"), vectors, ({}, {}, {}), (None, None, None)))
    collection.stage(Upsert(("a",), vectors[2:], ({"cat": "x"},), ("t",)))
    collection.stage(Delete(("b",)))
    collection.commit()
    size = (folder / LOG_FILE).stat().st_size
    done = collection.compact()
    assert (done.seq, done.rows_before, done.rows_after) == (3, 4, 2)
    assert (done.log_bytes_before, done.log_bytes_after) == (size, 0)
    assert done.base_version is not None
    assert done.index_factory == "Flat"
    assert read_base_pointer(folder)[:2] == (done.base_version, 3)
    view = collection.view()
    assert view.base_rows == 2
    assert [view.item_id(row) for row in view.live_rows()] == ["c", "a"]  # write order kept
    collection.stage(Delete(("c",)))  # the log goes on after the base
    collection.commit()
    collection.close()
    reopened = LiveCollection.open(folder)
    view = reopened.view()
    assert view.seq == 4
    assert [view.item_id(row) for row in view.live_rows()] == ["a"]
    assert dict(view.metadata(view.row_of("a") or 0)) == {"cat": "x"}
    assert view.text(view.row_of("a") or 0) == "t"
    again = reopened.compact()  # the old base is replaced and removed
    assert again.replaced_version == done.base_version
    assert [p.name for p in (folder / BASE_FOLDER).iterdir()] == [again.base_version]
    reopened.close()


def _filled(tmp_path: Path, seed: int = 7) -> tuple[Path, LiveCollection, Model]:
    """A collection with a base (compacted once) and writes after it, and its model."""
    rng = np.random.default_rng(seed)
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    model: Model = {}

    def upsert(ids: list[str]) -> None:
        vectors = _unit(rng.standard_normal((len(ids), DIM)))
        metadata = tuple({"cat": "abc"[i % 3]} for i in range(len(ids)))
        collection.stage(Upsert(tuple(ids), vectors, metadata, (None,) * len(ids)))
        collection.commit()
        model.update({k: (vectors[i].tobytes(), dict(metadata[i])) for i, k in enumerate(ids)})

    upsert([f"id{i}" for i in range(20)])
    collection.compact()
    upsert([f"id{i}" for i in range(15, 30)])  # replaces five base items
    collection.stage(Delete(("id0", "id16", "id29")))  # from the base and from the log
    collection.commit()
    for item in ("id0", "id16", "id29"):
        del model[item]
    _assert_equal(collection, model)
    return folder, collection, model


class _CrashError(Exception):
    """Stands for a SIGKILL at one step of a compaction."""


@pytest.mark.parametrize(
    "step", ["after the bundle write", "after the publish", "before the log truncation"]
)
def test_a_crash_inside_compaction_opens_to_the_same_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    folder, collection, model = _filled(tmp_path)
    old_version = read_base_pointer(folder).version
    if step == "after the bundle write":
        monkeypatch.setattr(collection_module, "publish_base", _raise_crash)
    elif step == "after the publish":
        monkeypatch.setattr(collection_module, "load_base", _raise_crash)
    else:
        monkeypatch.setattr(WriteAheadLog, "replace_with", _raise_crash)
    with pytest.raises(_CrashError):
        collection.compact()
    monkeypatch.undo()
    # The process dies here: nothing is closed; the next one opens the folder as it is.
    reopened = LiveCollection.open(folder)
    _assert_equal(reopened, model)
    version, seq, _ = read_base_pointer(folder)
    if step == "after the bundle write":
        assert version == old_version  # the unpublished version was removed
    else:
        assert seq == reopened.view().seq
        assert reopened.own_rows == 0
    assert [p.name for p in (folder / BASE_FOLDER).iterdir()] == [version]
    reopened.stage(Delete(("id1",)))  # and it takes writes again
    reopened.commit()
    del model["id1"]
    reopened.close()
    _assert_equal(LiveCollection.open(folder), model)


def _raise_crash(*_args: object, **_kwargs: object) -> None:
    raise _CrashError


def test_a_damaged_base_is_refused_at_open(tmp_path: Path) -> None:
    folder, collection, _ = _filled(tmp_path)
    collection.close()
    version = read_base_pointer(folder).version
    assert version is not None
    vectors = folder / BASE_FOLDER / version / "items.vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-1] ^= 0xFF
    vectors.chmod(0o644)
    vectors.write_bytes(bytes(data))
    with pytest.raises(BaseError):
        LiveCollection.open(folder)


def test_a_snapshot_restores_as_a_new_collection(tmp_path: Path) -> None:
    _, collection, model = _filled(tmp_path / "a")
    taken = collection.snapshot(tmp_path / "snapshots")
    assert taken.count == len(model)
    assert taken.seq == collection.view().seq
    info = read_snapshot(taken.path)
    assert (info.dim, info.variant, info.count) == (DIM, None, len(model))
    restored = LiveCollection.open(create_collection(tmp_path / "b", _spec(), taken.path))
    _assert_equal(restored, model)
    assert restored.view().seq == 0
    assert restored.base is not None


def test_a_snapshot_is_linked_and_an_outside_bundle_copied(tmp_path: Path) -> None:
    _, collection, model = _filled(tmp_path / "collections" / "a")
    root = tmp_path / "collections"
    taken = collection.snapshot(root / ".snapshots")
    restored = create_collection(root, _spec("linked"), taken.path)
    outside = tmp_path / "bundles" / taken.path.name
    shutil.copytree(taken.path, outside)
    copied = create_collection(root, _spec("copied"), outside)
    vectors = "items.vectors.npy"
    assert (restored / BASE_FOLDER / taken.version / vectors).samefile(taken.path / vectors)
    assert not (copied / BASE_FOLDER / taken.version / vectors).samefile(outside / vectors)
    _assert_equal(LiveCollection.open(copied), model)


def test_reopened_right_after_a_compaction_of_no_item_it_takes_writes(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    vectors = np.ones((1, DIM), dtype=np.float32)
    collection.stage(Upsert(("a",), vectors, ({"cat": "a"},), (None,)))
    collection.commit()
    collection.stage(Delete(("a",)))
    collection.commit()
    collection.compact()
    collection.close()
    reopened = LiveCollection.open(folder)
    assert reopened.visible_seq == 2  # the sequence goes on where the compaction left it
    reopened.stage(Upsert(("b",), vectors, ({"cat": "b"},), (None,)))
    assert reopened.commit() == 3
    reopened.close()
    again = LiveCollection.open(folder)
    _assert_equal(again, {"b": (vectors[0].tobytes(), {"cat": "b"})})
    again.close()


def _stage(collection: LiveCollection, ids: list[str], **metadata: object) -> None:
    vectors = _unit(np.random.default_rng(len(ids)).standard_normal((len(ids), DIM)))
    rows = tuple({"cat": "a", **metadata} for _ in ids)
    collection.stage(Upsert(tuple(ids), vectors, rows, (None,) * len(ids)))
    collection.commit()


def test_added_fields_are_durable_at_once_and_filter_after_replay_and_compaction(
    tmp_path: Path,
) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    _stage(collection, ["a", "b"])
    collection.compact()  # a base written before the field
    _stage(collection, ["c"])
    before = collection.view()
    spec = collection.add_fields({"year": FieldType.INTEGER})
    assert spec.fields == {"cat": FieldType.STRING, "year": FieldType.INTEGER}
    assert collection.spec is spec
    assert "year" not in before.fields  # a view made earlier keeps its fields
    view = collection.view()
    assert view.fields["year"] == FieldType.INTEGER
    assert not view.base_columns()["year"].present.any()  # the base holds no value of it
    _stage(collection, ["d"], year=2024)
    # No close: a kill -9 now finds the spec on disk, and replays the record that uses it.
    crashed = LiveCollection.open(folder)
    columns = crashed.view().own_columns()["year"]
    assert columns.present.tolist() == [False, True]
    assert crashed.view().base_columns()["year"].count == 2
    crashed.close()
    collection.compact()  # a base with the field
    base = collection.view().base_columns()["year"]
    assert [collection.view().item_id(row) for row in np.flatnonzero(base.present)] == ["d"]
    collection.close()
    reopened = LiveCollection.open(folder)
    assert reopened.spec.fields["year"] == FieldType.INTEGER
    assert reopened.view().base_columns()["year"].present.tolist() == [False, False, False, True]
    with pytest.raises(ValueError, match="declared already"):
        reopened.add_fields({"year": FieldType.INTEGER})
    with pytest.raises(CollectionSpecError):
        reopened.add_fields({"id": FieldType.STRING})
    assert reopened.add_fields({}) is reopened.spec
    reopened.close()


def test_an_add_fields_cut_short_leaves_the_old_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    monkeypatch.setattr(collection_module, "replace_durably", _raise_crash)
    with pytest.raises(_CrashError):
        collection.add_fields({"year": FieldType.INTEGER})
    assert "year" not in collection.spec.fields  # nothing changed in memory either
    assert (folder / collection_module.SPEC_STAGING).exists()
    collection.close()
    reopened = LiveCollection.open(folder)
    assert reopened.spec == _spec()
    assert not (folder / collection_module.SPEC_STAGING).exists()
    reopened.close()


def test_compactions_carry_a_readers_row_to_the_first_item_kept_after_it(
    tmp_path: Path,
) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    _stage(collection, [f"i{n}" for n in range(6)])
    first = collection.view().generation
    assert first == 0
    collection.stage(Delete(("i1", "i2")))
    collection.commit()
    collection.compact()
    second = collection.view().generation
    assert second == collection.visible_seq
    # Rows 0..5 were i0..i5; kept: i0, i3, i4, i5 at rows 0..3.
    assert [collection.carried_row(first, row, second) for row in range(7)] == [
        0,
        1,
        1,
        1,
        2,
        3,
        4,
    ]
    assert collection.compact().seq == second  # nothing written since: the same generation
    assert collection.view().generation == second
    for n in range(collection_module.RENUMBERINGS_KEPT):
        _stage(collection, [f"x{n}"])
        collection.compact()
    assert collection.carried_row(first, 3, collection.view().generation) is None
    assert collection.carried_row(second, 0, collection.view().generation) == 0
    collection.close()


def test_a_replica_applies_the_leaders_records_into_an_equal_copy(tmp_path: Path) -> None:
    leader = LiveCollection.open(create_collection(tmp_path / "leader", _spec()))
    rng = np.random.default_rng(3)
    model: Model = {}
    for n in range(30):
        ids = tuple(f"id{(n * 7 + i) % 40}" for i in range(5))
        vectors = _unit(rng.standard_normal((5, DIM)))
        leader.stage(Upsert(ids, vectors, ({"cat": "a"},) * 5, (None,) * 5, key=f"k{n}"))
        model.update({k: (vectors[i].tobytes(), {"cat": "a"}) for i, k in enumerate(ids)})
        if n % 4 == 3:
            leader.stage(Delete((ids[0],)))
            model.pop(ids[0])
        leader.commit()
    replica = LiveCollection.open(create_collection(tmp_path / "replica", leader.spec))
    while replica.visible_seq < leader.visible_seq:
        replica.apply_replicated(leader.frames_after(replica.visible_seq, max_bytes=4096))
    _assert_equal(replica, model)
    assert replica.keyed("k29") == leader.keyed("k29")
    with pytest.raises(ValueError, match="does not follow"):
        replica.apply_replicated(leader.frames_after(0, max_bytes=1 << 20))
    replica.close()
    # Its log is its own: it opens to the same items, and compacts to the same rows.
    replica = LiveCollection.open(tmp_path / "replica" / "items")
    _assert_equal(replica, model)
    leader_rows = [leader.view().item_id(int(r)) for r in leader.view().live_rows()]
    replica.compact()
    assert [replica.view().item_id(int(r)) for r in replica.view().live_rows()] == leader_rows
    leader.close()
    replica.close()


def test_idempotency_keys_survive_a_reopen_and_a_compaction(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    vectors = _unit(np.ones((2, DIM)))
    seq, done = collection.stage(Upsert(("a", "b"), vectors, ({}, {}), (None, None), key="k1"))
    collection.commit()
    assert collection.keyed("k1") is not None
    collection.close()
    collection = LiveCollection.open(folder)
    assert (collection.keyed("k1").seq, collection.keyed("k1").done) == (seq, done)
    collection.compact()
    collection.close()
    collection = LiveCollection.open(folder)
    assert collection.keyed("k1") is not None
    assert collection.keyed("k1").seq == seq
    assert collection.keyed("k2") is None
    collection.close()


def test_a_new_term_is_recorded_from_the_next_record_on(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, _spec())
    collection = LiveCollection.open(folder)
    _stage(collection, ["a"])
    collection.commit()
    history = collection.begin_term(2)
    assert history.term_of(collection.visible_seq) == 0
    assert history.term_of(collection.visible_seq + 1) == 2
    collection.close()
    assert LiveCollection.open(folder).terms == history


def test_a_copy_made_from_a_base_goes_on_after_its_sequence(tmp_path: Path) -> None:
    leader, model = _filled(tmp_path / "leader")[1:]
    done = leader.compact()
    assert done.base_version is not None
    version_dir = leader.folder / BASE_FOLDER / done.base_version
    copy_folder = create_collection(
        tmp_path / "copy", leader.spec, version_dir, ITEMS, base_seq=done.seq
    )
    copy = LiveCollection.open(copy_folder)
    assert copy.base_seq == done.seq == copy.visible_seq
    _assert_equal(copy, model)
    leader.stage(Upsert(("new",), _unit(np.ones((1, DIM))), ({"cat": "x"},), (None,)))
    leader.commit()
    copy.apply_replicated(leader.frames_after(copy.visible_seq, 1 << 20))
    assert copy.view().row_of("new") is not None
    leader.close()
    copy.close()

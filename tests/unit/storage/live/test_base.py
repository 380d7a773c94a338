"""A live collection's base: its pointer, its tuned index, its bundle read back (and refused
when damaged), and versions nobody points at removed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from storage.live.base import (
    BASE_FOLDER,
    ITEMS,
    BaseError,
    BaseIndex,
    ItemRows,
    load_base,
    publish_base,
    read_base_pointer,
    read_snapshot,
    remove_unpublished,
    write_items_bundle,
)

DIM = 8


def _rows(n: int, seed: int = 0) -> ItemRows:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return ItemRows(
        ids=[f"i{k}" for k in range(n)],
        vectors=vectors,
        metadata=[{"cat": "ab"[k % 2]} for k in range(n)],
        texts=[f"text {k}" if k % 3 else None for k in range(n)],
    )


def _write(folder: Path, rows: ItemRows, index: BaseIndex | None = None) -> Path:
    return write_items_bundle(
        folder,
        BASE_FOLDER,
        rows,
        fields={"cat": FieldType.STRING},
        variant=None,
        variant_fingerprint=None,
        seq=7,
        index=index or BaseIndex(),
        make_current=False,
        source="things",
    )


def test_the_pointer_round_trips_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    assert read_base_pointer(tmp_path)[:2] == (None, 0)
    publish_base(tmp_path, "v1", 12)
    assert read_base_pointer(tmp_path)[:2] == ("v1", 12)
    publish_base(tmp_path, None, 13)  # every item deleted: no base
    assert read_base_pointer(tmp_path)[:2] == (None, 13)
    (tmp_path / "base.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(BaseError):
        read_base_pointer(tmp_path)


def test_a_written_base_loads_back_row_for_row(tmp_path: Path) -> None:
    rows = _rows(30)
    version = _write(tmp_path, rows)
    base = load_base(tmp_path, version.name, 7, DIM)
    assert (base.seq, base.count) == (7, 30)
    assert list(base.items.ids) == list(rows.ids)
    assert base.items.vectors.tobytes() == rows.vectors.tobytes()
    assert list(base.texts) == list(rows.texts)
    assert [dict(m) for m in base.items.metadata] == list(rows.metadata)
    info = read_snapshot(version)
    assert (info.dim, info.variant, info.count) == (DIM, None, 30)
    assert info.fields == {"cat": FieldType.STRING}
    with pytest.raises(BaseError):
        load_base(tmp_path, version.name, 7, DIM + 1)


def test_a_damaged_bundle_is_not_a_snapshot(tmp_path: Path) -> None:
    version = _write(tmp_path, _rows(5))
    texts = version / "items.texts.jsonl"
    texts.chmod(0o644)
    texts.write_text("null\n" * 5, encoding="utf-8")
    with pytest.raises(BaseError):
        read_snapshot(version)


def test_an_ivf_index_is_tuned_to_its_target_and_recorded(tmp_path: Path) -> None:
    rows = _rows(400, seed=3)
    version = _write(tmp_path, rows, BaseIndex("IVF4,Flat", target_recall=0.9))
    items = load_base(tmp_path, version.name, 7, DIM).items
    assert items.factory == "IVF4,Flat"
    tuning = items.tuning
    assert tuning is not None
    assert tuning.met
    assert tuning.recall_at_10 >= 0.9
    assert items.search_params == {"nprobe": tuning.value}
    assert [point.value for point in tuning.sweep][-1] == tuning.value
    written = BaseIndex("IVF64,Flat").write(tmp_path, "few", rows.vectors[:100])
    assert written.factory == "Flat"  # fewer than 39 rows per list: exact


def test_versions_nobody_points_at_are_removed(tmp_path: Path) -> None:
    kept = _write(tmp_path, _rows(3))
    cut_short = _write(tmp_path, _rows(3, seed=1))
    (tmp_path / BASE_FOLDER / ".tmp-half").mkdir()
    remove_unpublished(tmp_path, kept.name)
    assert [p.name for p in (tmp_path / BASE_FOLDER).iterdir()] == [kept.name]
    assert not cut_short.exists()
    assert ITEMS == "items"

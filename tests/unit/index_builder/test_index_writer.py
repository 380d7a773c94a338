"""The planned index as the bundle writer's index: tuned, on disk, or flat as without a spec;
an index a collection cannot have writes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from index_builder.index_writer import PlannedIndex, index_writer
from storage.index_files import search_parameter
from storage.index_plan import IndexPlanError, IndexSpec, plan_index
from storage.manifest import BundleError, TuningParameter, read_manifest, verify_bundle
from storage.reader import load_bundle
from storage.writer import CollectionInput, write_bundle
from tests.unit.index_builder.hard_vectors import hard_vectors
from tests.unit.storage.bundles import captions


def _hard_collection(index: IndexSpec | None, n: int = 4000) -> CollectionInput:
    return CollectionInput(
        name="items",
        ids=[f"item-{i}" for i in range(n)],
        metadata=[{} for _ in range(n)],
        vectors=hard_vectors(n, d=48, seed=0),
        index=index_writer("Flat", index),
    )


def _write_one(root: Path, collection: CollectionInput, version: str = "v1") -> Path:
    return write_bundle(
        root, "demo", [collection], variant_name="fake", variant_fingerprint="f" * 64,
        version=version,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "parameter", "default"),
    [
        (IndexSpec(kind="ivf-flat", held_out_queries=300), "nprobe", 1),
        (IndexSpec(kind="hnsw", m=8, held_out_queries=300), "efSearch", 16),
    ],
)
def test_a_tuned_bundle_records_and_sets_its_search_parameter(
    tmp_path: Path, spec: IndexSpec, parameter: TuningParameter, default: int
) -> None:
    version_dir = _write_one(tmp_path, _hard_collection(spec))
    entry = read_manifest(version_dir).collections["items"]
    assert entry.tuning is not None
    assert entry.tuning.met
    assert entry.tuning.recall_at_10 >= 0.95
    assert entry.tuning.index_kind == spec.kind
    assert entry.search_params == {parameter: entry.tuning.value}
    assert entry.factory == plan_index(4000, 48, spec).factory
    assert entry.tuning.value != default, "data too easy: faiss's default already meets it"
    loaded = load_bundle(version_dir).collections["items"]
    assert loaded.tuning == entry.tuning
    assert search_parameter(loaded.index, parameter) == entry.tuning.value


def test_an_on_disk_ivf_bundle_hashes_its_lists_and_loads_after_the_rename(
    tmp_path: Path,
) -> None:
    collection = _hard_collection(IndexSpec(kind="ivf-flat", on_disk=True, held_out_queries=200))
    version_dir = _write_one(tmp_path, collection)
    manifest = verify_bundle(version_dir)
    entry = manifest.collections["items"]
    assert entry.ivfdata_file == "items.ivfdata"
    assert "items.ivfdata" in manifest.files
    assert not [path for path in version_dir.iterdir() if path.name.startswith(".")]
    loaded = load_bundle(version_dir).collections["items"]
    assert entry.tuning is not None
    assert search_parameter(loaded.index, "nprobe") == entry.tuning.value
    in_memory = _write_one(
        tmp_path, _hard_collection(IndexSpec(kind="ivf-flat", held_out_queries=200)), "v2"
    )
    reference = load_bundle(in_memory).collections["items"]
    queries = hard_vectors(20, d=48, seed=9)
    np.testing.assert_array_equal(
        loaded.index.search(queries, 10)[1], reference.index.search(queries, 10)[1]
    )
    # ``loaded`` maps items.ivfdata: writing into that file would take its pages away from the
    # mapping (SIGBUS, the whole test run dies). A new file renamed over it leaves the mapped
    # inode as it was.
    broken = version_dir / "items.ivfdata.broken"
    broken.write_bytes(b"broken")
    os.replace(broken, version_dir / "items.ivfdata")
    with pytest.raises(BundleError, match=r"items\.ivfdata has sha256"):
        verify_bundle(version_dir)
    np.testing.assert_array_equal(
        loaded.index.search(queries, 10)[1], reference.index.search(queries, 10)[1]
    )


def test_a_flat_spec_writes_the_same_collection_entry_as_no_spec(tmp_path: Path) -> None:
    plain = _write_one(tmp_path, captions(factory="Flat"), "v1")
    spec = CollectionInput(**{**captions().__dict__, "index": PlannedIndex(IndexSpec(kind="flat"))})
    planned = _write_one(tmp_path, spec, "v2")
    first = json.loads((plain / "manifest.json").read_text())["collections"]
    second = json.loads((planned / "manifest.json").read_text())["collections"]
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert first["captions"]["search_params"] == {}
    assert first["captions"]["tuning"] is None
    assert (plain / "captions.faiss").read_bytes() == (planned / "captions.faiss").read_bytes()


def test_an_index_the_collection_cannot_have_writes_nothing(tmp_path: Path) -> None:
    collection = _hard_collection(IndexSpec(kind="ivf-flat", nlist=1024), n=2000)
    with pytest.raises(IndexPlanError, match="nlist=1024 needs at least"):
        _write_one(tmp_path, collection)
    assert list((tmp_path / "demo").iterdir()) == []

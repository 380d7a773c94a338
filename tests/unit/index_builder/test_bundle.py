"""Bundle write → verify → load, atomic publication and refusal of damaged bundles."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from index_builder.bundle import (
    BundleError,
    CollectionInput,
    load_bundle,
    read_manifest,
    resolve_current,
    set_current,
    verify_bundle,
    write_bundle,
)
from index_builder.bundle_layout import CURRENT_FILE
from index_builder.index_plan import IndexPlanError, IndexSpec, plan_index
from index_builder.index_tuning import TuningParameter, search_parameter
from tests.unit.index_builder.hard_vectors import hard_vectors


def unit_vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, d)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def captions(n: int = 20, d: int = 8, seed: int = 0, factory: str = "Flat") -> CollectionInput:
    return CollectionInput(
        name="captions",
        ids=[f"COCO_val2014:sentid:{i}" for i in range(n)],
        metadata=[{"text": f"caption {i}", "image_id": i // 5} for i in range(n)],
        vectors=unit_vectors(n, d, seed),
        factory=factory,
    )


def write(root: Path, version: str, **kwargs: object) -> Path:
    return write_bundle(
        root,
        "demo",
        [captions()],
        variant_name="fake",
        variant_fingerprint="f" * 64,
        version=version,
        **kwargs,  # type: ignore[arg-type]
    )


def test_round_trip_keeps_rows_ids_metadata_and_vectors(tmp_path: Path) -> None:
    collection = captions()
    version_dir = write_bundle(
        tmp_path, "demo", [collection], variant_name="fake", variant_fingerprint="ab" * 32
    )
    assert resolve_current(tmp_path / "demo") == version_dir
    bundle = load_bundle(version_dir)
    loaded = bundle.collections["captions"]
    assert bundle.variant_name == "fake"
    assert bundle.variant_fingerprint == "ab" * 32
    assert loaded.ids == list(collection.ids)
    assert loaded.metadata[3] == {"text": "caption 3", "image_id": 0}
    assert loaded.row_of["COCO_val2014:sentid:7"] == 7
    np.testing.assert_array_equal(loaded.vectors, collection.vectors)
    scores, rows = loaded.index.search(collection.vectors[:3], 1)
    assert rows[:, 0].tolist() == [0, 1, 2]
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)
    manifest = read_manifest(version_dir)
    assert set(manifest.files) == {
        "captions.faiss",
        "captions.ids.jsonl",
        "captions.vectors.npy",
        "captions.columns.npz",
    }
    assert manifest.collections["captions"].count == 20


def test_vectors_are_stored_row_major_and_mapped_read_only(tmp_path: Path) -> None:
    collection = captions()
    version_dir = write_bundle(
        tmp_path, "demo", [collection], variant_name="fake", variant_fingerprint="ab" * 32
    )
    stored = np.load(version_dir / "captions.vectors.npy", mmap_mode="r")
    assert stored.flags.c_contiguous  # what the exact scan (Gemm with transB) reads fastest
    loaded = load_bundle(version_dir).collections["captions"]
    assert loaded.vectors.flags.c_contiguous
    assert not loaded.vectors.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        loaded.vectors[0, 0] = 0.0


def test_a_column_major_bundle_stored_earlier_loads_the_same(tmp_path: Path) -> None:
    collection = captions()
    version_dir = write_bundle(
        tmp_path, "demo", [collection], variant_name="fake", variant_fingerprint="ab" * 32
    )
    np.save(version_dir / "captions.vectors.npy", np.asfortranarray(collection.vectors))
    loaded = load_bundle(version_dir, verify=False).collections["captions"]
    assert loaded.vectors.flags.f_contiguous
    np.testing.assert_array_equal(loaded.vectors, collection.vectors)


def test_rows_without_metadata_share_one_read_only_mapping(tmp_path: Path) -> None:
    bare = CollectionInput(
        name="captions",
        ids=["a", "b", "c"],
        metadata=[{}, {}, {"x": 1}],
        vectors=unit_vectors(3, 8),
    )
    version_dir = write_bundle(
        tmp_path, "demo", [bare], variant_name="fake", variant_fingerprint="ab" * 32
    )
    metadata = load_bundle(version_dir).collections["captions"].metadata
    assert metadata[0] is metadata[1]
    assert dict(metadata[0]) == {}
    assert metadata[2] == {"x": 1}
    with pytest.raises(TypeError):
        metadata[0]["x"] = 2  # type: ignore[index]


@pytest.mark.parametrize("factory", ["Flat", "HNSW16", "IVF2,Flat"])
def test_index_factories_use_inner_product(tmp_path: Path, factory: str) -> None:
    version_dir = write_bundle(
        tmp_path,
        "demo",
        [captions(n=64, factory=factory)],
        variant_name="fake",
        variant_fingerprint="0" * 64,
    )
    loaded = load_bundle(version_dir).collections["captions"]
    assert loaded.factory == factory
    scores, rows = loaded.index.search(loaded.vectors[:1], 1)
    assert rows[0, 0] == 0
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-4)


def test_a_flipped_byte_is_refused(tmp_path: Path) -> None:
    version_dir = write(tmp_path, "v1")
    vectors_path = version_dir / "captions.vectors.npy"
    data = bytearray(vectors_path.read_bytes())
    data[-1] ^= 0xFF
    vectors_path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"captions\.vectors\.npy has sha256"):
        load_bundle(version_dir)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    version_dir = write(tmp_path, "v1")
    (version_dir / "captions.faiss").unlink()
    with pytest.raises(BundleError, match=r"captions\.faiss is missing"):
        verify_bundle(version_dir)


def test_a_manifest_that_names_another_version_is_refused(tmp_path: Path) -> None:
    version_dir = write(tmp_path, "v1")
    copy = tmp_path / "demo" / "v2"
    copy.mkdir()
    for path in version_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    with pytest.raises(BundleError, match="manifest names version 'v1'"):
        verify_bundle(copy)


def test_a_garbled_manifest_is_refused(tmp_path: Path) -> None:
    version_dir = write(tmp_path, "v1")
    manifest = json.loads((version_dir / "manifest.json").read_text())
    manifest["unexpected"] = True
    (version_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="not a valid manifest"):
        verify_bundle(version_dir)


def test_versions_are_immutable(tmp_path: Path) -> None:
    write(tmp_path, "v1")
    with pytest.raises(BundleError, match="already exists"):
        write(tmp_path, "v1")


def test_a_failed_build_leaves_the_served_version_and_no_debris(tmp_path: Path) -> None:
    write(tmp_path, "v1")
    broken = CollectionInput(
        name="captions",
        ids=["a", "b"],
        metadata=[{"text": "a"}, {"id": "clash"}],
        vectors=unit_vectors(2, 8),
    )
    with pytest.raises(BundleError, match="may not redefine 'id'"):
        write_bundle(
            tmp_path, "demo", [broken], variant_name="x", variant_fingerprint="0", version="v2"
        )
    assert resolve_current(tmp_path / "demo").name == "v1"
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [CURRENT_FILE, "v1"]


def test_current_moves_only_to_a_verified_version(tmp_path: Path) -> None:
    write(tmp_path, "v1")
    write(tmp_path, "v2", make_current=False)
    bundle_dir = tmp_path / "demo"
    assert resolve_current(bundle_dir).name == "v1"
    (bundle_dir / "v2" / "captions.ids.jsonl").write_text("tampered\n")
    with pytest.raises(BundleError):
        set_current(bundle_dir, "v2")
    assert resolve_current(bundle_dir).name == "v1"


def test_missing_or_invalid_pointer(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no CURRENT pointer"):
        resolve_current(tmp_path)
    (tmp_path / CURRENT_FILE).write_text("../../etc\n")
    with pytest.raises(BundleError, match="invalid version"):
        resolve_current(tmp_path)


@pytest.mark.parametrize(
    ("collection", "message"),
    [
        (
            CollectionInput("captions", ["a", "a"], [{}, {}], unit_vectors(2, 4)),
            "ids are not unique",
        ),
        (CollectionInput("captions", ["a"], [{}], unit_vectors(2, 4)), "2 vectors but 1 ids"),
        (CollectionInput("captions", ["a"], [{}], np.ones((1, 4), np.float32)), "not L2"),
        (
            CollectionInput("captions", ["a"], [{}], np.full((1, 4), np.nan, np.float32)),
            "NaN",
        ),
        (CollectionInput("Bad Name", ["a"], [{}], unit_vectors(1, 4)), "plain lowercase"),
        (CollectionInput("captions", [], [], np.zeros((0, 4), np.float32)), "non-empty"),
    ],
)
def test_bad_collections_are_refused_before_writing(
    tmp_path: Path, collection: CollectionInput, message: str
) -> None:
    with pytest.raises(BundleError, match=message):
        write_bundle(tmp_path, "demo", [collection], variant_name="x", variant_fingerprint="0")
    assert list((tmp_path / "demo").iterdir()) == []


def test_a_published_version_is_readable_by_other_users(tmp_path: Path) -> None:
    # The service may run as another user than the builder (the container image's, over a
    # shared volume): the version folder is not left private as its staging folder was made.
    version_dir = write(tmp_path, "v1")
    assert stat.S_IMODE(version_dir.stat().st_mode) == 0o755
    assert all(path.stat().st_mode & stat.S_IROTH for path in version_dir.iterdir())


# --- planned, tuned indexes (docs/indexes.md) -------------------------------------------------


def _hard_collection(index: IndexSpec | None, n: int = 4000) -> CollectionInput:
    return CollectionInput(
        name="items",
        ids=[f"item-{i}" for i in range(n)],
        metadata=[{} for _ in range(n)],
        vectors=hard_vectors(n, d=48, seed=0),
        index=index,
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
    spec = CollectionInput(**{**captions().__dict__, "index": IndexSpec(kind="flat")})
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

"""The bundle writer: a version written atomically, read back whole; refusals before anything is
written; CURRENT moved only to a verified version."""

from __future__ import annotations

import stat
from pathlib import Path

import numpy as np
import pytest

from storage.layout import CURRENT_FILE
from storage.manifest import BundleError, read_manifest
from storage.reader import load_bundle, resolve_current
from storage.writer import CollectionInput, set_current, write_bundle
from tests.unit.storage.bundles import captions, unit_vectors, write


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

"""The bundle reader: CURRENT followed, vectors mapped, older layouts read the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from storage.layout import CURRENT_FILE
from storage.manifest import BundleError
from storage.reader import load_bundle, resolve_current
from storage.writer import CollectionInput, write_bundle
from tests.unit.storage.bundles import captions, unit_vectors


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


def test_missing_or_invalid_pointer(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no CURRENT pointer"):
        resolve_current(tmp_path)
    (tmp_path / CURRENT_FILE).write_text("../../etc\n")
    with pytest.raises(BundleError, match="invalid version"):
        resolve_current(tmp_path)

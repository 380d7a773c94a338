"""The manifest check: every hashed file present and unchanged, the version it names its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.manifest import BundleError, verify_bundle
from storage.reader import load_bundle
from tests.unit.storage.bundles import write


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

"""Thumbnails made at index time: shrunk JPEGs, an empty row for a file that is not an image,
the offsets checked on load, and a bundle of images that keeps them (hashed like every file)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from storage.reader import load_bundle
from storage.thumbnails import (
    THUMBNAIL_SIZE,
    ThumbnailsError,
    load_thumbnails,
    make_thumbnail,
    write_thumbnails,
)
from storage.writer import CollectionInput, write_bundle


def image_file(path: Path, size: tuple[int, int], colour: tuple[int, int, int]) -> Path:
    Image.new("RGB", size, colour).save(path)
    return path


def test_a_thumbnail_is_a_jpeg_that_fits_the_size(tmp_path: Path) -> None:
    data = make_thumbnail(image_file(tmp_path / "a.png", (640, 320), (200, 10, 10)))
    with Image.open(io.BytesIO(data)) as thumbnail:
        assert thumbnail.format == "JPEG"
        assert thumbnail.size == (THUMBNAIL_SIZE, THUMBNAIL_SIZE // 2)
        red, green, _ = thumbnail.getpixel((10, 10))  # type: ignore[misc]
        assert red > 150 > green
    small = make_thumbnail(image_file(tmp_path / "b.png", (20, 10), (0, 0, 0)))
    with Image.open(io.BytesIO(small)) as thumbnail:
        assert thumbnail.size == (20, 10)  # never enlarged


def test_a_file_that_is_not_an_image_has_no_thumbnail(tmp_path: Path) -> None:
    (tmp_path / "x.jpg").write_bytes(b"not an image")
    assert make_thumbnail(tmp_path / "x.jpg") == b""
    assert make_thumbnail(tmp_path / "missing.jpg") == b""


def test_written_thumbnails_load_by_row(tmp_path: Path) -> None:
    (tmp_path / "bad.jpg").write_bytes(b"nope")
    paths = [
        image_file(tmp_path / "a.png", (64, 64), (255, 0, 0)),
        tmp_path / "bad.jpg",
        image_file(tmp_path / "c.png", (64, 64), (0, 0, 255)),
    ]
    blob, offsets = write_thumbnails(tmp_path, "images", paths)
    thumbnails = load_thumbnails(tmp_path, blob, offsets, count=3)
    assert thumbnails.of(1) is None
    first, third = thumbnails.of(0), thumbnails.of(2)
    assert first is not None
    assert third is not None
    assert first.startswith(b"\xff\xd8")
    assert first != third
    with pytest.raises(ThumbnailsError, match="does not describe 4"):
        load_thumbnails(tmp_path, blob, offsets, count=4)
    np.save(tmp_path / offsets, np.array([0, 5, 3, 9], dtype=np.int64))
    with pytest.raises(ThumbnailsError):
        load_thumbnails(tmp_path, blob, offsets, count=3)


def test_a_bundle_of_images_keeps_their_thumbnails(tmp_path: Path) -> None:
    paths = [image_file(tmp_path / f"{n}.png", (48, 48), (n * 80, 0, 0)) for n in range(3)]
    vectors = np.eye(3, 4, dtype=np.float32)
    collection = CollectionInput(
        name="images",
        ids=["a", "b", "c"],
        metadata=[{}, {}, {}],
        vectors=vectors,
        image_paths=paths,
    )
    version_dir = write_bundle(
        tmp_path / "bundles",
        "pics",
        [collection],
        variant_name="v",
        variant_fingerprint="f" * 64,
        version="v1",
    )
    bundle = load_bundle(version_dir)
    assert "images.thumbnails.bin" in bundle.manifest.files
    loaded = bundle.collections["images"].thumbnails
    assert loaded is not None
    assert all(loaded.of(row) for row in range(3))
    captions = CollectionInput(name="captions", ids=["t"], metadata=[{}], vectors=vectors[:1])
    text_only = write_bundle(
        tmp_path / "bundles",
        "texts",
        [captions],
        variant_name="v",
        variant_fingerprint="f" * 64,
        version="v1",
    )
    assert load_bundle(text_only).collections["captions"].thumbnails is None

"""Image files checked before embedding (stat + header), a build's image items checked in
chunks, and decode errors named after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from encoders.image_decode import ImageDecodeError, ImageLimits
from index_builder import image_checks
from index_builder.image_checks import check_image_file, checked_images, image_problem
from index_builder.items import BadItem, ImageItem, ItemOrigin, Problem
from tests.fakes.image_files import png_declaring, truncated_jpeg
from tests.fakes.user_corpora import image_bytes, truncated_png

LIMITS = ImageLimits(max_bytes=10_000, max_pixels=10_000)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "GIF"])
def test_good_images_pass(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "a.img"
    path.write_bytes(image_bytes("red", fmt))
    assert check_image_file(path, LIMITS) is None


def test_a_truncated_image_whose_header_is_whole_passes_the_check(tmp_path: Path) -> None:
    path = tmp_path / "cut.png"
    path.write_bytes(truncated_png((16, 16)))
    assert check_image_file(path, LIMITS) is None  # found only by decoding


def test_what_the_check_finds(tmp_path: Path) -> None:
    cases = {
        "missing.png": None,
        "empty.png": b"",
        "text.png": b"hello",
        "bmp.png": image_bytes("red", "BMP"),
        "bomb.png": png_declaring(1000, 1000),
        "big.png": b"\x89PNG" + b"\x00" * 20_000,
        "cut.jpg": truncated_jpeg(),
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
    (tmp_path / "folder.png").mkdir()
    found = {name: check_image_file(tmp_path / name, LIMITS) for name in [*cases, "folder.png"]}
    assert found["missing.png"] == (Problem.MISSING_IMAGE, "no such image file")
    assert found["empty.png"] == (Problem.UNREADABLE_IMAGE, "empty file")
    assert found["folder.png"] == (Problem.UNREADABLE_IMAGE, "not a regular file")
    assert found["text.png"] == (
        Problem.UNREADABLE_IMAGE,
        "not an image in an accepted format (JPEG, PNG, WEBP, GIF)",
    )
    assert found["bmp.png"] is not None
    assert found["bmp.png"][0] is Problem.UNREADABLE_IMAGE
    assert found["bomb.png"] == (
        Problem.OVERSIZED_IMAGE,
        "image is 1000x1000 = 1000000 pixels; the limit is 10000 (--max-image-pixels)",
    )
    assert found["big.png"] == (
        Problem.OVERSIZED_IMAGE,
        "image file is 20004 bytes; the limit is 10000 (--max-image-bytes)",
    )
    assert found["cut.jpg"] is not None
    assert found["cut.jpg"][0] is Problem.UNREADABLE_IMAGE


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "a.png"
    path.write_bytes(image_bytes("red", "PNG"))
    path.chmod(0)
    fault = check_image_file(path, LIMITS)
    assert fault is not None
    assert fault[0] is Problem.UNREADABLE_IMAGE


def test_decode_errors_are_named() -> None:
    assert image_problem(FileNotFoundError(2, "No such file")) == (
        Problem.MISSING_IMAGE,
        "no such image file",
    )
    assert image_problem(PermissionError(13, "Permission denied")) == (
        Problem.UNREADABLE_IMAGE,
        "cannot read the file: Permission denied",
    )
    assert image_problem(ImageDecodeError("too_many_pixels", "too big")) == (
        Problem.OVERSIZED_IMAGE,
        "too big",
    )
    assert image_problem(ImageDecodeError("too_many_bytes", "too long"))[0] is (
        Problem.OVERSIZED_IMAGE
    )
    assert image_problem(ImageDecodeError("invalid_image", "corrupt")) == (
        Problem.UNREADABLE_IMAGE,
        "corrupt",
    )


def test_checked_images_keep_the_usable_items_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(image_checks, "CHECK_CHUNK", 2)  # several chunks
    names = ["a.png", "gone.png", "b.png", "text.png", "c.png"]
    for name in ("a.png", "b.png", "c.png"):
        (tmp_path / name).write_bytes(image_bytes("red", "PNG"))
    (tmp_path / "text.png").write_bytes(b"hello")
    items = [
        ImageItem(name, tmp_path / name, ItemOrigin(str(tmp_path), path=name)) for name in names
    ]
    bad: list[BadItem] = []
    kept = checked_images(iter(items), LIMITS, bad, workers=2)
    assert [item.item_id for item in kept] == ["a.png", "b.png", "c.png"]
    assert [(item.item_id, item.problem) for item in bad] == [
        ("gone.png", Problem.MISSING_IMAGE),
        ("text.png", Problem.UNREADABLE_IMAGE),
    ]
    assert bad[0].describe() == f"{tmp_path}/gone.png: no such image file (id 'gone.png')"

"""A folder of images: walked recursively, chosen by extension, ids as POSIX relative paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from formats.errors import FormatError
from formats.image_folder import is_image_name, relative_image_path, walk_image_folder


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.jpg", True), ("a.JPEG", True), ("a.Png", True), ("a.webp", True), ("a.gif", True),
        ("a.bmp", False), ("a.tiff", False), ("jpg", False), ("a.jpg.txt", False),
    ],
)  # fmt: skip
def test_images_are_told_by_extension(name: str, expected: bool) -> None:
    assert is_image_name(name) is expected


def test_a_folder_is_walked_recursively_in_sorted_order(tmp_path: Path) -> None:
    root = tmp_path / "photos"
    for relative in ["shoes/red.jpg", "b.PNG", "a/z/deep.webp", "anim.gif", "notes.txt",
                     ".hidden.jpg", ".cache/x.png", "shoes/readme.md"]:  # fmt: skip
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    (root / "shoes" / "link.jpg").symlink_to(root / "missing.jpg")  # a broken link is kept
    folder = walk_image_folder(root)
    assert [image.relative for image in folder.images] == [
        "a/z/deep.webp", "anim.gif", "b.PNG", "shoes/link.jpg", "shoes/red.jpg",
    ]  # fmt: skip
    assert folder.images[0].path == root / "a" / "z" / "deep.webp"
    assert folder.other_files == 2
    assert folder.root == root


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="not a folder of images"):
        walk_image_folder(tmp_path / "nope")
    (tmp_path / "file.jpg").write_bytes(b"x")
    with pytest.raises(FormatError):
        walk_image_folder(tmp_path / "file.jpg")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_subfolder_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        with pytest.raises(FormatError, match="cannot list a folder"):
            walk_image_folder(tmp_path)
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a.jpg", "a.jpg"), ("./shoes//red.jpg", "shoes/red.jpg"),
        ("shoes/./red.jpg", "shoes/red.jpg"),
        ("/abs/a.jpg", None), ("../a.jpg", None), ("a/../b.jpg", None), ("", None),
        ("a\\b.jpg", None), (".", None),
    ],
)  # fmt: skip
def test_relative_image_paths(text: str, expected: str | None) -> None:
    assert relative_image_path(text) == expected

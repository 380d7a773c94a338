"""A folder of image files as a corpus: walked recursively, images chosen by file extension.

An image is a file whose extension is ``.jpg``, ``.jpeg``, ``.png``, ``.webp`` or ``.gif`` (any
case). Its id is its path relative to the folder in POSIX form (``shoes/red.jpg``); images come
in the sorted order of those ids. Hidden files and folders (names starting with ``.``, such as
``.git`` or macOS's ``._photo.jpg`` resource forks) are passed over; other files are counted,
not read. Symbolic links to files are followed, links to folders are not (no cycles). An entry
with an image name that is no readable file (a broken link) is still listed: whoever reads it
reports it rather than letting it vanish.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from formats.errors import FormatError

IMAGE_EXTENSIONS: Final = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif"})


def is_image_name(name: str) -> bool:
    """Whether a file name has an image extension (any case)."""
    return PurePosixPath(name).suffix.lower() in IMAGE_EXTENSIONS


@dataclass(frozen=True, slots=True)
class ImageFile:
    """One image of a folder: ``relative`` is its id (POSIX form), ``path`` where it is."""

    relative: str
    path: Path


@dataclass(frozen=True)
class ImageFolder:
    """The images found under ``root`` (sorted by relative path) and how many other files."""

    root: Path
    images: list[ImageFile]
    other_files: int


def relative_image_path(text: str) -> str | None:
    """``text`` as a folder-relative POSIX path (``./a//b.jpg`` → ``a/b.jpg``), or ``None`` when
    it is absolute, empty or climbs out of the folder (``..``)."""
    if not text or text.startswith("/") or "\\" in text:
        return None
    parts = PurePosixPath(text).parts
    if not parts or ".." in parts:
        return None
    return PurePosixPath(*parts).as_posix()


def walk_image_folder(root: Path) -> ImageFolder:
    """Every image under ``root``, recursively; :class:`FormatError` if it is no folder."""
    root = Path(root)
    if not root.is_dir():
        raise FormatError("not a folder of images", path=root)
    images: list[ImageFile] = []
    other_files = 0

    def refuse(error: OSError) -> None:
        raise FormatError(f"cannot list a folder: {error}", path=root) from error

    for folder, subfolders, files in os.walk(root, onerror=refuse):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        base = Path(folder)
        for name in files:
            if name.startswith("."):
                continue
            if not is_image_name(name):
                other_files += 1
                continue
            # Kept even when it is a broken link or not a regular file: the build reports it.
            path = base / name
            images.append(ImageFile(path.relative_to(root).as_posix(), path))
    images.sort(key=lambda image: image.relative)
    return ImageFolder(root=root, images=images, other_files=other_files)

"""Small JPEG thumbnails of a collection's images, made at index time and kept in the bundle, so
that a page can show what a search found without the original files.

A collection's thumbnails are two files: ``<name>.thumbnails.bin`` (the JPEG files one after
another) and ``<name>.thumbnails.npy`` (``int64`` offsets, one more than the rows: row ``i`` is
``bin[offsets[i]:offsets[i + 1]]``, empty when its image could not be made into one). Both are
memory-mapped when loaded.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError
from tqdm import tqdm

from storage.layout import thumbnail_files

THUMBNAIL_SIZE: Final = 160
"""The longer side of a thumbnail, in pixels (aspect ratio kept, never enlarged)."""
JPEG_QUALITY: Final = 80
# Larger images are not decoded for a thumbnail (the embedding's own limits are stricter).
MAX_SOURCE_PIXELS: Final = 80_000_000


def make_thumbnail(path: Path, size: int = THUMBNAIL_SIZE) -> bytes:
    """The JPEG bytes of ``path``'s image shrunk to fit ``size`` x ``size`` (EXIF-oriented, first
    frame, RGB); b"" when the file is not an image Pillow reads or is too large."""
    try:
        with Image.open(path) as image:
            if image.width * image.height > MAX_SOURCE_PIXELS:
                return b""
            image.draft("RGB", (size, size))  # JPEG: decode at a reduced scale, much faster
            oriented = ImageOps.exif_transpose(image).convert("RGB")
            oriented.thumbnail((size, size))
            buffer = io.BytesIO()
            oriented.save(buffer, format="JPEG", quality=JPEG_QUALITY, optimize=True)
            return buffer.getvalue()
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError):
        return b""


def write_thumbnails(
    folder: Path, collection: str, paths: Sequence[Path], *, progress: bool = False
) -> tuple[str, str]:
    """Write the thumbnails of ``paths`` (row order) for ``collection`` into ``folder``; returns
    the two file names."""
    blob_file, offsets_file = thumbnail_files(collection)
    offsets = np.zeros(len(paths) + 1, dtype=np.int64)
    with (folder / blob_file).open("wb") as blob:
        rows = tqdm(paths, desc="thumbnails", unit="image", disable=not progress)
        for row, path in enumerate(rows):
            data = make_thumbnail(path)
            blob.write(data)
            offsets[row + 1] = offsets[row] + len(data)
    np.save(folder / offsets_file, offsets)
    return blob_file, offsets_file


@dataclass(frozen=True)
class Thumbnails:
    """A loaded collection's thumbnails: :meth:`of` gives one row's JPEG bytes."""

    blob: np.ndarray
    offsets: np.ndarray

    def of(self, row: int) -> bytes | None:
        """Row ``row``'s JPEG bytes, or None when it has none."""
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        return bytes(self.blob[start:end]) if end > start else None


class ThumbnailsError(ValueError):
    """The thumbnail files do not match the collection."""


def load_thumbnails(folder: Path, blob_file: str, offsets_file: str, count: int) -> Thumbnails:
    """Memory-map a collection's thumbnails; raises :class:`ThumbnailsError` when the offsets
    do not describe ``count`` rows of the blob."""
    offsets = np.load(folder / offsets_file, mmap_mode="r", allow_pickle=False)
    size = (folder / blob_file).stat().st_size
    blob = (
        np.memmap(folder / blob_file, dtype=np.uint8, mode="r")
        if size
        else np.zeros(0, dtype=np.uint8)
    )
    if (
        offsets.dtype != np.int64
        or offsets.shape != (count + 1,)
        or int(offsets[0]) != 0
        or int(offsets[-1]) != size
        or bool(np.any(np.diff(offsets) < 0))
    ):
        raise ThumbnailsError(f"{offsets_file} does not describe {count} thumbnails in {blob_file}")
    return Thumbnails(blob=blob, offsets=np.asarray(offsets))

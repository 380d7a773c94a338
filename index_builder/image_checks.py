"""What is wrong with an image file, if anything: checked before embedding, named after.

:func:`check_image_file` runs before any embedding, cheaply: the file's size from ``stat`` and
its format and pixel count from the header alone (no pixel is decoded). What only a full decode
finds (a truncated or corrupt file) is named by :func:`image_problem` when the embedding meets
it. Both give a :class:`~index_builder.items.Problem` and a reason in words.
:func:`checked_images` runs the check over a build's image items, a few files at a time in
threads, for the single-machine and the distributed build alike.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from encoders.image_decode import ImageDecodeError, ImageLimits
from index_builder.items import BadItem, ImageItem, Problem

CHECK_CHUNK: Final = 256
"""Image items checked together (in threads) before the kept ones are passed on."""

ImageFault = tuple[Problem, str]
"""A problem and its reason."""


def check_image_file(path: Path, limits: ImageLimits) -> ImageFault | None:
    """``None`` when ``path`` looks usable under ``limits`` (decoding may still fail)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return Problem.MISSING_IMAGE, "no such image file"
    except OSError as exc:
        return Problem.UNREADABLE_IMAGE, f"cannot read the file: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return Problem.UNREADABLE_IMAGE, "not a regular file"
    if info.st_size > limits.max_bytes:
        return (
            Problem.OVERSIZED_IMAGE,
            f"image file is {info.st_size} bytes; the limit is {limits.max_bytes} "
            "(--max-image-bytes)",
        )
    if info.st_size == 0:
        return Problem.UNREADABLE_IMAGE, "empty file"
    return _check_header(path, limits)


def _check_header(path: Path, limits: ImageLimits) -> ImageFault | None:
    try:
        # Pillow's own bomb guard raises past 2 * Image.MAX_IMAGE_PIXELS (and warns past it,
        # an error where warnings are errors), as in encoders.image_decode; the warnings filter
        # is left alone (not thread-safe), so a plain warning is only reported.
        with Image.open(path, formats=limits.formats) as image:
            width, height = image.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        return Problem.OVERSIZED_IMAGE, f"image declares too many pixels: {exc}"
    except UnidentifiedImageError:
        allowed = ", ".join(limits.formats)
        return Problem.UNREADABLE_IMAGE, f"not an image in an accepted format ({allowed})"
    except MemoryError:
        raise
    except Exception as exc:
        return Problem.UNREADABLE_IMAGE, f"unreadable image: {type(exc).__name__}: {exc}"
    if width <= 0 or height <= 0:
        return Problem.UNREADABLE_IMAGE, f"image declares an empty size {width}x{height}"
    if width * height > limits.max_pixels:
        return (
            Problem.OVERSIZED_IMAGE,
            f"image is {width}x{height} = {width * height} pixels; the limit is "
            f"{limits.max_pixels} (--max-image-pixels)",
        )
    return None


def image_problem(error: ImageDecodeError | OSError) -> ImageFault:
    """The problem a decode (or read) error stands for."""
    if isinstance(error, FileNotFoundError):
        return Problem.MISSING_IMAGE, "no such image file"
    if isinstance(error, OSError):
        return Problem.UNREADABLE_IMAGE, f"cannot read the file: {error.strerror or error}"
    if error.reason in ("too_many_bytes", "too_many_pixels"):
        return Problem.OVERSIZED_IMAGE, error.message
    return Problem.UNREADABLE_IMAGE, error.message


def checked_images(
    items: Iterable[ImageItem],
    limits: ImageLimits,
    bad: list[BadItem],
    *,
    workers: int = 4,
    progress: bool = False,
    total: int | None = None,
) -> Iterator[ImageItem]:
    """The items whose files look usable under ``limits`` (:func:`check_image_file`), in order;
    every other becomes a bad item in ``bad``. Files are checked in ``workers`` threads, a chunk
    at a time, so a stream of items is never held whole."""
    with (
        ThreadPoolExecutor(max_workers=workers) as pool,
        tqdm(total=total, desc="checking images", unit="image", disable=not progress) as bar,
    ):

        def flush(chunk: list[ImageItem]) -> Iterator[ImageItem]:
            faults = pool.map(lambda item: check_image_file(item.file, limits), chunk)
            for item, fault in zip(chunk, faults, strict=True):
                bar.update(1)
                if fault is None:
                    yield item
                else:
                    bad.append(BadItem(item.origin, fault[0], fault[1], item.item_id))

        chunk: list[ImageItem] = []
        for item in items:
            chunk.append(item)
            if len(chunk) == CHECK_CHUNK:
                yield from flush(chunk)
                chunk = []
        yield from flush(chunk)

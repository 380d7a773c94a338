"""Small image thumbnails as base64 data URIs (Pillow), for the self-contained HTML report."""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from PIL import Image, UnidentifiedImageError

logger = logging.getLogger(__name__)

THUMBNAIL_PX: Final = 96
"""Longest side of a thumbnail, pixels."""
MAX_THUMBNAILS: Final = 1500
"""Most thumbnails in one report (a 96 px JPEG is about 2–5 KB of base64)."""
JPEG_QUALITY: Final = 75


def thumbnail_uri(path: Path, size: int = THUMBNAIL_PX) -> str | None:
    """The image at ``path`` shrunk to ``size`` px (longest side) as a ``data:image/jpeg``
    URI, or ``None`` when it cannot be read."""
    try:
        with Image.open(path) as image:
            image.thumbnail((size, size))
            rgb = image.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError) as error:
        logger.debug("no thumbnail of %s: %s", path, error)
        return None
    buffer = io.BytesIO()
    rgb.save(buffer, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def thumbnails(
    names: Iterable[str], images_dir: Path | None, limit: int = MAX_THUMBNAILS
) -> dict[str, str]:
    """Image file name → data URI for the first ``limit`` distinct ``names`` whose file is in
    ``images_dir`` (none without a folder). Names with a path part are ignored."""
    found: dict[str, str] = {}
    if images_dir is None or not images_dir.is_dir():
        return found
    for name in dict.fromkeys(names):
        if len(found) >= limit:
            break
        if Path(name).name != name or not (images_dir / name).is_file():
            continue
        uri = thumbnail_uri(images_dir / name)
        if uri is not None:
            found[name] = uri
    return found

"""How items are named in the data files (and so in the service's collections).

- A caption's id is its CxC caption key ``<corpus>:sentid:<sentid>``: ``COCO_val2014:sentid:N``
  for COCO, ``scenes_<split>:sentid:N`` for the scenes corpus.
- An image's id is its file name, ``<prefix><image_id:012d><suffix>``:
  ``COCO_val2014_000000123456.jpg`` for COCO, ``scenes_<split>_<image_id:012d>.png`` for the
  scenes corpus.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

COCO_VAL2014: Final = "COCO_val2014"
COCO_VAL2014_PATTERN: Final = ("COCO_val2014_", ".jpg")
IMAGE_ID_DIGITS: Final = 12


def caption_key(corpus: str, sentid: int) -> str:
    """The CxC caption key ``<corpus>:sentid:<sentid>`` (``COCO_val2014:sentid:770337``)."""
    return f"{corpus}:sentid:{sentid}"


def image_filename(pattern: tuple[str, str], image_id: int) -> str:
    """``prefix + <image_id zero-padded to 12 digits> + suffix`` for ``(prefix, suffix)``."""
    prefix, suffix = pattern
    return f"{prefix}{image_id:0{IMAGE_ID_DIGITS}d}{suffix}"


def coco_image_filename(image_id: int) -> str:
    """``COCO_val2014_<image_id:012d>.jpg``."""
    return image_filename(COCO_VAL2014_PATTERN, image_id)


def scenes_corpus(split: str) -> str:
    """The scenes corpus's name for ``split`` in caption keys: ``scenes_<split>``."""
    return f"scenes_{split}"


def scenes_caption_key(split: str, sentid: int) -> str:
    """``scenes_<split>:sentid:<sentid>``."""
    return caption_key(scenes_corpus(split), sentid)


def scenes_image_filename(split: str, image_id: int) -> str:
    """``scenes_<split>_<image_id:012d>.png``."""
    return image_filename((f"{scenes_corpus(split)}_", ".png"), image_id)


def scenes_caption_source(split: str) -> str:
    """The BISON ``caption_id_source`` of the scenes corpus's captions: ``scenes-<split>``."""
    return f"scenes-{split}"


def infer_filename_pattern(images: Iterable[tuple[str, int]]) -> tuple[str, str] | None:
    """The ``(prefix, suffix)`` around the 12-digit zero-padded id shared by every file name.

    ``images`` are ``(filename, image_id)`` pairs; ``("COCO_val2014_000000123456.jpg",
    123456)`` gives ``("COCO_val2014_", ".jpg")``. Returns ``None`` when there are no images or
    the names do not all follow one such pattern.
    """
    pattern: tuple[str, str] | None = None
    for filename, image_id in images:
        digits = f"{image_id:0{IMAGE_ID_DIGITS}d}"
        prefix, found, suffix = filename.rpartition(digits)
        if not found:
            return None
        if pattern is None:
            pattern = (prefix, suffix)
        elif pattern != (prefix, suffix):
            return None
    return pattern

"""Identifier conventions of the scenes corpus, chosen so they can never be mistaken for COCO's.

- ``image_id`` = split code × 10⁷ + image index + 1 (train 1…, val 2…, test 3…), unique across
  splits; the file is ``scenes_<split>_<image_id:012d>.png`` (:mod:`formats.ids`).
- ``sentid`` = image_id × 10 + caption index (0–4): unique across splits and ascending within
  an image; the CxC caption key is ``scenes_<split>:sentid:<sentid>`` (:mod:`formats.ids`).
"""

from __future__ import annotations

from types import MappingProxyType

SPLITS = ("train", "val", "test")
SPLIT_CODES = MappingProxyType({"train": 1, "val": 2, "test": 3})
IMAGES_PER_SPLIT_LIMIT = 10_000_000 - 1
SENTIDS_PER_IMAGE = 10


def image_id(split: str, index: int) -> int:
    """The image id of the ``index``-th (0-based) image of ``split``."""
    if not 0 <= index < IMAGES_PER_SPLIT_LIMIT:
        raise ValueError(f"image index {index} out of range")
    return SPLIT_CODES[split] * 10_000_000 + index + 1


def sentid(identifier: int, caption_index: int) -> int:
    """The sentence id of caption ``caption_index`` of image ``identifier``."""
    if not 0 <= caption_index < SENTIDS_PER_IMAGE:
        raise ValueError(f"caption index {caption_index} out of range")
    return identifier * SENTIDS_PER_IMAGE + caption_index

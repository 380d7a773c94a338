"""Item id conventions: caption keys and image file names of COCO and the scenes corpus."""

from __future__ import annotations

import pytest

from formats.ids import (
    COCO_VAL2014,
    COCO_VAL2014_PATTERN,
    caption_key,
    coco_image_filename,
    image_filename,
    infer_filename_pattern,
    scenes_caption_key,
    scenes_caption_source,
    scenes_image_filename,
)


def test_coco_ids() -> None:
    assert caption_key(COCO_VAL2014, 770337) == "COCO_val2014:sentid:770337"
    assert coco_image_filename(184613) == "COCO_val2014_000000184613.jpg"
    assert image_filename(("x_", ".png"), 7) == "x_000000000007.png"


def test_scenes_ids() -> None:
    assert scenes_caption_key("val", 200000010) == "scenes_val:sentid:200000010"
    assert scenes_image_filename("test", 30000003) == "scenes_test_000030000003.png"
    assert scenes_caption_source("train") == "scenes-train"


@pytest.mark.parametrize(
    ("images", "pattern"),
    [
        ([("COCO_val2014_000000123456.jpg", 123456)], COCO_VAL2014_PATTERN),
        (
            [("scenes_val_000020000001.png", 20000001), ("scenes_val_000020000002.png", 20000002)],
            ("scenes_val_", ".png"),
        ),
        ([], None),
        ([("a.jpg", 1)], None),
        ([("p_000000000001.jpg", 1), ("q_000000000002.jpg", 2)], None),
    ],
)
def test_infer_filename_pattern(
    images: list[tuple[str, int]], pattern: tuple[str, str] | None
) -> None:
    assert infer_filename_pattern(images) == pattern

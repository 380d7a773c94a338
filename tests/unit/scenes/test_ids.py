"""The scenes corpus's id numbering: unique across splits, ascending within an image."""

from __future__ import annotations

import pytest

from formats.ids import scenes_caption_key, scenes_image_filename
from scenes.ids import IMAGES_PER_SPLIT_LIMIT, SPLITS, image_id, sentid


def test_image_ids_are_unique_across_splits_and_name_their_files() -> None:
    ids = {image_id(split, index) for split in SPLITS for index in range(50)}
    assert len(ids) == 150
    assert image_id("val", 0) == 20_000_001
    assert scenes_image_filename("val", image_id("val", 0)) == "scenes_val_000020000001.png"


def test_sentids_ascend_within_an_image_and_key_their_captions() -> None:
    first = image_id("test", 2)
    assert [sentid(first, index) for index in range(5)] == list(range(first * 10, first * 10 + 5))
    assert scenes_caption_key("test", sentid(first, 4)) == "scenes_test:sentid:300000034"


@pytest.mark.parametrize(
    ("split", "index"), [("val", -1), ("val", IMAGES_PER_SPLIT_LIMIT), ("train", 10**8)]
)
def test_image_indices_out_of_range_are_refused(split: str, index: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        image_id(split, index)


def test_caption_indices_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="out of range"):
        sentid(20_000_001, 10)

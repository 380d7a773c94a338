"""BISON rows: image ids to file names, and which rows can be scored with which sides."""

from __future__ import annotations

from evaluation.data.bison_rows import ImageNamer, plan_bison
from formats.bison import BisonRow
from formats.karpathy import ImageEntry


def _image(
    image_id: int, row: int, prefix: str = "COCO_val2014_", suffix: str = ".jpg"
) -> ImageEntry:
    return ImageEntry(f"{prefix}{image_id:012d}{suffix}", image_id, row, ())


def test_the_pattern_is_read_from_the_split_s_file_names() -> None:
    coco = ImageNamer.from_images([_image(391895, 0), _image(522418, 1)], "scenes")
    assert coco.pattern == ("COCO_val2014_", ".jpg")
    mixed = [_image(391895, 0), _image(20000001, 1, "scenes_val_", ".png")]
    assert ImageNamer.from_images(mixed, "scenes").pattern is None


def test_image_namer() -> None:
    scenes = [_image(20000001, 0, "scenes_val_", ".png")]
    namer = ImageNamer.from_images(scenes, "scenes")
    assert namer(20000001) == "scenes_val_000020000001.png"
    assert namer(20000999) == "scenes_val_000020000999.png"  # same pattern outside the split
    odd = ImageNamer.from_images([ImageEntry("cat.jpg", 7, 0, ())], "scenes")
    assert odd(7) == "cat.jpg"
    assert odd(8) is None  # no pattern: unnamed
    coco = ImageNamer.from_images([ImageEntry("cat.jpg", 7, 0, ())], "coco-karpathy")
    assert coco(8) == "COCO_val2014_000000000008.jpg"  # COCO val2014 fallback


def test_plan_bison_resolves_or_skips_rows() -> None:
    rows = [
        BisonRow(0, "c0", 1, 2, 2, "val", None, ""),
        BisonRow(1, "c1", 3, 1, 3, "val", None, ""),  # 3 is not available
        BisonRow(2, "c2", 9, 1, 1, "val", None, ""),  # 9 has no name
        BisonRow(3, "c3", 2, 1, 2, "val", None, ""),
    ]
    names = {1: "one", 2: "two", 3: "three"}
    plan = plan_bison(rows, names.get, lambda name: None if name == "three" else f"<{name}>")
    assert plan.rows == [0, 3]
    assert plan.captions == ["c0", "c3"]
    assert plan.true_sides == ["<two>", "<two>"]
    assert plan.other_sides == ["<one>", "<one>"]
    assert plan.skipped == {"image_unavailable": 1, "unnamed_image": 1}
    assert plan.total == 4

"""BISON: reader, image naming, row resolution and accuracy (ties count one half)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bison import (
    BisonRow,
    ImageNamer,
    bison_accuracy,
    default_bison_path,
    infer_filename_pattern,
    plan_bison,
    read_bison,
)
from benchmarks.datasets import DatasetError, ImageEntry

HEADER = (
    "bison_id,caption,image_id_0,image_id_1,true_image_id,true_image_karpathy_split,"
    "caption_id,caption_id_source\n"
)


def _image(
    image_id: int, row: int, prefix: str = "COCO_val2014_", suffix: str = ".jpg"
) -> ImageEntry:
    return ImageEntry(f"{prefix}{image_id:012d}{suffix}", image_id, row, ())


def test_read_bison_real_format(tmp_path: Path) -> None:
    path = tmp_path / "bison_shared.csv"
    path.write_text(
        HEADER
        + "0,A large group of people lounge.,143961,274538,143961,val,710160,karpathy-val\n"
        + '2,"A desk, with\nshelves.",216437,252147,252147,other,,\n',
        encoding="utf-8",
    )
    rows = read_bison(path)
    assert rows[0] == BisonRow(
        0, "A large group of people lounge.", 143961, 274538, 143961, "val", 710160, "karpathy-val"
    )
    assert rows[0].other_image_id == 274538
    assert rows[1].caption == "A desk, with\nshelves."
    assert rows[1].caption_id is None
    assert rows[1].other_image_id == 216437


def test_read_bison_refuses_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text(HEADER + "0,cap,1,2,3,val,,\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="neither"):
        read_bison(path)
    path.write_text(HEADER + "0,cap,1,x,1,val,,\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="data row 0"):
        read_bison(path)
    path.write_text("bison_id,caption\n0,cap\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="missing column"):
        read_bison(path)


def test_default_bison_path_prefers_the_split_file(tmp_path: Path) -> None:
    folder = tmp_path / "bison"
    assert default_bison_path(tmp_path, "val") is None
    folder.mkdir()
    (folder / "bison_shared.csv").write_text(HEADER, encoding="utf-8")
    assert default_bison_path(tmp_path, "val") == folder / "bison_shared.csv"
    (folder / "bison_val.csv").write_text(HEADER, encoding="utf-8")
    assert default_bison_path(tmp_path, "val") == folder / "bison_val.csv"


def test_filename_pattern_is_read_from_the_captions_file() -> None:
    coco = [_image(391895, 0), _image(522418, 1)]
    assert infer_filename_pattern(coco) == ("COCO_val2014_", ".jpg")
    scenes = [
        _image(20000001, 0, "scenes_val_", ".png"),
        _image(20000002, 1, "scenes_val_", ".png"),
    ]
    assert infer_filename_pattern(scenes) == ("scenes_val_", ".png")
    assert infer_filename_pattern([*coco, *scenes]) is None
    assert infer_filename_pattern([ImageEntry("cat.jpg", 7, 0, ())]) is None
    assert infer_filename_pattern([]) is None


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


def test_accuracy_ties_count_one_half() -> None:
    result = bison_accuracy([1.0, 0.5, 0.3, 0.7, 0.9], [0.5, 0.5, 0.4, 0.7, 0.1], {"x": 2})
    # wins: rows 0 and 4; ties: rows 1 and 3; loss: row 2 → (2 + 1) / 5.
    assert result.accuracy == pytest.approx(3 / 5)
    assert result.rows == 5
    assert result.ties == 2
    assert result.skipped == 2
    assert result.as_report() == {
        "accuracy": result.accuracy,
        "rows": 5,
        "skipped": 2,
        "ties": 2,
        "skipped_reasons": {"x": 2},
    }
    assert bison_accuracy([0.2], [0.2]).accuracy == 0.5
    empty = bison_accuracy([], [], {"image_unavailable": 3})
    assert (empty.accuracy, empty.rows, empty.skipped) == (None, 0, 3)
    with pytest.raises(ValueError, match="1-D"):
        bison_accuracy([1.0, 2.0], [1.0])


def test_accuracy_matches_loop_oracle() -> None:
    rng = random.Random(4)
    for _ in range(100):
        size = rng.randint(1, 40)
        true = [rng.choice((0.0, 0.25, 0.5, 1.0)) for _ in range(size)]
        other = [rng.choice((0.0, 0.25, 0.5, 1.0)) for _ in range(size)]
        points = 0.0
        for left, right in zip(true, other, strict=True):
            if left > right:
                points += 1.0
            elif left == right:
                points += 0.5
        result = bison_accuracy(np.array(true), np.array(other))
        assert result.accuracy == pytest.approx(points / size, abs=1e-12)

"""The formats readers on the real validation-split files in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.bison import read_bison
from formats.cxc import RatingKind, read_ratings
from formats.karpathy import images_of_captions, read_captions
from formats.layout import captions_path, default_bison_path


def test_karpathy_val_captions(data_dir: Path) -> None:
    records = read_captions(captions_path(data_dir, "val"))
    assert len(records) == 25_000
    assert len({record.image_id for record in records}) == 5_000
    first = records[0]
    assert first.key == f"COCO_val2014:sentid:{first.sentid}"
    assert first.filename == f"COCO_val2014_{first.image_id:012d}.jpg"
    assert [record.caption_index for record in records[:5]] == [0, 1, 2, 3, 4]
    assert any("\n" in record.raw for record in records), "raw keeps original newlines"
    assert all("\n" not in record.text for record in records)
    images = images_of_captions(records)
    assert len(images) == 5_000
    assert all(len(image.captions) == 5 for image in images)


@pytest.mark.parametrize(
    ("kind", "rows"),
    [(RatingKind.STS, 44_009), (RatingKind.SIS, 42_767), (RatingKind.SITS, 44_722)],
)
def test_cxc_val_ratings(data_dir: Path, kind: RatingKind, rows: int) -> None:
    ratings = read_ratings(kind.path(data_dir, "val"), kind)
    assert len(ratings) == rows
    assert all(0.0 <= rating.agg_score <= 5.0 for rating in ratings)


def test_bison_shared_rows(data_dir: Path) -> None:
    path = default_bison_path(data_dir, "val")
    assert path is not None
    assert path.name == "bison_shared.csv"
    rows = read_bison(path)
    assert len(rows) == 41_674
    assert len({row.bison_id for row in rows}) == len(rows)

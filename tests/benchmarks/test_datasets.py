"""The dataset readers on small files written in the real formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.datasets import (
    DatasetError,
    RatingKind,
    captions_path,
    read_captions,
    read_ratings,
)
from tests.benchmarks.tiny_data import TinyDataset

HEADER = "sentid,cxc_caption_key,image_id,filename,karpathy_image_index,caption_index,text,raw\n"


def test_captions_round_trip_with_newline_in_raw(tiny: TinyDataset) -> None:
    captions = read_captions(captions_path(tiny.data_dir, tiny.split))
    assert captions == tiny.captions
    assert "\n" in captions[0].raw
    assert [caption.row for caption in captions] == list(range(len(captions)))


def test_captions_refuse_duplicates_and_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    row = "1,COCO_val2014:sentid:1,5,x.jpg,0,0,a dog,a dog\n"
    path.write_text(HEADER + row + row, encoding="utf-8")
    with pytest.raises(DatasetError, match="appears twice"):
        read_captions(path)
    path.write_text("sentid,text\n1,a dog\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="missing column"):
        read_captions(path)
    path.write_text(HEADER + "x,COCO_val2014:sentid:1,5,x.jpg,0,0,a,a\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="data row 0"):
        read_captions(path)


@pytest.mark.parametrize("kind", list(RatingKind))
def test_ratings_of_every_kind(tmp_path: Path, kind: RatingKind) -> None:
    first, second = kind.columns
    path = kind.path(tmp_path, "val")
    path.parent.mkdir(parents=True)
    path.write_text(
        f"{first},{second},agg_score,sampling_method\nx1,y1,3.5,m1\nx2,y2,0,m2\n", encoding="utf-8"
    )
    ratings = read_ratings(path)
    assert [(r.item1, r.item2, r.agg_score, r.sampling_method) for r in ratings] == [
        ("x1", "y1", 3.5, "m1"),
        ("x2", "y2", 0.0, "m2"),
    ]
    assert read_ratings(path, kind) == ratings
    other = next(candidate for candidate in RatingKind if candidate is not kind)
    with pytest.raises(DatasetError, match="does not name"):
        read_ratings(path, other)


def test_ratings_refuse_unknown_header_and_bad_score(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("a,b,agg_score,sampling_method\nx,y,1,m\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="does not name"):
        read_ratings(path)
    path.write_text("caption1,caption2,agg_score,sampling_method\nx,y,high,m\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="data row 0"):
        read_ratings(path)


def test_kind_metadata() -> None:
    assert RatingKind.STS.collections == ("captions", "captions")
    assert RatingKind.SITS.collections == ("captions", "images")
    assert RatingKind.SIS.positive_threshold == 2.5
    assert RatingKind.STS.positive_threshold == 3.0
    assert RatingKind.SIS.path(Path("d"), "test") == Path("d/cxc/sis_test.csv")

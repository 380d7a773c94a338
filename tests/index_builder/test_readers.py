"""Readers of the real validation-split files in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from index_builder.cxc import read_ratings
from index_builder.karpathy import DatasetFormatError, read_captions


def test_karpathy_val_captions(data_dir: Path) -> None:
    records = read_captions(data_dir / "coco-karpathy-captions" / "captions_val.csv")
    assert len(records) == 25_000
    assert len({record.image_id for record in records}) == 5_000
    first = records[0]
    assert first.key == f"COCO_val2014:sentid:{first.sentid}"
    assert first.filename == f"COCO_val2014_{first.image_id:012d}.jpg"
    assert [record.caption_index for record in records[:5]] == [0, 1, 2, 3, 4]
    assert any("\n" in record.raw for record in records), "raw keeps original newlines"
    assert all("\n" not in record.text for record in records)


@pytest.mark.parametrize(
    ("filename", "rows"),
    [("sts_val.csv", 44_009), ("sis_val.csv", 42_767), ("sits_val.csv", 44_722)],
)
def test_cxc_val_ratings(data_dir: Path, filename: str, rows: int) -> None:
    ratings = read_ratings(data_dir / "cxc" / filename)
    assert len(ratings) == rows
    assert all(0.0 <= rating.score <= 5.0 for rating in ratings)


def test_a_captions_file_without_its_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    path.write_text("sentid,text\n1,hello\n")
    with pytest.raises(DatasetFormatError, match="missing columns"):
        read_captions(path)

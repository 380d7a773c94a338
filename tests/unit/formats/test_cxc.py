"""The CxC ratings reader and writer: every kind recognised by its header, bad rows refused with
file and line, scores written as CxC prints them."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.cxc import Rating, RatingKind, rating_kind_of_header, read_ratings, write_ratings
from formats.errors import FormatError


@pytest.mark.parametrize("kind", list(RatingKind))
def test_ratings_of_every_kind(tmp_path: Path, kind: RatingKind) -> None:
    first, second = kind.columns
    path = kind.path(tmp_path, "val")
    path.parent.mkdir(parents=True)
    path.write_text(
        f"{first},{second},agg_score,sampling_method\nx1,y1,3.5,m1\nx2,y2,0,m2\n", encoding="utf-8"
    )
    ratings = read_ratings(path)
    assert ratings == [Rating("x1", "y1", 3.5, "m1"), Rating("x2", "y2", 0.0, "m2")]
    assert read_ratings(path, kind) == ratings
    other = next(candidate for candidate in RatingKind if candidate is not kind)
    with pytest.raises(FormatError, match="does not name the item columns") as error:
        read_ratings(path, other)
    assert (error.value.path, error.value.line) == (path, 1)


@pytest.mark.parametrize(
    "header",
    [
        "a,b,agg_score,sampling_method",
        "caption1,caption2,score,sampling_method",
        "caption1,caption2,agg_score",
        "caption1,caption2,agg_score,sampling_method,extra",
    ],
)
def test_unknown_headers_are_refused(tmp_path: Path, header: str) -> None:
    path = tmp_path / "r.csv"
    path.write_text(header + "\n", encoding="utf-8")
    with pytest.raises(FormatError) as error:
        read_ratings(path)
    assert error.value.line == 1


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("x,y,high,m", "agg_score 'high' is not a number"),
        ("x,y,5.01,m", "agg_score 5.01 outside 0–5"),
        ("x,y,-1,m", "agg_score -1.0 outside 0–5"),
        ("x,y,nan,m", "agg_score nan outside 0–5"),
        ("x,y,3", "expected 4 fields, got 3"),
        ("x,y,3,m,extra", "expected 4 fields, got 5"),
    ],
)
def test_bad_rows_are_refused_with_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "sts_val.csv"
    path.write_text(f"caption1,caption2,agg_score,sampling_method\nx,y,1,m\n{row}\n")
    with pytest.raises(FormatError, match=message) as error:
        read_ratings(path)
    assert (error.value.path, error.value.line) == (path, 3)


def test_written_ratings_read_back_and_print_like_cxc(tmp_path: Path) -> None:
    path = tmp_path / "cxc" / "sis_val.csv"
    ratings = [Rating("a.png", "b.png", 1.84, "i2i_csim"), Rating("b.png", "c.png", 3.0, "x")]
    write_ratings(path, RatingKind.SIS, ratings)
    assert path.read_bytes() == (
        b"image1,image2,agg_score,sampling_method\na.png,b.png,1.84,i2i_csim\nb.png,c.png,3.0,x\n"
    )
    assert read_ratings(path, RatingKind.SIS) == ratings


def test_kind_metadata() -> None:
    assert RatingKind.STS.header == ("caption1", "caption2", "agg_score", "sampling_method")
    assert RatingKind.STS.collections == ("captions", "captions")
    assert RatingKind.SITS.collections == ("captions", "images")
    assert RatingKind.SIS.positive_threshold == 2.5
    assert RatingKind.STS.positive_threshold == 3.0
    assert RatingKind.SIS.path(Path("d"), "test") == Path("d/cxc/sis_test.csv")
    assert rating_kind_of_header(["caption", "image", "agg_score"]) is RatingKind.SITS
    assert rating_kind_of_header(["image"]) is None

"""The BISON reader and writer: round trip, an empty caption id, bad rows with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.bison import BISON_COLUMNS, BisonRow, read_bison, write_bison
from formats.errors import FormatError

HEADER = ",".join(BISON_COLUMNS)
ROWS = [
    BisonRow(1, "a dog, on a sofa", 10, 20, 20, "val", 770337, "karpathy-val"),
    BisonRow(2, 'a "quoted"\ncaption', 30, 40, 30, "other", None, ""),
]


def test_written_rows_read_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "bison" / "bison_val.csv"
    write_bison(path, ROWS)
    data = path.read_bytes()
    assert data.startswith(HEADER.encode() + b"\r\n")
    assert b",other,," in data  # an unknown caption id is written empty
    assert read_bison(path) == ROWS
    assert [row.other_image_id for row in ROWS] == [10, 40]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("x,c,1,2,1,val,5,s", "column bison_id: 'x' is not an integer"),
        ("3,c,one,2,2,val,5,s", "column image_id_0: 'one' is not an integer"),
        ("3,c,1,2,2,val,five,s", "column caption_id: 'five' is not an integer"),
        ("3,c,1,2,7,val,5,s", "true_image_id 7 is neither 1 nor 2"),
        ("3,c,1,2,2,val,5", "expected 8 fields, got 7"),
    ],
)
def test_bad_rows_are_refused_with_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "bison.csv"
    path.write_text(f'{HEADER}\n1,"two\nlines",1,2,1,val,,\n{row}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=message) as error:
        read_bison(path)
    assert (error.value.path, error.value.line) == (path, 4)


def test_a_missing_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bison.csv"
    path.write_text("bison_id,caption\n0,cap\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"missing column\(s\)") as error:
        read_bison(path)
    assert error.value.line == 1

"""CSV records with the line each starts on; malformed files refused with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.csv_records import open_csv
from formats.errors import FormatError


def _write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_records_know_their_first_line_across_quoted_newlines(tmp_path: Path) -> None:
    path = _write(tmp_path, 'a,b\r\n1,"two\r\nlines"\r\n3,x\r\n\r\n4,y\r\n')
    with open_csv(path) as table:
        assert table.header == ("a", "b")
        records = list(table.records())
    assert [(r.line, r.number, r.fields) for r in records] == [
        (2, 0, ["1", "two\r\nlines"]),
        (4, 1, ["3", "x"]),
        (6, 2, ["4", "y"]),  # the blank line 5 is no record
    ]


def test_a_record_with_the_wrong_field_count_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, 'a,b\n1,2\n"x\ny",2,3\n')
    with open_csv(path) as table, pytest.raises(FormatError) as error:
        list(table.records())
    assert error.value.line == 3
    assert error.value.path == path
    assert "expected 2 fields, got 3" in str(error.value)


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    with pytest.raises(FormatError, match="empty file"), open_csv(path):
        pass


def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,2\n3,\xff\n")
    with pytest.raises(FormatError, match="codec can't decode") as error, open_csv(path) as table:
        list(table.records())
    assert error.value.path == path


def test_a_quoted_field_cut_off_by_the_end_of_the_file_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, 'a,b\n1,2\n3,"cut off\n')
    with open_csv(path) as table, pytest.raises(FormatError, match="unexpected end") as error:
        list(table.records())
    assert error.value.line == 3


def test_a_stray_quote_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, 'a,b\n1,"x"y\n')
    with open_csv(path) as table, pytest.raises(FormatError) as error:
        list(table.records())
    assert error.value.line == 2


def test_required_columns_and_integers(tmp_path: Path) -> None:
    path = _write(tmp_path, "b,a\n1,x\n")
    with open_csv(path) as table:
        assert table.require_columns(("a", "b")) == {"a": 1, "b": 0}
        with pytest.raises(FormatError, match=r"missing column\(s\) \['c'\]") as error:
            table.require_columns(("a", "c"))
        assert error.value.line == 1
        record = next(table.records())
        assert table.integer(record, "b", record.fields[0]) == 1
        with pytest.raises(FormatError, match="column a: 'x' is not an integer") as bad:
            table.integer(record, "a", record.fields[1])
        assert bad.value.line == 2

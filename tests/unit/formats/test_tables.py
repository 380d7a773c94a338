"""JSONL / CSV / Parquet tables read row by row, each row knowing its file and line (or row)."""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from formats.errors import FormatError
from formats.tables import PARQUET_BATCH_ROWS, TableFormat, open_table, table_format
from tests.fakes.user_corpora import write_parquet


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.jsonl", TableFormat.JSONL),
        ("a.NDJSON", TableFormat.JSONL),
        ("a.csv", TableFormat.CSV),
        ("a.Parquet", TableFormat.PARQUET),
    ],
)
def test_the_format_is_told_by_the_extension(name: str, kind: TableFormat) -> None:
    assert table_format(Path(name)) is kind


def test_an_unknown_extension_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="unknown table format"), open_table(tmp_path / "a.xlsx"):
        pass


def test_a_missing_file_raises_oserror(tmp_path: Path) -> None:
    for name in ("a.jsonl", "a.csv", "a.parquet"):
        with pytest.raises(FileNotFoundError), open_table(tmp_path / name):
            pass


def test_jsonl_rows_keep_their_types_lines_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"id": 1, "tags": ["a"], "ok": true}\n'
        b"\n"
        b'{"id": "2", "price": 2.5}\n'
        b"{broken\n"
        b"[1, 2]\n"
        b'{"text": "caf\xe9"}\n'
        b'{"last": null}'
    )
    with open_table(path) as table:
        assert table.format is TableFormat.JSONL
        assert table.columns is None
        assert table.row_count is None
        rows = list(table.rows())
    assert [(row.number, row.line, row.location) for row in rows] == [
        (1, 1, f"{path}:1"),
        (2, 3, f"{path}:3"),
        (3, 4, f"{path}:4"),
        (4, 5, f"{path}:5"),
        (5, 6, f"{path}:6"),
        (6, 7, f"{path}:7"),
    ]
    assert rows[0].values == {"id": 1, "tags": ["a"], "ok": True}
    assert not rows[0].text_values
    assert rows[1].values == {"id": "2", "price": 2.5}
    assert rows[2].error is not None
    assert rows[2].error.startswith("malformed JSON")
    assert rows[2].values == {}
    assert rows[3].error == "a JSONL line must hold a JSON object"
    assert rows[4].error is not None
    assert rows[4].error.startswith("not UTF-8")
    assert rows[5].values == {"last": None}


def test_csv_rows_are_cell_text_with_the_line_they_start_on(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('id,text,n\r\na,"two\r\nlines",1\r\nb,,\r\n', encoding="utf-8")
    with open_table(path) as table:
        assert table.columns == ("id", "text", "n")
        rows = list(table.rows())
    assert [(row.number, row.line) for row in rows] == [(1, 2), (2, 4)]
    assert rows[0].values == {"id": "a", "text": "two\r\nlines", "n": "1"}
    assert rows[1].values == {"id": "b", "text": "", "n": ""}
    assert all(row.text_values for row in rows)
    assert rows[1].location == f"{path}:4"


def test_a_csv_with_a_repeated_column_or_a_broken_record_is_refused(tmp_path: Path) -> None:
    repeated = tmp_path / "r.csv"
    repeated.write_text("id,a,a\n1,2,3\n", encoding="utf-8")
    with (
        pytest.raises(FormatError, match=r"repeated column name\(s\) \['a'\]"),
        open_table(repeated),
    ):
        pass
    broken = tmp_path / "b.csv"
    broken.write_text("id,text\n1,a\n2,b,c\n", encoding="utf-8")
    with open_table(broken) as table, pytest.raises(FormatError) as error:
        list(table.rows())
    assert error.value.line == 3


def test_parquet_rows_keep_column_types_and_count_rows(tmp_path: Path) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]

    moment = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    path = write_parquet(
        tmp_path / "t.parquet",
        {
            "id": ["a", "b"],
            "n": [1, None],
            "x": [1.5, 2.0],
            "ok": [True, False],
            "at": [moment, moment],
            "day": [date(2024, 5, 1), date(2024, 5, 2)],
            "tags": [["a", "b"], []],
            "price": [Decimal("9.99"), Decimal("1.00")],
        },
        pa.schema([
            ("id", pa.string()), ("n", pa.int64()), ("x", pa.float64()), ("ok", pa.bool_()),
            ("at", pa.timestamp("us", tz="UTC")), ("day", pa.date32()),
            ("tags", pa.list_(pa.string())), ("price", pa.decimal128(5, 2)),
        ]),
    )  # fmt: skip
    with open_table(path) as table:
        assert table.format is TableFormat.PARQUET
        assert table.columns == ("id", "n", "x", "ok", "at", "day", "tags", "price")
        assert table.row_count == 2
        rows = list(table.rows())
    assert rows[0].values == {
        "id": "a", "n": 1, "x": 1.5, "ok": True, "at": moment, "day": date(2024, 5, 1),
        "tags": ["a", "b"], "price": 9.99,
    }  # fmt: skip
    assert rows[1].values["n"] is None
    assert [row.location for row in rows] == [f"{path}:row 1", f"{path}:row 2"]
    assert not rows[0].text_values


def test_parquet_is_read_in_batches_with_running_row_numbers(tmp_path: Path) -> None:
    count = PARQUET_BATCH_ROWS + 5
    path = write_parquet(tmp_path / "t.parquet", {"id": [str(i) for i in range(count)]})
    with open_table(path) as table:
        rows = table.rows()
        first = next(rows)
        numbers = [first.number] + [row.number for row in rows]
    assert numbers == list(range(1, count + 1))


def test_a_file_that_is_not_parquet_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    path.write_text("id,text\n", encoding="utf-8")
    with pytest.raises(FormatError, match="not a Parquet file"), open_table(path):
        pass


def test_parquet_without_pyarrow_is_refused_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The container images leave pyarrow out (the `parquet` extra): a Parquet table there is a
    # clear refusal, not an ImportError traceback.
    path = tmp_path / "t.parquet"
    write_parquet(path, {"id": ["a"], "text": ["one"]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(FormatError, match=r"crisscross\[parquet\]"), open_table(path):
        pass

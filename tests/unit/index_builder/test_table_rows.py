"""The rows of a user table: their origins, a limit, required columns, and the per-record
checks of ids, texts and image paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.tables import TableRow, open_table
from index_builder.field_schema import CorpusError
from index_builder.items import Problem
from index_builder.table_rows import (
    item_id_of,
    limited_rows,
    path_of,
    require_columns,
    row_origin,
    text_of,
)
from tests.fakes.user_corpora import write_csv, write_jsonl, write_parquet


def test_a_row_is_at_its_line_or_its_row_number(tmp_path: Path) -> None:
    assert row_origin(TableRow(tmp_path / "t.csv", 3, 7)).location == f"{tmp_path}/t.csv:7"
    parquet = row_origin(TableRow(tmp_path / "t.parquet", 3, None))
    assert (parquet.row, parquet.location) == (3, f"{tmp_path}/t.parquet:row 3")


def test_limited_rows_stop_at_the_limit(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": str(i)} for i in range(5)])
    with open_table(table) as opened:
        assert [row.values["id"] for row in limited_rows(opened, 2, False)] == ["0", "1"]
    with open_table(table) as opened:
        assert len(list(limited_rows(opened, None, False))) == 5


def test_required_columns_of_a_table_with_a_header(tmp_path: Path) -> None:
    csv_table = write_csv(tmp_path / "t.csv", ["id", "body"], [["a", "x"]])
    with open_table(csv_table) as opened, pytest.raises(CorpusError, match=r"\['text'\]"):
        require_columns(opened, ["id", "text"])
    parquet = write_parquet(tmp_path / "t.parquet", {"id": ["a"]})
    with open_table(parquet) as opened, pytest.raises(CorpusError, match="missing column"):
        require_columns(opened, ["text"])
    jsonl = write_jsonl(tmp_path / "t.jsonl", [{"id": "a"}])
    with open_table(jsonl) as opened:
        require_columns(opened, ["text"])  # no header: checked row by row


def test_ids() -> None:
    assert item_id_of("a", "id", False) == ("a", None)
    assert item_id_of(7, "id", False) == ("7", None)
    assert item_id_of(None, "id", False)[1] == (
        Problem.MISSING_ID,
        "no id (column 'id' is missing or empty)",
    )
    assert item_id_of("  ", "id", True)[1] is not None
    assert item_id_of(7, "id", True)[1] is not None  # CSV cells are text, never integers
    assert item_id_of(True, "sku", False)[1] == (
        Problem.WRONG_TYPE,
        "id column 'sku' holds a bool, not a string or an integer",
    )


def test_texts_and_paths() -> None:
    assert text_of("a dog", "text") == ("a dog", None)
    assert text_of(None, "text")[1] == (
        Problem.MISSING_TEXT,
        "no text (column 'text' is missing or null)",
    )
    assert text_of(" ", "body")[1] == (Problem.EMPTY_TEXT, "empty text (column 'body' is blank)")
    assert text_of(3, "text")[1] == (
        Problem.WRONG_TYPE,
        "text column 'text' holds an int, not a string",
    )
    assert path_of("a.png", "path") == ("a.png", None)
    assert path_of("", "file")[1] == (
        Problem.MISSING_PATH,
        "no image path (column 'file' is missing or empty)",
    )
    assert path_of(["a"], "path")[1] == (
        Problem.WRONG_TYPE,
        "path column 'path' holds a list, not a string",
    )

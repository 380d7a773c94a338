"""User tables of items — JSONL, CSV or Parquet — read row by row, each row knowing where it is.

The format is chosen by the file's extension: ``.jsonl`` / ``.ndjson``, ``.csv``, ``.parquet``.
Rows are streamed (a JSONL or CSV file one record at a time, a Parquet file one record batch at a
time), never loaded whole.

- **JSONL**: one JSON object per line; blank lines are no rows. A line that is not valid UTF-8,
  not JSON, or not an object is a row with an ``error`` (the read goes on). Values keep their
  JSON types.
- **CSV**: read by :mod:`formats.csv_records` (a header, then records; quoted fields may span
  lines). Values are the cells' text (``TableRow.text_values``), an empty cell included. A
  record with the wrong number of fields ends the read with a :class:`FormatError`: the
  quoting is broken there, and the records after it cannot be trusted.
- **Parquet**: values keep the column types (``datetime``/``date`` for timestamps and dates,
  ``float`` for decimals).

A row's ``location`` is ``file:line`` (JSONL, CSV: the physical line the record starts on) or
``file:row N`` (Parquet, N counted from 1). A file that cannot be opened or is not of its format
at all raises :class:`FormatError` (or ``OSError`` from ``open``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from formats.csv_records import CsvTable, open_csv
from formats.errors import FormatError

PARQUET_BATCH_ROWS: Final = 4096


class TableFormat(StrEnum):
    """The table formats read here."""

    JSONL = "jsonl"
    CSV = "csv"
    PARQUET = "parquet"


_EXTENSIONS: Final = {
    ".jsonl": TableFormat.JSONL,
    ".ndjson": TableFormat.JSONL,
    ".csv": TableFormat.CSV,
    ".parquet": TableFormat.PARQUET,
}


def table_format(path: Path) -> TableFormat:
    """The format of ``path`` by its extension (any case); :class:`FormatError` if none."""
    found = _EXTENSIONS.get(Path(path).suffix.lower())
    if found is None:
        known = ", ".join(sorted(_EXTENSIONS))
        raise FormatError(f"unknown table format (the file name must end in {known})", path=path)
    return found


@dataclass(frozen=True, slots=True)
class TableRow:
    """One record of a table.

    Attributes:
        path: the table file.
        number: the row's 1-based position among the file's records (blank lines excluded).
        line: the 1-based physical line the record starts on (JSONL, CSV), else ``None``.
        values: column name → value (empty when ``error`` is set).
        text_values: whether the values are cell text to be typed (CSV), not typed values.
        error: why the record could not be read (a malformed JSONL line), else ``None``.
    """

    path: Path
    number: int
    line: int | None
    values: dict[str, object] = field(default_factory=dict)
    text_values: bool = False
    error: str | None = None

    @property
    def location(self) -> str:
        """``file:line`` or ``file:row N``."""
        if self.line is not None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:row {self.number}"


class Table:
    """An open table (see :func:`open_table`): its format, known columns and rows."""

    def __init__(
        self,
        path: Path,
        table_format: TableFormat,
        rows: Iterator[TableRow],
        *,
        columns: tuple[str, ...] | None,
        row_count: int | None,
    ) -> None:
        self.path = path
        self.format = table_format
        self.columns = columns
        """The header (CSV) or schema (Parquet) column names; ``None`` for JSONL."""
        self.row_count = row_count
        """The number of rows when the file says so up front (Parquet), else ``None``."""
        self._rows = rows

    def rows(self) -> Iterator[TableRow]:
        """The records in file order (once: the file is read as they are taken)."""
        return self._rows


@contextmanager
def open_table(path: Path) -> Iterator[Table]:
    """Open a JSONL, CSV or Parquet table; the file is closed when the block ends.

    Raises :class:`FormatError` for an unknown extension, an empty CSV, a CSV header with a
    repeated name, or a file that is not Parquet; ``OSError`` when the file cannot be opened.
    """
    path = Path(path)
    kind = table_format(path)
    if kind is TableFormat.JSONL:
        with path.open("rb") as handle:
            yield Table(path, kind, _jsonl_rows(path, handle), columns=None, row_count=None)
    elif kind is TableFormat.CSV:
        with open_csv(path) as csv_table:
            header = csv_table.header
            repeated = sorted({name for name in header if header.count(name) > 1})
            if repeated:
                raise FormatError(f"repeated column name(s) {repeated} in the header", path=path)
            yield Table(path, kind, _csv_rows(csv_table), columns=header, row_count=None)
    else:
        parquet = _open_parquet(path)
        try:
            columns = tuple(parquet.schema_arrow.names)
            yield Table(
                path,
                kind,
                _parquet_rows(path, parquet),
                columns=columns,
                row_count=int(parquet.metadata.num_rows),
            )
        finally:
            parquet.close()


def _jsonl_rows(path: Path, handle: Any) -> Iterator[TableRow]:
    number = 0
    for line_number, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        number += 1
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            yield TableRow(path, number, line_number, error=f"not UTF-8: {exc.reason}")
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            yield TableRow(
                path,
                number,
                line_number,
                error=f"malformed JSON at column {exc.colno}: {exc.msg}",
            )
            continue
        if not isinstance(value, dict):
            yield TableRow(path, number, line_number, error="a JSONL line must hold a JSON object")
            continue
        yield TableRow(path, number, line_number, values=value)


def _csv_rows(table: CsvTable) -> Iterator[TableRow]:
    header = table.header
    for record in table.records():
        yield TableRow(
            table.path,
            record.number + 1,
            record.line,
            values=dict(zip(header, record.fields, strict=True)),
            text_values=True,
        )


def _open_parquet(path: Path) -> Any:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ModuleNotFoundError:
        raise FormatError(
            "reading Parquet needs pyarrow, which is not installed: install the project's "
            "`parquet` extra (pip install 'crisscross[parquet]'), or give a CSV or JSONL table",
            path=path,
        ) from None

    with path.open("rb"):  # OSError as open raises it, before pyarrow wraps it
        pass
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise FormatError(f"not a Parquet file: {exc}", path=path) from exc


def _parquet_rows(path: Path, parquet: Any) -> Iterator[TableRow]:
    import pyarrow as pa

    number = 0
    try:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for values in batch.to_pylist():
                number += 1
                yield TableRow(path, number, None, values=_plain_values(values))
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise FormatError(f"cannot read row {number + 1}: {exc}", path=path) from exc


def _plain_values(values: dict[str, object]) -> dict[str, object]:
    """Decimals become floats; every other value is kept as pyarrow gives it."""
    return {
        name: float(value) if isinstance(value, Decimal) else value
        for name, value in values.items()
    }

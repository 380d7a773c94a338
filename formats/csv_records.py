"""CSV records with the line each starts on, for readers that report file, line and reason.

Every format file is read with the :mod:`csv` module, never line by line: a quoted field (the
Karpathy captions' ``raw``) may hold newlines, so a record can span several physical lines.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from formats.errors import FormatError


@dataclass(frozen=True, slots=True)
class CsvRecord:
    """One data record of a CSV file.

    Attributes:
        line: the 1-based physical line the record starts on.
        number: the 0-based position among the data records (the header excluded).
        fields: the record's values, as many as the header has names (checked).
    """

    line: int
    number: int
    fields: list[str]


@contextmanager
def open_csv(path: Path) -> Iterator[CsvTable]:
    """Open a UTF-8 CSV file and read its header; the file is closed when the block ends.

    Raises:
        FormatError: the file is empty or its header is malformed.
        OSError: the file cannot be opened (as ``open`` raises it).
    """
    with Path(path).open(newline="", encoding="utf-8") as handle:
        yield CsvTable(Path(path), handle)


class CsvTable:
    """A CSV file being read (see :func:`open_csv`): its header, then its records.

    Raises :class:`FormatError` for an empty file, a malformed record (``csv.Error`` in strict
    mode: stray quotes, a quoted field the file ends in), bytes that are not UTF-8, or a record
    whose field count differs from the header's.
    """

    def __init__(self, path: Path, handle: TextIO) -> None:
        self.path = path
        # strict: a stray quote or a quoted field cut off by the end of the file is an error,
        # not a value the reader guesses at.
        self._reader = csv.reader(handle, strict=True)
        header = self._next()
        if header is None:
            raise FormatError("empty file: no header", path=self.path, line=1)
        self.header: tuple[str, ...] = tuple(header)

    def require_columns(self, required: tuple[str, ...]) -> dict[str, int]:
        """The position of each required column; :class:`FormatError` naming those missing."""
        missing = [name for name in required if name not in self.header]
        if missing:
            raise FormatError(
                f"missing column(s) {missing}; header is {list(self.header)}",
                path=self.path,
                line=1,
            )
        return {name: self.header.index(name) for name in required}

    def error(self, record: CsvRecord, reason: str) -> FormatError:
        """A :class:`FormatError` about ``record`` (for the caller to raise)."""
        return FormatError(reason, path=self.path, line=record.line)

    def integer(self, record: CsvRecord, column: str, value: str) -> int:
        """``value`` (of ``column`` in ``record``) as an int; :class:`FormatError` otherwise."""
        try:
            return int(value)
        except ValueError:
            raise self.error(record, f"column {column}: {value!r} is not an integer") from None

    def records(self) -> Iterator[CsvRecord]:
        """The data records in file order, each checked to have the header's field count.

        Blank lines are no records and are passed over (as ``csv.DictReader`` does).
        """
        number = 0
        while True:
            line = self._reader.line_num + 1
            fields = self._next()
            if fields is None:
                return
            if not fields:
                continue
            if len(fields) != len(self.header):
                raise FormatError(
                    f"expected {len(self.header)} fields, got {len(fields)}",
                    path=self.path,
                    line=line,
                )
            yield CsvRecord(line=line, number=number, fields=fields)
            number += 1

    def _next(self) -> list[str] | None:
        """The next record, or ``None`` at the end."""
        line = self._reader.line_num + 1
        try:
            return next(self._reader, None)
        except (csv.Error, UnicodeDecodeError) as error:
            raise FormatError(str(error), path=self.path, line=line) from error

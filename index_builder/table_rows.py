"""The rows of a user table as the readers meet them: where each row is, the rows up to a limit,
the columns a reader needs, and the per-record checks of an id, a text and an image path.

Each check returns the value, or ``None`` and why the record is bad (a
:class:`~index_builder.items.Problem` and a reason in words); a missing column is a
:class:`~index_builder.field_schema.CorpusError` (no single record is at fault).
"""

from __future__ import annotations

from collections.abc import Iterator

from tqdm import tqdm

from formats.field_types import with_article
from formats.tables import Table, TableRow
from index_builder.field_schema import CorpusError
from index_builder.items import ItemOrigin, Problem

BadReason = tuple[Problem, str] | None
"""Why a record is bad, or None."""


def row_origin(row: TableRow) -> ItemOrigin:
    """Where ``row`` is: its line (JSONL, CSV) or its row number (Parquet)."""
    if row.line is not None:
        return ItemOrigin(source=str(row.path), line=row.line)
    return ItemOrigin(source=str(row.path), row=row.number)


def limited_rows(table: Table, limit: int | None, progress: bool) -> Iterator[TableRow]:
    """The table's rows, the first ``limit`` of them when given, with a progress bar."""
    rows = tqdm(
        table.rows(),
        total=table.row_count if limit is None else limit,
        desc=f"reading {table.path.name}",
        unit="row",
        disable=not progress,
    )
    for count, row in enumerate(rows):
        if limit is not None and count >= limit:
            rows.close()
            return
        yield row


def require_columns(table: Table, required: list[str]) -> None:
    """:class:`CorpusError` naming the ``required`` columns a table with a header lacks (a
    JSONL table has none: its rows are checked one by one)."""
    if table.columns is None:
        return
    missing = [name for name in required if name not in table.columns]
    if missing:
        raise CorpusError(
            f"{table.path}: missing column(s) {missing}; the columns are {list(table.columns)}"
        )


def item_id_of(value: object, column: str, text_values: bool) -> tuple[str | None, BadReason]:
    """The id in ``value`` (a string, or an integer of a typed table), else why not."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, (Problem.MISSING_ID, f"no id (column {column!r} is missing or empty)")
    if isinstance(value, str):
        return value, None
    if isinstance(value, int) and not isinstance(value, bool) and not text_values:
        return str(value), None
    return None, (
        Problem.WRONG_TYPE,
        f"id column {column!r} holds {with_article(type(value).__name__)}, not a string or an "
        "integer",
    )


def text_of(value: object, column: str) -> tuple[str | None, BadReason]:
    """The text in ``value`` (a string that is not blank), else why not."""
    if value is None:
        return None, (Problem.MISSING_TEXT, f"no text (column {column!r} is missing or null)")
    if not isinstance(value, str):
        return None, (
            Problem.WRONG_TYPE,
            f"text column {column!r} holds {with_article(type(value).__name__)}, not a string",
        )
    if not value.strip():
        return None, (Problem.EMPTY_TEXT, f"empty text (column {column!r} is blank)")
    return value, None


def path_of(value: object, column: str) -> tuple[str | None, BadReason]:
    """The image path in ``value`` as written (a string that is not blank), else why not."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, (
            Problem.MISSING_PATH,
            f"no image path (column {column!r} is missing or empty)",
        )
    if not isinstance(value, str):
        return None, (
            Problem.WRONG_TYPE,
            f"path column {column!r} holds {with_article(type(value).__name__)}, not a string",
        )
    return value, None

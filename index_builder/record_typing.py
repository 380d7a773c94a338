"""Typing the metadata of the records a reader kept: the field names they bring, checked once;
the collection's schema, with the items' own field first; each record's typed values, and the
records a value of the wrong type or a taken id makes bad.

A reader first checks each record on its own (:mod:`index_builder.table_rows`) and keeps the
survivors as :class:`PendingRecord`; only once every record is read can the fields be typed
(:func:`type_records`), since a field's inferred type depends on all its values. A kind that
declares no types (Karpathy captions) is stored with the types its values have
(:func:`stored_fields`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from formats.field_types import FieldType, FieldValue
from formats.tables import Table
from index_builder.field_schema import (
    CorpusError,
    FieldSchema,
    RawRecord,
    check_field_names,
    infer_schema,
)
from index_builder.items import BadItem, ItemOrigin, Problem
from storage.columns import infer_fields


@dataclass
class PendingRecord:
    """A record that passed the per-record checks, waiting for its metadata to be typed."""

    origin: ItemOrigin
    item_id: str
    payload: str  # the text, or the image path as written
    metadata: dict[str, object]
    text_values: bool
    file: Path | None = None


class FieldNames:
    """Metadata field names met while reading, checked once at the end (JSONL rows may each
    bring new keys); the first record naming each is kept for the error message."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.first_seen: dict[str, str] = {}

    def add(self, names: Mapping[str, object], origin: ItemOrigin) -> None:
        """Note the names of one record's metadata."""
        for name in names:
            self.first_seen.setdefault(name, origin.location)

    def add_header(self, table: Table, exclude: tuple[str | None, ...]) -> None:
        """Note the metadata columns a CSV header or Parquet schema names, before any row."""
        if table.columns is None:
            return
        where = ItemOrigin(str(table.path), line=1 if table.format.value == "csv" else None)
        self.add({name: None for name in table.columns if name not in exclude}, where)

    def check(self, reserved: str, payload_column: str, declared: Mapping[str, FieldType]) -> None:
        """:class:`CorpusError` for a name that cannot be a field, a column that would clash
        with the items' own ``reserved`` field, or a declared field no record has."""
        if reserved in self.first_seen and payload_column != reserved:
            raise CorpusError(
                f"{self.first_seen[reserved]}: a column {reserved!r} would clash with the items' "
                f"own {reserved!r} field (taken from column {payload_column!r}); rename one"
            )
        check_field_names(self.first_seen, str(self.source))
        for name in declared:
            if name not in self.first_seen and name != reserved:
                raise CorpusError(f"{self.source}: --field {name}: no record has that field")
        if reserved in declared and declared[reserved] is not FieldType.STRING:
            raise CorpusError(f"--field {reserved}: the items' {reserved} is always a string")


def type_records(
    pending: list[PendingRecord],
    bad: list[BadItem],
    declared: Mapping[str, FieldType],
    reserved: str,
) -> tuple[FieldSchema, list[tuple[PendingRecord, dict[str, FieldValue]]]]:
    """Type every pending record's metadata and drop duplicate ids (the first record wins);
    the records left out go to ``bad``."""
    schema = item_schema(
        (RawRecord(record.metadata, record.text_values) for record in pending), declared, reserved
    )
    first_of: dict[str, ItemOrigin] = {}
    kept: list[tuple[PendingRecord, dict[str, FieldValue]]] = []
    for record in pending:
        typed = type_record(record, schema, first_of)
        if isinstance(typed, BadItem):
            bad.append(typed)
        else:
            kept.append((record, typed))
    return schema, kept


def item_schema(
    records: Iterable[RawRecord], declared: Mapping[str, FieldType], reserved: str
) -> FieldSchema:
    """The schema of the records' metadata, with the items' own ``reserved`` field first."""
    schema = infer_schema(
        records, {name: kind for name, kind in declared.items() if name != reserved}
    )
    return FieldSchema(
        types={reserved: FieldType.STRING, **schema.types},
        declared=schema.declared | ({reserved} if reserved in declared else set()),
    )


def type_record(
    record: PendingRecord, schema: FieldSchema, first_of: dict[str, ItemOrigin]
) -> dict[str, FieldValue] | BadItem:
    """A record's typed metadata, or why it is bad: a value of the wrong type, or an id that an
    earlier good record holds (``first_of``, updated here: the first good record wins)."""
    typed, wrong = schema.type_values(record.metadata, text_values=record.text_values)
    if wrong:
        return BadItem(record.origin, Problem.WRONG_TYPE, "; ".join(wrong), record.item_id)
    first = first_of.get(record.item_id)
    if first is not None:
        return BadItem(
            record.origin,
            Problem.DUPLICATE_ID,
            f"duplicate id (first at {first.location})",
            record.item_id,
        )
    first_of[record.item_id] = record.origin
    return typed


def stored_fields(
    schema: FieldSchema | None, metadata: Sequence[Mapping[str, object]]
) -> dict[str, FieldType]:
    """The field types a collection is stored with: its ``schema``'s or, for a kind without
    one, those of the stored ``metadata`` as the bundle writer infers them
    (``storage.columns.infer_fields``: fields sorted by name; values that still disagree make
    the writer refuse the collection)."""
    return dict(schema.types) if schema is not None else infer_fields(metadata)

"""Typing the kept records: field names checked once, the items' own field first in the schema,
wrong-typed values and taken ids made bad, and the stored types of a kind without a schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.field_types import FieldType
from formats.tables import open_table
from index_builder.field_schema import CorpusError, FieldSchema, RawRecord
from index_builder.items import BadItem, ItemOrigin, Problem
from index_builder.record_typing import (
    FieldNames,
    PendingRecord,
    item_schema,
    stored_fields,
    type_record,
    type_records,
)
from tests.fakes.user_corpora import write_csv


def _pending(item_id: str, line: int, **metadata: object) -> PendingRecord:
    return PendingRecord(ItemOrigin("t.jsonl", line=line), item_id, "a text", metadata, False)


def test_field_names_are_checked_once_with_where_they_were_first_seen(tmp_path: Path) -> None:
    names = FieldNames(tmp_path / "t.jsonl")
    names.add({"price": 1}, ItemOrigin("t.jsonl", line=1))
    names.add({"price": 2, "Bad": 1}, ItemOrigin("t.jsonl", line=2))
    with pytest.raises(CorpusError, match="'Bad' is not a field name"):
        names.check("text", "text", {})
    clash = FieldNames(tmp_path / "t.jsonl")
    clash.add({"text": "x"}, ItemOrigin("t.jsonl", line=4))
    with pytest.raises(CorpusError, match=r"t\.jsonl:4: a column 'text' would clash"):
        clash.check("text", "body", {})
    with pytest.raises(CorpusError, match="--field size: no record has that field"):
        FieldNames(tmp_path / "t.jsonl").check("text", "text", {"size": FieldType.INTEGER})


def test_a_header_names_its_metadata_columns(tmp_path: Path) -> None:
    table = write_csv(tmp_path / "t.csv", ["id", "text", "price"], [["a", "x", "1"]])
    names = FieldNames(table)
    with open_table(table) as opened:
        names.add_header(opened, ("id", "text"))
    assert names.first_seen == {"price": f"{table}:1"}


def test_the_items_own_field_comes_first() -> None:
    records = [RawRecord({"n": 1, "label": "x"}, False), RawRecord({"n": 2.5}, False)]
    schema = item_schema(records, {"label": FieldType.STRING}, "text")
    assert list(schema.types.items()) == [
        ("text", FieldType.STRING),
        ("label", FieldType.STRING),
        ("n", FieldType.FLOAT),
    ]
    assert schema.declared == {"label"}


def test_typing_makes_wrong_values_and_taken_ids_bad() -> None:
    pending = [
        _pending("a", 1, price=3),
        _pending("b", 2, price="n/a"),
        _pending("a", 3, price=4),
        _pending("c", 4),
    ]
    bad: list[BadItem] = []
    schema, kept = type_records(pending, bad, {}, "text")
    assert schema.types == {"text": FieldType.STRING, "price": FieldType.INTEGER}
    assert [(record.item_id, typed) for record, typed in kept] == [("a", {"price": 3}), ("c", {})]
    assert [(item.origin.line, item.problem) for item in bad] == [
        (2, Problem.WRONG_TYPE),
        (3, Problem.DUPLICATE_ID),
    ]
    assert bad[1].reason == "duplicate id (first at t.jsonl:1)"


def test_a_wrong_typed_record_does_not_take_its_id() -> None:
    schema = FieldSchema({"n": FieldType.INTEGER}, frozenset())
    first_of: dict[str, ItemOrigin] = {}
    assert isinstance(type_record(_pending("a", 1, n="x"), schema, first_of), BadItem)
    assert type_record(_pending("a", 2, n=1), schema, first_of) == {"n": 1}


def test_stored_fields_without_a_schema_are_the_writers_inference() -> None:
    metadata = [{"text": "a", "sentid": 1, "tags": ["x"]}, {"text": "b", "sentid": 2}]
    assert list(stored_fields(None, metadata).items()) == [
        ("sentid", FieldType.INTEGER),
        ("tags", FieldType.STRING_LIST),
        ("text", FieldType.STRING),
    ]  # sorted by name, as storage.columns.infer_fields gives them
    schema = FieldSchema({"text": FieldType.STRING}, frozenset())
    assert stored_fields(schema, metadata) == {"text": FieldType.STRING}

"""A collection's metadata fields: declared types win, the others are inferred; values typed."""

from __future__ import annotations

import pytest

from formats.field_types import FieldType
from index_builder.field_schema import CorpusError, RawRecord, check_field_names, infer_schema


def test_declared_types_win_and_come_first() -> None:
    records = [
        RawRecord({"price": "3", "colour": "red"}, text_values=True),
        RawRecord({"price": "4.5", "colour": ""}, text_values=True),
    ]
    schema = infer_schema(records, {"colour": FieldType.STRING, "price": FieldType.INTEGER})
    assert schema.types == {"colour": FieldType.STRING, "price": FieldType.INTEGER}
    assert schema.declared == {"colour", "price"}
    assert infer_schema(records).types == {"price": FieldType.FLOAT, "colour": FieldType.STRING}


def test_a_field_with_no_value_has_no_type() -> None:
    schema = infer_schema([RawRecord({"a": None, "b": ""}, text_values=False)])
    assert schema.types == {"b": FieldType.STRING}  # a typed empty string is a value
    assert infer_schema([RawRecord({"b": ""}, text_values=True)]).types == {}


def test_typing_values_reports_each_misfit() -> None:
    schema = infer_schema(
        [RawRecord({"n": 1, "tags": ["a"]}, text_values=False)], {"day": FieldType.TIMESTAMP}
    )
    typed, wrong = schema.type_values(
        {"n": 2, "tags": None, "day": "2024-05-01"}, text_values=False
    )
    assert typed == {"n": 2, "day": "2024-05-01T00:00:00Z"}
    assert wrong == []
    typed, wrong = schema.type_values({"n": "two", "day": "soon"}, text_values=False)
    assert typed == {}
    assert wrong == [
        "field n (integer, inferred): 'two' is not an integer",
        "field day (timestamp, declared): 'soon' is not an ISO-8601 timestamp",
    ]


def test_a_value_of_no_supported_type() -> None:
    schema = infer_schema([RawRecord({"blob": {"a": 1}}, text_values=False)])
    assert schema.types == {}
    _, wrong = schema.type_values({"blob": {"a": 1}}, text_values=False)
    assert wrong == ["field blob: a dict is not a supported field value"]


def test_field_names_are_checked_together() -> None:
    check_field_names(["price", "in_stock"], "t.csv")
    with pytest.raises(CorpusError) as error:
        check_field_names(["price", "Colour", "id"], "t.csv")
    message = str(error.value)
    assert message.startswith("t.csv: ")
    assert "'Colour' is not a field name" in message
    assert "'id' is reserved" in message

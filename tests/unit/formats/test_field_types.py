"""Metadata field types: the vocabulary, timestamps, inference from values and coercion."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from formats.field_types import (
    FieldType,
    FieldTypeTally,
    FieldValueError,
    canonical_timestamp,
    coerce_value,
    field_name_problem,
    infer_field_type,
    infer_text_field_type,
    is_field_name,
    parse_field_declaration,
    parse_text,
    timestamp_micros,
)


def test_the_type_names_are_the_manifest_vocabulary() -> None:
    assert [member.value for member in FieldType] == [
        "string", "integer", "float", "boolean", "timestamp", "list[string]",
    ]  # fmt: skip
    assert FieldType("list[string]") is FieldType.STRING_LIST


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00Z"),
        ("2024-05-01", "2024-05-01T00:00:00Z"),
        ("2024-05-01 12:00", "2024-05-01T12:00:00Z"),
        ("2024-05-01T12:00:00.25", "2024-05-01T12:00:00.250000Z"),
        ("2024-05-01T12:00:00.1234567Z", "2024-05-01T12:00:00.123456Z"),
        ("2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00Z"),
        ("2024-05-01T17:30:00+0530", "2024-05-01T12:00:00Z"),
        ("0999-01-02T03:04:05Z", "0999-01-02T03:04:05Z"),
    ],
)
def test_canonical_timestamps(text: str, canonical: str) -> None:
    assert canonical_timestamp(text) == canonical
    assert canonical_timestamp(canonical) == canonical


def test_datetimes_and_dates_become_canonical_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert canonical_timestamp(datetime(2024, 5, 1, 14, 0, tzinfo=plus_two)) == (
        "2024-05-01T12:00:00Z"
    )
    assert canonical_timestamp(datetime(2024, 5, 1, 12, 0, 0, 250000)) == (
        "2024-05-01T12:00:00.250000Z"
    )
    assert canonical_timestamp(date(2024, 5, 1)) == "2024-05-01T00:00:00Z"


@pytest.mark.parametrize("text", ["yesterday", "2024-13-01", "2024-02-30", "20240501", "1714"])
def test_what_is_not_a_timestamp(text: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        canonical_timestamp(text)
    with pytest.raises(ValueError, match="timestamp"):
        timestamp_micros(text)


def test_timestamp_micros_counts_from_the_epoch_in_utc() -> None:
    assert timestamp_micros("1970-01-01T00:00:00Z") == 0
    assert timestamp_micros("1970-01-01T00:00:00.000001Z") == 1
    assert timestamp_micros("1969-12-31T23:59:59Z") == -1_000_000
    moment = datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert timestamp_micros("2024-05-01T12:00:00.250000Z") == int(moment.timestamp()) * 10**6 + (
        250000
    )
    assert timestamp_micros("2024-05-01T14:00:00.25+02:00") == timestamp_micros(
        "2024-05-01T12:00:00.250000Z"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, FieldType.BOOLEAN),
        (0, FieldType.INTEGER),
        (1.5, FieldType.FLOAT),
        ("red", FieldType.STRING),
        ("", FieldType.STRING),
        ("2024-05-01T12:00:00Z", FieldType.TIMESTAMP),
        (datetime(2024, 5, 1, tzinfo=UTC), FieldType.TIMESTAMP),
        (date(2024, 5, 1), FieldType.TIMESTAMP),
        (["a", "b"], FieldType.STRING_LIST),
        ([], FieldType.STRING_LIST),
    ],
)
def test_infer_the_type_of_one_value(value: object, expected: FieldType | None) -> None:
    assert infer_field_type(value) is expected


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2], float("nan"), float("inf"), b"x"])
def test_values_of_no_field_type(value: object) -> None:
    with pytest.raises(FieldValueError):
        infer_field_type(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("true", FieldType.BOOLEAN),
        ("FALSE", FieldType.BOOLEAN),
        ("42", FieldType.INTEGER),
        ("-3", FieldType.INTEGER),
        ("0", FieldType.INTEGER),
        ("2.5", FieldType.FLOAT),
        ("1e5", FieldType.FLOAT),
        ("0.5", FieldType.FLOAT),
        ("02134", FieldType.STRING),  # a code keeps its leading zero
        ("nan", FieldType.STRING),
        ("inf", FieldType.STRING),
        ("2024-05-01", FieldType.TIMESTAMP),
        ('["a", "b"]', FieldType.STRING_LIST),
        ("[1, 2]", FieldType.STRING),
        ("a red shoe", FieldType.STRING),
    ],
)
def test_infer_the_type_of_one_text_cell(text: str, expected: FieldType | None) -> None:
    assert infer_text_field_type(text) is expected


def _tally(values: list[object]) -> FieldType | None:
    tally = FieldTypeTally()
    for value in values:
        tally.add(value)
    return tally.inferred()


def _text_tally(values: list[str]) -> FieldType | None:
    tally = FieldTypeTally()
    for value in values:
        tally.add_text(value)
    return tally.inferred()


def test_a_field_type_holds_all_its_values() -> None:
    assert _tally([1, None, 2]) is FieldType.INTEGER
    assert _tally([1, 2.5]) is FieldType.FLOAT
    assert _tally(["2024-05-01", "red"]) is FieldType.STRING
    assert _tally([None, None]) is None
    assert _text_tally(["1", "2.5", ""]) is FieldType.FLOAT
    assert _text_tally(["1", "true"]) is FieldType.STRING
    assert _text_tally(["2024-05-01", "2024-05-02T10:00:00Z"]) is FieldType.TIMESTAMP
    assert _text_tally(["12", "02134"]) is FieldType.STRING


def test_disagreeing_typed_values_take_the_most_common_type() -> None:
    assert _tally([1, 2, "n/a", 3]) is FieldType.INTEGER
    assert _tally(["a", "b", True]) is FieldType.STRING
    assert _tally([True, "a"]) is FieldType.STRING  # a tie: the first in FieldType order
    assert _tally([{"x": 1}, 5]) is FieldType.INTEGER  # unsupported values are not counted
    assert _tally([3, 2.5, "n/a"]) is FieldType.FLOAT  # integers count as floats here
    assert _tally(["2024-05-01", "x", 1, 2]) is FieldType.STRING


def test_coerce_typed_values() -> None:
    assert coerce_value("red", FieldType.STRING) == "red"
    assert coerce_value(3, FieldType.INTEGER) == 3
    assert coerce_value(3, FieldType.FLOAT) == 3.0
    assert isinstance(coerce_value(3, FieldType.FLOAT), float)
    assert coerce_value(False, FieldType.BOOLEAN) is False
    assert coerce_value("2024-05-01", FieldType.TIMESTAMP) == "2024-05-01T00:00:00Z"
    assert coerce_value(date(2024, 5, 1), FieldType.TIMESTAMP) == "2024-05-01T00:00:00Z"
    assert coerce_value(("a", "b"), FieldType.STRING_LIST) == ["a", "b"]


@pytest.mark.parametrize(
    ("value", "field_type", "message"),
    [
        ("42", FieldType.INTEGER, "'42' is not an integer"),
        (True, FieldType.INTEGER, "True is not an integer"),
        (True, FieldType.FLOAT, "True is not a float"),
        (1, FieldType.BOOLEAN, "1 is not a boolean"),
        (7, FieldType.STRING, "7 is not a string"),
        ("soon", FieldType.TIMESTAMP, "timestamp"),
        (["a", 1], FieldType.STRING_LIST, "is not a list of strings"),
        ("a", FieldType.STRING_LIST, "is not a list of strings"),
        (2**63, FieldType.INTEGER, "64-bit"),
        (float("nan"), FieldType.FLOAT, "finite"),
    ],
)
def test_coerce_refuses_values_of_the_wrong_type(
    value: object, field_type: FieldType, message: str
) -> None:
    with pytest.raises(FieldValueError, match=message.replace("[", r"\[")):
        coerce_value(value, field_type)


def test_parse_text_cells() -> None:
    assert parse_text("True", FieldType.BOOLEAN) is True
    assert parse_text("007", FieldType.INTEGER) == 7  # declared: a leading zero is fine
    assert parse_text("2.50", FieldType.FLOAT) == 2.5
    assert parse_text("2024-05-01T12:00:00+02:00", FieldType.TIMESTAMP) == "2024-05-01T10:00:00Z"
    assert parse_text('["a","b"]', FieldType.STRING_LIST) == ["a", "b"]
    assert parse_text("anything", FieldType.STRING) == "anything"
    for text, field_type in [
        ("yes", FieldType.BOOLEAN),
        ("1.5", FieldType.INTEGER),
        ("1e999", FieldType.FLOAT),
        ("abc", FieldType.FLOAT),
        ('{"a": 1}', FieldType.STRING_LIST),
        ("[1]", FieldType.STRING_LIST),
        ("[broken", FieldType.STRING_LIST),
    ]:
        with pytest.raises(FieldValueError):
            parse_text(text, field_type)


def test_field_names_and_declarations() -> None:
    assert is_field_name("price")
    assert is_field_name("_private2")
    assert not is_field_name("id")
    assert not is_field_name("Price")
    assert not is_field_name("2nd")
    assert not is_field_name("a" * 65)
    assert field_name_problem("color") is None
    assert "reserved" in str(field_name_problem("id"))
    assert "lowercase" in str(field_name_problem("Product Name"))
    assert parse_field_declaration("price:float") == ("price", FieldType.FLOAT)
    assert parse_field_declaration("tags:list[string]") == ("tags", FieldType.STRING_LIST)
    for bad in ["price", "price:", ":float", "price:money", "Price:float", "id:string"]:
        with pytest.raises(ValueError):  # noqa: PT011 - each has its own message
            parse_field_declaration(bad)

"""Typed metadata columns: inference, masks, the npz file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType, timestamp_micros
from storage.columns import ColumnError, build_columns, infer_fields, load_columns, save_columns

ROWS: list[dict[str, object]] = [
    {"price": 10, "tags": ["red", "shoe"], "brand": "acme", "at": "2024-01-01T00:00:00Z"},
    {"price": 12.5, "tags": [], "brand": "zeta", "sale": True},
    {"tags": ["blue"], "brand": "acme", "at": "2024-06-01T12:00:00Z", "sale": False},
    {},
]


def test_inference_widens_numbers_and_keeps_every_field() -> None:
    assert infer_fields(ROWS) == {
        "at": FieldType.TIMESTAMP,
        "brand": FieldType.STRING,
        "price": FieldType.FLOAT,
        "sale": FieldType.BOOLEAN,
        "tags": FieldType.STRING_LIST,
    }


def test_masks_see_missing_values_as_no_match() -> None:
    columns = build_columns(ROWS, infer_fields(ROWS))
    assert columns["brand"].member_mask(["acme"]).tolist() == [True, False, True, False]
    assert columns["brand"].member_mask(["nobody"]).tolist() == [False] * 4
    assert columns["tags"].member_mask(["shoe", "blue"]).tolist() == [True, False, True, False]
    assert columns["tags"].exists_mask().tolist() == [True, True, True, False]
    assert columns["price"].range_mask(10, False, None, False).tolist() == [
        False,
        True,
        False,
        False,
    ]
    assert columns["price"].range_mask(10, True, 12.5, True).tolist() == [True, True, False, False]
    start = timestamp_micros("2024-03-01T00:00:00Z")
    assert columns["at"].range_mask(start, True, None, False).tolist() == [
        False,
        False,
        True,
        False,
    ]
    assert columns["sale"].member_mask([False]).tolist() == [False, False, True, False]


def test_a_value_of_the_wrong_type_names_field_and_row() -> None:
    with pytest.raises(ColumnError, match=r"'price' row 1"):
        build_columns([{"price": 1}, {"price": "cheap"}], {"price": FieldType.INTEGER})


def test_field_names_are_identifiers_and_not_id() -> None:
    with pytest.raises(ColumnError, match="reserved"):
        build_columns([{"id": "x"}], {"id": FieldType.STRING})


def test_file_round_trip(tmp_path: Path) -> None:
    fields = infer_fields(ROWS)
    columns = build_columns(ROWS, fields)
    path = tmp_path / "c.columns.npz"
    save_columns(path, columns)
    loaded = load_columns(path, fields, len(ROWS))
    for name, column in columns.items():
        again = loaded[name]
        assert again.type == column.type
        assert again.dictionary == column.dictionary
        np.testing.assert_array_equal(again.present, column.present)
        np.testing.assert_array_equal(again.values, column.values)
    with pytest.raises(ColumnError, match="does not have 5 rows"):
        load_columns(path, fields, 5)

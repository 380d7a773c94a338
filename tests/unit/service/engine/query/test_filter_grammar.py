"""The filter grammar: leaves test one field once, inner nodes combine, the tags are the union's,
and the limits count nodes and 'in' values."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from service.engine.query.filter_grammar import (
    AllOf,
    AnyOf,
    FieldTest,
    Filter,
    NoneOf,
    check_filter_limits,
    children,
)
from service.exceptions import InvalidQueryError
from service.settings import Settings

FILTER: TypeAdapter[Filter] = TypeAdapter(Filter)


def test_a_tree_parses_into_its_nodes() -> None:
    node = FILTER.validate_python(
        {
            "and": [
                {"field": "tags", "in": ["red", "blue"]},
                {"or": [{"field": "price", "range": {"gte": 10, "lt": 50}}]},
                {"not": {"field": "discount", "exists": True}},
            ]
        }
    )
    assert isinstance(node, AllOf)
    leaf, either, negation = children(node)
    assert isinstance(leaf, FieldTest)
    assert leaf.in_ == ["red", "blue"]
    assert isinstance(either, AnyOf)
    assert isinstance(negation, NoneOf)
    (price,) = children(either)
    assert isinstance(price, FieldTest)
    assert price.range is not None
    assert (price.range.low, price.range.high) == (10, 50)
    assert children(leaf) == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"field": "a"}, "exactly one of 'eq', 'in', 'range' or 'exists'"),
        ({"field": "a", "eq": 1, "exists": True}, "exactly one of"),
        ({"field": "a", "range": {}}, "at least one bound"),
        ({"field": "a", "range": {"gt": 1, "gte": 2}}, "at most one of 'gt' and 'gte'"),
        ({"and": []}, "at least 1 item"),
        ({"and": [], "or": []}, "give a field test"),
        ({"field": "a", "eq": None}, "eq"),
        ({"xor": [{"field": "a", "exists": True}]}, "give a field test"),
    ],
)
def test_malformed_filters_are_refused(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FILTER.validate_python(body)


def test_limits_count_nodes_and_in_values() -> None:
    settings = Settings(max_filter_conditions=3, max_filter_values=2)
    small = FILTER.validate_python({"not": {"and": [{"field": "a", "in": [1, 2]}]}})
    check_filter_limits("filter", small, settings)
    deep = FILTER.validate_python({"not": {"not": {"not": {"field": "a", "exists": True}}}})
    with pytest.raises(InvalidQueryError, match="filter: 4 conditions, more than max_filter_"):
        check_filter_limits("filter", deep, settings)
    wide = FILTER.validate_python({"field": "a", "in": [1, 2, 3]})
    with pytest.raises(InvalidQueryError, match="3 values in 'in' lists, more than max_filter_"):
        check_filter_limits("searches.0.filter", wide, settings)

"""LangChain's and LlamaIndex's filters as Crisscross filters."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from crisscross_client.integrations.filters import (
    FilterNotSupportedError,
    from_langchain,
    from_llamaindex,
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"topic": "pets"}, {"field": "topic", "eq": "pets"}),
        ({"stars": {"$gte": 4}}, {"field": "stars", "range": {"gte": 4}}),
        ({"stars": {"$ne": 3}}, {"not": {"field": "stars", "eq": 3}}),
        ({"topic": {"$in": ["a", "b"]}}, {"field": "topic", "in": ["a", "b"]}),
        ({"topic": {"$nin": ["a"]}}, {"not": {"field": "topic", "in": ["a"]}}),
        ({"topic": {"$exists": True}}, {"field": "topic", "exists": True}),
        (
            {"topic": "pets", "stars": {"$gt": 1, "$lt": 5}},
            {
                "and": [
                    {"field": "topic", "eq": "pets"},
                    {"field": "stars", "range": {"gt": 1}},
                    {"field": "stars", "range": {"lt": 5}},
                ]
            },
        ),
        (
            {"$or": [{"topic": "pets"}, {"$not": {"stars": 1}}]},
            {"or": [{"field": "topic", "eq": "pets"}, {"not": {"field": "stars", "eq": 1}}]},
        ),
        (
            {"$and": [{"topic": "pets"}, {"stars": 2}]},
            {"and": [{"field": "topic", "eq": "pets"}, {"field": "stars", "eq": 2}]},
        ),
    ],
)
def test_langchain_filters(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert from_langchain(given) == expected


@pytest.mark.parametrize(
    "given",
    [{}, {"$like": "x"}, {"topic": {"$like": "x"}}, {"topic": {}}, {"$or": []}, {"t": {"$in": []}}],
)
def test_langchain_filters_crisscross_cannot_state_are_refused(given: dict[str, Any]) -> None:
    with pytest.raises(FilterNotSupportedError):
        from_langchain(given)


def test_llamaindex_operators() -> None:
    pairs = [
        (FilterOperator.EQ, {"field": "k", "eq": 1}),
        (FilterOperator.NE, {"not": {"field": "k", "eq": 1}}),
        (FilterOperator.GT, {"field": "k", "range": {"gt": 1}}),
        (FilterOperator.GTE, {"field": "k", "range": {"gte": 1}}),
        (FilterOperator.LT, {"field": "k", "range": {"lt": 1}}),
        (FilterOperator.LTE, {"field": "k", "range": {"lte": 1}}),
    ]
    for operator, expected in pairs:
        assert from_llamaindex(MetadataFilter(key="k", value=1, operator=operator)) == expected
    listed = MetadataFilter(key="k", value=[1, 2], operator=FilterOperator.IN)
    assert from_llamaindex(listed) == {"field": "k", "in": [1, 2]}
    excluded = MetadataFilter(key="k", value=[1, 2], operator=FilterOperator.NIN)
    assert from_llamaindex(excluded) == {"not": {"field": "k", "in": [1, 2]}}


def test_llamaindex_conditions_and_nesting() -> None:
    pets = MetadataFilter(key="topic", value="pets")
    good = MetadataFilter(key="stars", value=4, operator=FilterOperator.GTE)
    assert from_llamaindex(MetadataFilters(filters=[pets])) == {"field": "topic", "eq": "pets"}
    both = MetadataFilters(filters=[pets, good])
    assert from_llamaindex(both) == {
        "and": [{"field": "topic", "eq": "pets"}, {"field": "stars", "range": {"gte": 4}}]
    }
    either = MetadataFilters(filters=[pets, both], condition=FilterCondition.OR)
    assert from_llamaindex(either) == {
        "or": [{"field": "topic", "eq": "pets"}, from_llamaindex(both)]
    }
    neither = MetadataFilters(filters=[pets], condition=FilterCondition.NOT)
    assert from_llamaindex(neither) == {"not": {"field": "topic", "eq": "pets"}}


def test_llamaindex_operators_crisscross_cannot_state_are_refused() -> None:
    text_match = MetadataFilter(key="k", value="x", operator=FilterOperator.TEXT_MATCH)
    with pytest.raises(FilterNotSupportedError, match="text_match"):
        from_llamaindex(MetadataFilters(filters=[text_match]))
    with pytest.raises(FilterNotSupportedError):
        from_llamaindex(MetadataFilters(filters=[]))

"""The write routes' bodies: exactly one input per item, variant or dim, ids or filter."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.http.schemas.collections import (
    CreateCollectionRequest,
    DeleteRequest,
    UpsertRequest,
)


@pytest.mark.parametrize(
    "body",
    [
        {"name": "x"},
        {"name": "x", "dim": 4, "variant": "v"},
        {"name": "a:b", "dim": 4},
        {"name": "x", "dim": 0},
        {"name": "x", "dim": 4, "fields": {"f": "colour"}},
    ],
)
def test_bad_creates_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CreateCollectionRequest.model_validate(body)


def test_a_create_takes_typed_fields() -> None:
    request = CreateCollectionRequest.model_validate_json(
        '{"name": "p", "dim": 4, "fields": {"price": "float", "tags": "list[string]"}}'
    )
    assert str(request.fields["tags"]) == "list[string]"


@pytest.mark.parametrize(
    "item",
    [
        {"id": "a"},
        {"id": "a", "text": "t", "vector": [1.0]},
        {"id": "", "vector": [1.0]},
        {"id": "a", "vector": []},
        {"id": "a", "text": "   "},
        {"id": "a", "vector": [1.0], "extra": 1},
    ],
)
def test_an_item_needs_exactly_one_usable_input(item: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        UpsertRequest.model_validate({"items": [item]})


def test_an_empty_batch_is_valid() -> None:
    assert UpsertRequest.model_validate({"items": []}).items == []


@pytest.mark.parametrize(
    "body", [{}, {"ids": ["a"], "filter": {"field": "f", "eq": 1}}, {"ids": "a"}]
)
def test_a_delete_needs_ids_or_a_filter(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DeleteRequest.model_validate(body)

"""A page of a search: the next page's offset from the rows it keeps."""

from __future__ import annotations

import pytest

from service.engine.collection.knn import SearchHit
from service.engine.query.query import PageRequest
from service.engine.rank.search_params import DEFAULT_PARAMS
from service.engine.search.pages import page_of


def hit(row: int) -> SearchHit:
    return SearchHit(item_id=f"item-{row}", score=1.0, rank=row + 1, row=row, metadata={})


@pytest.mark.parametrize(
    ("offset", "k", "found", "kept", "expected"),
    [
        (0, 3, 3, 10, 3),  # a full page, more rows kept: the next page starts after it
        (7, 3, 3, 10, None),  # the page reaches the last kept row
        (0, 3, 2, 10, None),  # a short page: the index had no more
        (0, 3, 0, 10, None),
    ],
)
def test_the_next_offset(offset: int, k: int, found: int, kept: int, expected: int | None) -> None:
    page = page_of(
        PageRequest(k=k, offset=offset), [hit(r) for r in range(found)], kept, DEFAULT_PARAMS
    )
    assert page.next_offset == expected

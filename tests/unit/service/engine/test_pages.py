"""A page of a search: the mask built once where the search runs, the next page's offset from
the rows it keeps, and unfiltered searches of one collection run together with the same pages."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from pydantic import TypeAdapter

from service.engine import pages
from service.engine.catalog import ServedCollection
from service.engine.filter_grammar import Filter
from service.engine.knn import SearchHit
from service.engine.pages import PageSearch, page_of
from service.engine.query import PageRequest
from service.engine.search_params import DEFAULT_PARAMS
from storage.columns import build_columns, infer_fields
from storage.index_files import build_index
from tests.fakes.fake_faiss import served_with

FILTER: TypeAdapter[Filter] = TypeAdapter(Filter)


def served(n: int = 12) -> ServedCollection:
    rows = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    plain = served_with(rows, build_index(rows))
    metadata = [{"even": row % 2 == 0} for row in range(n)]
    collection = dataclasses.replace(
        plain.collection, metadata=metadata, columns=build_columns(metadata, infer_fields(metadata))
    )
    return dataclasses.replace(plain, collection=collection)


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


def test_a_filtered_page_builds_its_mask_once_on_the_thread_that_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collection = served()
    masks: list[str] = []
    real = pages.filter_mask

    def counting(node: Filter, loaded: object) -> np.ndarray:
        masks.append(threading.current_thread().name)
        return real(node, loaded)  # type: ignore[arg-type]

    monkeypatch.setattr(pages, "filter_mask", counting)
    request = PageRequest(k=4, filter=FILTER.validate_python({"field": "even", "eq": True}))
    search = PageSearch(collection, request, faiss_threads=1, params=DEFAULT_PARAMS)
    assert search.group is None  # a filtered search runs alone
    worker = threading.Thread(
        target=lambda: found.append(search(collection.collection.vectors[:1])), name="worker"
    )
    found: list[pages.SearchPage] = []
    worker.start()
    worker.join()
    assert masks == ["worker"]
    rows = [h.row for h in found[0].hits]
    assert rows
    assert all(row % 2 == 0 for row in rows)
    assert found[0].next_offset == 4  # 6 even rows kept, 4 shown


def test_unfiltered_searches_run_together_with_the_same_pages_as_alone() -> None:
    collection = served()
    requests = [PageRequest(k=3), PageRequest(k=2, offset=1, exclude={"item-0", "nope"})]
    searches = [PageSearch(collection, r, faiss_threads=1, params=DEFAULT_PARAMS) for r in requests]
    assert searches[0].group == searches[1].group
    queries = [collection.collection.vectors[i : i + 1] for i in (0, 5)]
    together = searches[0].run_together(searches, queries)
    alone = [search(query) for search, query in zip(searches, queries, strict=True)]
    assert together == alone
    assert [p.next_offset for p in alone] == [3, 3]

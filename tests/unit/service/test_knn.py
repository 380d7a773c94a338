"""Exact top-k with the tie rule (service.knn.nearest): ties broken by row ascending even across
the cut, exclusion, clamping, the faiss thread cap, and a wrong dimension refused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import faiss
import numpy as np
import pytest

from service.knn import SearchHit, nearest
from tests.fakes.fake_faiss import TIE_QUERY, AdversarialTieIndex, served_with, tie_corpus


def test_ties_are_broken_by_row_ascending_even_across_the_cut() -> None:
    vectors = tie_corpus()
    index = AdversarialTieIndex(vectors)
    hits = nearest(served_with(vectors, index), TIE_QUERY, k=3)
    assert [hit.row for hit in hits] == [2, 3, 4]
    assert [hit.rank for hit in hits] == [1, 2, 3]
    assert len(index.fetches) > 1, "the run of ties crossing k must make the search fetch more"


def test_a_hit_carries_its_id_score_and_metadata() -> None:
    vectors = tie_corpus()
    (hit,) = nearest(served_with(vectors, AdversarialTieIndex(vectors)), TIE_QUERY, k=1)
    assert hit == SearchHit(rank=1, row=2, item_id="item-2", score=hit.score, metadata={"row": 2})
    assert hit.score == pytest.approx(1.0, abs=1e-6)


def test_exclusion_fetches_past_the_excluded_rows() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    hits = nearest(served, TIE_QUERY, k=3, exclude={"item-2", "item-4", "unknown"})
    assert [hit.item_id for hit in hits] == ["item-3", "item-5", "item-6"]


def test_k_beyond_the_collection_returns_every_remaining_row_in_order() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    hits = nearest(served, TIE_QUERY, k=1000, exclude={"item-0"})
    assert len(hits) == 11
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert [hit.row for hit in hits][:8] == list(range(2, 10))


def test_excluding_everything_returns_nothing() -> None:
    vectors = tie_corpus()
    index = AdversarialTieIndex(vectors)
    everything = {f"item-{row}" for row in range(12)}
    assert nearest(served_with(vectors, index), TIE_QUERY, k=5, exclude=everything) == []
    assert index.fetches == []


def test_a_query_of_the_wrong_dimension_is_a_bug_not_a_search() -> None:
    vectors = tie_corpus()
    index = AdversarialTieIndex(vectors)
    with pytest.raises(RuntimeError, match=r"dimension 4, collection 'captions' has 8"):
        nearest(served_with(vectors, index), np.ones(4, dtype=np.float32), k=3)
    assert index.fetches == []


def _on_fresh_thread(action: Callable[[], Any]) -> int:
    """Run ``action`` on a new thread; faiss's OpenMP thread count seen there afterwards."""
    seen: list[int] = []

    def body() -> None:
        action()
        seen.append(faiss.omp_get_max_threads())

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    return seen[0]


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_the_searching_thread_gets_the_faiss_thread_cap(threads: int) -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    untouched = _on_fresh_thread(lambda: None)
    seen = _on_fresh_thread(lambda: nearest(served, TIE_QUERY, k=3, faiss_threads=threads))
    # OpenMP keeps the count per thread: setting it on the main thread would not reach here.
    assert seen == (threads if threads > 0 else untouched)

"""Exact top-k with the tie rule (service.knn.nearest): ties broken by row ascending even across
the cut, exclusion, clamping, the faiss thread cap, and a wrong dimension refused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import faiss
import numpy as np
import pytest

from service.knn import SearchHit, nearest, nearest_many
from tests.fakes.fake_faiss import TIE_QUERY, AdversarialTieIndex, served_with, tie_corpus


@pytest.mark.parametrize("factory", ["Flat", "HNSW32"])
def test_ties_are_broken_by_row_ascending_even_across_the_cut(factory: str) -> None:
    vectors = tie_corpus()
    index = AdversarialTieIndex(vectors)
    hits = nearest(served_with(vectors, index, factory=factory), TIE_QUERY, k=3)
    assert [hit.row for hit in hits] == [2, 3, 4]
    assert [hit.rank for hit in hits] == [1, 2, 3]
    # A flat index fetches rows past the cut up front (here: all 12); another kind fetches one
    # row past it, and the run of ties crossing k must make it fetch more.
    assert index.fetches[-1] == 12 if factory == "Flat" else len(index.fetches) > 1


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


def test_many_queries_with_exclusions_answer_as_one_search_each() -> None:
    """One faiss call for a batch whose queries exclude ids (a replay excludes each query
    itself) gives what a selector search per query gives, ties and pages included."""
    rng = np.random.default_rng(7)
    # Few distinct rows, each repeated: exact ties everywhere, runs crossing every cut.
    distinct = rng.standard_normal((9, 8)).astype(np.float32)
    vectors = distinct[rng.integers(0, len(distinct), size=60)]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(8)
    index.add(vectors)
    served = served_with(vectors, index)
    queries = vectors[rng.integers(0, len(vectors), size=40)]
    pages = [
        (
            int(rng.integers(1, 12)),
            int(rng.integers(0, 4)),
            {f"item-{row}" for row in rng.integers(0, 60, size=int(rng.integers(0, 6)))}
            | ({"unknown"} if position % 5 == 0 else set()),
        )
        for position in range(len(queries))
    ]
    many = nearest_many(served, queries, pages)
    for query, (k, offset, exclude), hits in zip(queries, pages, many, strict=True):
        alone = nearest(served, query, k, exclude, offset=offset)
        assert [(hit.rank, hit.row) for hit in hits] == [(hit.rank, hit.row) for hit in alone]


def test_a_batch_on_the_adversarial_tie_index_still_breaks_ties_by_row() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    queries = np.stack([TIE_QUERY, TIE_QUERY])
    pages = [(3, 0, {"item-2", "item-4", "unknown"}), (1000, 0, {"item-0"})]
    first, second = nearest_many(served, queries, pages)
    assert [hit.item_id for hit in first] == ["item-3", "item-5", "item-6"]
    assert [hit.row for hit in second][:8] == list(range(2, 10))
    assert len(second) == 11


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

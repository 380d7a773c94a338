"""Exact top-k with the tie rule (service.engine.collection.knn.nearest): ties broken by row
ascending even across the cut, exclusion, clamping, the faiss thread cap, and a wrong dimension
refused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import faiss
import numpy as np
import pytest

from service.engine.collection.knn import SearchHit, nearest, nearest_many
from service.engine.rank.search_params import EffectiveParams, SearchOverride, resolve
from service.lifecycle.index_placement import place_index
from tests.fakes.clustered import ShortIndex, built_index, clustered_vectors, served_index
from tests.fakes.fake_faiss import (
    TIE_QUERY,
    AdversarialTieIndex,
    FakeGpuFaiss,
    served_with,
    tie_corpus,
)


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


# -- approximate indexes and per-search parameters ------------------------------------------------


CLUSTERED = clustered_vectors(count=2000, dim=16, clusters=40, spread=0.8, duplicates=40, seed=3)
# Queries near the data (stored rows plus noise): their true neighbours sit in a few clusters.
_rng = np.random.default_rng(11)
QUERIES = CLUSTERED[_rng.integers(0, 1960, size=24)] + 0.3 * _rng.standard_normal((24, 16))
QUERIES = (QUERIES / np.linalg.norm(QUERIES, axis=1, keepdims=True)).astype(np.float32)


def _rows(hits: list[SearchHit]) -> list[int]:
    return [hit.row for hit in hits]


def _params(served: Any, **override: Any) -> EffectiveParams:
    return resolve(served.collection, SearchOverride(**override), "search_params")


def _recall(approximate: list[list[int]], exact: list[list[int]]) -> float:
    return float(
        np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(approximate, exact, strict=True)])
    )


@pytest.fixture(scope="module")
def flat() -> Any:
    return served_index(CLUSTERED, built_index(CLUSTERED, "Flat"), "Flat")


@pytest.fixture(scope="module")
def ivf() -> Any:
    index = built_index(CLUSTERED, "IVF32,Flat")
    index.nprobe = 1
    return served_index(CLUSTERED, index, "IVF32,Flat")


@pytest.fixture(scope="module")
def hnsw() -> Any:
    index = built_index(CLUSTERED, "HNSW8")
    index.hnsw.efSearch = 16
    return served_index(CLUSTERED, index, "HNSW8")


def test_nprobe_per_search_changes_the_answers_not_the_index(flat: Any, ivf: Any) -> None:
    exact = [_rows(nearest(flat, query, k=10)) for query in QUERIES]
    default = [_rows(nearest(ivf, query, k=10)) for query in QUERIES]
    every_list = _params(ivf, nprobe=32)
    probed = [_rows(nearest(ivf, query, k=10, params=every_list)) for query in QUERIES]
    assert _recall(default, exact) < 0.9  # one list of 32 misses neighbours
    assert probed == exact  # all 32 lists: IVF-Flat is exact
    assert int(ivf.collection.index.nprobe) == 1


def test_ef_search_per_search_raises_recall(flat: Any, hnsw: Any) -> None:
    exact = [_rows(nearest(flat, query, k=10)) for query in QUERIES]
    low = [_rows(nearest(hnsw, q, k=10, params=_params(hnsw, ef_search=10))) for q in QUERIES]
    high = [_rows(nearest(hnsw, q, k=10, params=_params(hnsw, ef_search=400))) for q in QUERIES]
    assert _recall(high, exact) >= _recall(low, exact)
    assert _recall(high, exact) > 0.97
    assert int(hnsw.collection.index.hnsw.efSearch) == 16


def test_identical_requests_get_identical_answers_from_concurrent_threads(ivf: Any) -> None:
    wanted = {
        nprobe: [_rows(nearest(ivf, q, k=10, params=_params(ivf, nprobe=nprobe))) for q in QUERIES]
        for nprobe in (1, 4, 32)
    }
    seen: dict[int, list[list[int]]] = {}

    def run(nprobe: int) -> None:
        params = _params(ivf, nprobe=nprobe)
        seen[nprobe] = [_rows(nearest(ivf, q, k=10, params=params)) for q in QUERIES]

    threads = [threading.Thread(target=run, args=(nprobe,)) for nprobe in (1, 4, 32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == wanted


def test_an_override_combines_with_the_filter_s_selector(flat: Any, ivf: Any) -> None:
    even = np.arange(len(CLUSTERED)) % 2 == 0
    every_list = _params(ivf, nprobe=32)
    for query in QUERIES[:8]:
        hits = nearest(ivf, query, k=10, allowed=even, params=every_list)
        assert all(hit.row % 2 == 0 for hit in hits)
        assert _rows(hits) == _rows(nearest(flat, query, k=10, allowed=even))


@pytest.mark.parametrize("nprobe", [2, 32])
def test_ivf_pages_continue_one_ranking(ivf: Any, nprobe: int) -> None:
    params = _params(ivf, nprobe=nprobe)
    for query in QUERIES[:8]:
        whole = _rows(nearest(ivf, query, k=30, params=params))
        pages = [
            _rows(nearest(ivf, query, k=10, offset=offset, params=params)) for offset in (0, 10, 20)
        ]
        assert [row for page in pages for row in page] == whole


def test_hnsw_pages_continue_one_ranking_within_ef_search(hnsw: Any) -> None:
    params = _params(hnsw, ef_search=64)
    for query in QUERIES[:8]:
        whole = _rows(nearest(hnsw, query, k=40, params=params))
        pages = [
            _rows(nearest(hnsw, query, k=10, offset=offset, params=params))
            for offset in (0, 10, 20, 30)
        ]
        assert [row for page in pages for row in page] == whole


def test_an_index_that_finds_fewer_rows_than_asked_ends_the_ranking() -> None:
    """An IVF index whose probed lists hold fewer rows than k pads with -1: the fetch loop stops
    at once and the page holds what was found, without looping or inventing rows."""
    index = ShortIndex(CLUSTERED, found=7)
    served = served_index(CLUSTERED, index, "IVF32,Flat")
    hits = nearest(served, QUERIES[0], k=20)
    assert len(hits) == 7
    assert index.fetches == [21]
    assert nearest(served, QUERIES[0], k=5, offset=10) == []
    filtered = nearest(served, QUERIES[0], k=20, allowed=np.arange(2000) % 2 == 0)
    assert len(filtered) == 7
    assert all(hit.row % 2 == 0 for hit in filtered)


def test_an_ivf_index_with_one_small_list_probed_answers_short(ivf: Any) -> None:
    params = _params(ivf, nprobe=1)
    hits = nearest(ivf, QUERIES[0], k=1000, params=params)
    assert 0 < len(hits) < 1000  # one list of 32 holds far fewer than 1000 rows
    assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("factory", ["HNSW8", "IVF32,Flat", "IVF32,PQ4x4np"])
def test_exact_answers_are_the_flat_index_s(flat: Any, factory: str) -> None:
    served = served_index(CLUSTERED, built_index(CLUSTERED, factory), factory)
    exact = _params(served, exact=True)
    even = np.arange(len(CLUSTERED)) % 2 == 0
    for query in [*QUERIES[:6], CLUSTERED[1990]]:  # the last is a duplicated row: ties
        for offset, allowed, exclude in [(0, None, ()), (7, None, {"item-5"}), (3, even, ())]:
            got = nearest(
                served, query, k=12, offset=offset, allowed=allowed, exclude=exclude, params=exact
            )
            want = nearest(flat, query, k=12, offset=offset, allowed=allowed, exclude=exclude)
            assert [(h.rank, h.row, h.score) for h in got] == [
                (h.rank, h.row, h.score) for h in want
            ]
    pages = [(10, 0, set()), (5, 3, {"item-1"})] * 3
    many = nearest_many(served, np.stack([*QUERIES[:6]]), pages, params=exact)
    for query, (k, offset, exclude), hits in zip(QUERIES[:6], pages, many, strict=True):
        assert _rows(hits) == _rows(nearest(flat, query, k, exclude, offset=offset))


def test_exact_on_the_tie_corpus_breaks_ties_by_row() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors), factory="HNSW32")
    hits = nearest(served, TIE_QUERY, k=3, offset=1, params=EffectiveParams(exact=True))
    assert _rows(hits) == [3, 4, 5]


def test_a_batch_with_an_override_answers_as_one_search_each(ivf: Any) -> None:
    params = _params(ivf, nprobe=3)
    pages = [(10, 0, set()), (5, 5, {"item-7"}), (20, 2, set())] * 8
    many = nearest_many(ivf, QUERIES, pages, params=params)
    for query, (k, offset, exclude), hits in zip(QUERIES, pages, many, strict=True):
        assert _rows(hits) == _rows(nearest(ivf, query, k, exclude, offset=offset, params=params))


def test_an_override_on_a_gpu_index_searches_the_cpu_original(ivf: Any) -> None:
    index = built_index(CLUSTERED, "IVF32,Flat")
    index.nprobe = 1
    placed = place_index(index, "auto", search_params={"nprobe": 1}, module=FakeGpuFaiss(1))
    served = served_index(CLUSTERED, placed.index, "IVF32,Flat")
    gpu = placed.index.gpu
    default = nearest(served, QUERIES[0], k=10)
    assert len(gpu.searches) == 1
    params = _params(served, nprobe=32)
    overridden = nearest(served, QUERIES[0], k=10, params=params)
    assert len(gpu.searches) == 1  # not the GPU clone: it takes no per-search parameters
    assert _rows(overridden) == _rows(
        nearest(ivf, QUERIES[0], k=10, params=_params(ivf, nprobe=32))
    )
    assert _rows(default) == _rows(nearest(ivf, QUERIES[0], k=10))
    assert int(index.nprobe) == 1

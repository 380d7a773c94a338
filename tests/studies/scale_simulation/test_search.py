"""One query's top-K: streamed, from an index, or re-ranked from the vectors."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from studies.scale_simulation.ground_truth import K
from studies.scale_simulation.search import search_one, stream_search
from studies.scale_simulation.vectors import F32, normalise


@pytest.fixture
def vectors() -> F32:
    return normalise(np.random.default_rng(1).standard_normal((200, 8), dtype=np.float32))


def exact(vectors: F32, query: F32) -> list[int]:
    return [int(i) for i in np.argsort(-(vectors @ query), kind="stable")[:K]]


def test_streaming_in_blocks_finds_the_exact_top_k(vectors: F32) -> None:
    query = vectors[3]
    assert stream_search(vectors, query, block=25).tolist() == exact(vectors, query)
    assert search_one(None, vectors, query, 0).tolist() == exact(vectors, query)


def test_from_the_index_and_re_ranked(vectors: F32) -> None:
    index = faiss.IndexFlatIP(8)
    index.add(vectors)
    query = vectors[5]
    assert search_one(index, None, query, 0).tolist() == exact(vectors, query)
    assert search_one(index, vectors, query, 30).tolist() == exact(vectors, query)


def test_too_few_candidates_are_padded() -> None:
    vectors = normalise(np.random.default_rng(2).standard_normal((4, 8), dtype=np.float32))
    index = faiss.IndexFlatIP(8)
    index.add(vectors)
    found = search_one(index, vectors, vectors[0], 20)
    assert sorted(found[:4].tolist()) == [0, 1, 2, 3]
    assert found[0] == 0
    assert found[4:].tolist() == [-1] * (K - 4)

"""One query's top-K: from a faiss index, streamed over the vectors memmap, or candidates from
the index re-scored exactly from the vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from studies.scale_simulation.ground_truth import K
from studies.scale_simulation.vectors import F32, I64


def stream_search(vectors: F32, q: F32, block: int = 1_000_000) -> I64:
    best_s = np.full(K, -np.inf, np.float32)
    best_i = np.full(K, -1, np.int64)
    for lo in range(0, len(vectors), block):
        scores = np.asarray(vectors[lo : lo + block]) @ q
        part = np.argpartition(-scores, K - 1)[:K]
        cand_s = np.concatenate([best_s, scores[part]])
        cand_i = np.concatenate([best_i, part + lo])
        top = np.argsort(-cand_s, kind="stable")[:K]
        best_s, best_i = cand_s[top], cand_i[top]
    return best_i


def search_one(index: Any, vectors: F32 | None, query: F32, rerank: int) -> I64:
    """The top-K ids of one query: streamed over the vectors (no index), from the index, or
    ``rerank`` candidates from the index re-scored exactly from the vectors (read in row order)."""
    if index is None:
        assert vectors is not None
        return stream_search(vectors, query)
    if not rerank:
        _, found = index.search(query[None, :], K)
        return np.asarray(found[0], np.int64)
    assert vectors is not None
    _, found = index.search(query[None, :], rerank)
    candidates = np.sort(found[0][found[0] >= 0])
    scores = np.asarray(vectors[candidates]) @ query
    order = np.lexsort((candidates, -scores))[:K]  # score, then row: the tie rule
    out = np.full(K, -1, np.int64)
    out[: len(order)] = candidates[order]
    return out

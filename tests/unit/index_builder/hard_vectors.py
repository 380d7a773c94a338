"""Seeded synthetic embeddings on which approximate search is hard: clustered, anisotropic.

Each cluster has its own per-dimension spread (a 20x range), the centres are close (``spread``
0.2 of the noise), rows are L2-normalised: nearest neighbours cross cluster borders, so IVF with
one probe or HNSW with a small ef misses many of them (uniform noise would make recall trivially
high or meaningless).
"""

from __future__ import annotations

import numpy as np

CLUSTERS = 40
_LAYOUT_SEED = 1234


def hard_vectors(n: int, d: int = 48, seed: int = 0, *, spread: float = 0.2) -> np.ndarray:
    """``n`` float32 unit rows of dimension ``d``; the clusters are the same for every seed,
    the rows differ, so two seeds give a corpus and separate queries from one distribution."""
    layout = np.random.default_rng(_LAYOUT_SEED + d)
    centres = layout.standard_normal((CLUSTERS, d)).astype(np.float32)
    scales = layout.uniform(0.05, 1.0, size=(CLUSTERS, d)).astype(np.float32)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLUSTERS, n)
    noise = rng.standard_normal((n, d)).astype(np.float32)
    rows = centres[labels] * spread + noise * scales[labels]
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def exact_top(
    corpus: np.ndarray, queries: np.ndarray, k: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k rows and the k-th score of each query (the queries are not in the corpus)."""
    scores = queries @ corpus.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return top, np.take_along_axis(scores, top, axis=1)[:, -1]


def recall_on(index: object, corpus: np.ndarray, queries: np.ndarray, k: int = 10) -> float:
    """Tie-aware recall@k of ``index`` for queries outside the corpus."""
    _, kth = exact_top(corpus, queries, k)
    _, found = index.search(queries, k)  # type: ignore[attr-defined]
    valid = found >= 0
    scores = np.einsum("qd,qkd->qk", queries, corpus[np.where(valid, found, 0)])
    hits = valid & (scores >= kth[:, None] - 1e-5)
    return float(hits.sum(axis=1).mean() / k)

"""Exact top-K by inner product (in memory or over a memmap in blocks) and tie-aware recall@K."""

from __future__ import annotations

from collections.abc import Callable

import faiss
import numpy as np
import numpy.typing as npt

from studies.scale_simulation.progress import log
from studies.scale_simulation.vectors import F32, I64

K = 10
TIE_EPS = 1e-5


def exact_topk_inmemory(db: F32, q: F32) -> tuple[F32, I64]:
    index = faiss.IndexFlatIP(db.shape[1])
    index.add(db)
    scores, ids = index.search(q, K)
    return np.asarray(scores, np.float32), np.asarray(ids, np.int64)


def exact_topk_blocks(vectors: F32, q: F32, block: int = 200_000) -> tuple[F32, I64]:
    """Exact top-K by numpy matmul over blocks of the (memmapped) database."""
    best_s = np.full((len(q), K), -np.inf, np.float32)
    best_i = np.full((len(q), K), -1, np.int64)
    for lo in range(0, len(vectors), block):
        hi = min(lo + block, len(vectors))
        scores = q @ np.asarray(vectors[lo:hi]).T
        part = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        cand_s = np.concatenate([best_s, np.take_along_axis(scores, part, 1)], axis=1)
        cand_i = np.concatenate([best_i, part + lo], axis=1)
        top = np.argsort(-cand_s, axis=1, kind="stable")[:, :K]
        best_s = np.take_along_axis(cand_s, top, 1)
        best_i = np.take_along_axis(cand_i, top, 1)
        if lo // block % 10 == 0:
            log(f"  exact top-{K}: {hi:,}/{len(vectors):,} rows")
    return best_s, best_i


def tie_aware_recall(
    ids: I64, gt_scores: F32, q: F32, rows_of: Callable[[I64], npt.ArrayLike]
) -> float:
    """Fraction of the K slots filled by returned ids whose exact score reaches the K-th exact
    score (minus a float tolerance): a tie with the K-th neighbour counts as a hit."""
    hits = 0
    for i in range(len(ids)):
        found = np.unique(ids[i][ids[i] >= 0])
        if len(found) == 0:
            continue
        scores = np.asarray(rows_of(np.sort(found))) @ q[i]
        hits += min(K, int((scores >= gt_scores[i, K - 1] - TIE_EPS).sum()))
    return hits / (K * len(ids))

"""faiss index construction from a factory string, always with inner-product metric."""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np


def build_index(vectors: np.ndarray, factory: str = "Flat") -> Any:
    """Build and fill a faiss index over ``vectors`` (float32 ``[n, d]``, L2-normalised).

    The metric is inner product, which equals cosine similarity on normalised rows. Indexes
    that need training (IVF, PQ) are trained on the same vectors.
    """
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if data.ndim != 2:
        raise ValueError(f"vectors must be [n, d], got shape {data.shape}")
    index = _trained(factory, data)
    index.add(data)
    return index


def training_sample(vectors: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """A seeded sample of ``rows`` stored vectors (all of them, in order, when rows >= n)."""
    count = int(vectors.shape[0])
    if rows >= count:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    chosen = np.sort(np.random.default_rng(seed).choice(count, size=rows, replace=False))
    return np.ascontiguousarray(vectors[chosen], dtype=np.float32)


def trained_empty_index(factory: str, sample: np.ndarray) -> Any:
    """An empty inner-product index of ``factory``, trained on ``sample`` when it needs it."""
    data = np.ascontiguousarray(sample, dtype=np.float32)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError(f"a training sample must be a non-empty [n, d] matrix, got {data.shape}")
    return _trained(factory, data)


def _trained(factory: str, data: np.ndarray) -> Any:
    """An empty inner-product index of ``factory`` for ``data``'s dimension (``ValueError`` for
    a factory string faiss refuses), trained on ``data`` when it needs training."""
    try:
        index = faiss.index_factory(int(data.shape[1]), factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ValueError(f"faiss cannot build factory string {factory!r}: {exc}") from exc
    if not index.is_trained:
        index.train(data)
    return index

"""Seeded clustered unit vectors for approximate-index tests: tight clusters make an IVF index
with a small ``nprobe`` (or an HNSW one with a small ``efSearch``) miss true neighbours in the
clusters it does not visit, and exact duplicates make ties that cross every cut."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from service.engine.collection.catalog import ServedCollection
from storage.id_table import IdTable
from storage.index_files import build_index
from storage.reader import LoadedCollection


def clustered_vectors(
    count: int = 2000,
    dim: int = 16,
    clusters: int = 40,
    spread: float = 0.35,
    duplicates: int = 40,
    seed: int = 0,
) -> npt.NDArray[np.float32]:
    """``count`` unit rows around ``clusters`` random centres (noise ``spread``); the last
    ``duplicates`` rows repeat earlier ones exactly (ties)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    labels = rng.integers(0, clusters, size=count)
    vectors = centres[labels] + spread * rng.standard_normal((count, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    if duplicates:
        vectors[count - duplicates :] = vectors[rng.integers(0, count - duplicates, duplicates)]
    return np.ascontiguousarray(vectors, dtype=np.float32)


def built_index(vectors: npt.NDArray[np.float32], factory: str) -> Any:
    """A faiss inner-product index of ``factory`` trained on and filled with ``vectors``."""
    return build_index(vectors, factory)


def served_index(
    vectors: npt.NDArray[np.float32], index: Any, factory: str, name: str = "captions"
) -> ServedCollection:
    """A served collection searching ``index`` over ``vectors``; row ``n`` has id ``item-n`` and
    metadata ``{"row": n, "even": n % 2 == 0}``."""
    ids = [f"item-{row}" for row in range(len(vectors))]
    collection = LoadedCollection(
        name=name,
        index=index,
        ids=IdTable(ids),
        row_of={item: row for row, item in enumerate(ids)},
        metadata=[{"row": row, "even": row % 2 == 0} for row in range(len(vectors))],
        vectors=vectors,
        factory=factory,
        metric="ip",
    )
    return ServedCollection(variant="v", bundle="b", bundle_version="1", collection=collection)


class ShortIndex:
    """An index that finds at most ``found`` rows per query however many are asked for (faiss
    pads the rest with -1, as an IVF index whose probed lists hold fewer rows does); records
    each search's ``k``."""

    def __init__(self, vectors: npt.NDArray[np.float32], found: int) -> None:
        self.vectors = vectors
        self.found = found
        self.ntotal = len(vectors)
        self.fetches: list[int] = []

    def search(
        self, queries: npt.NDArray[np.float32], k: int, params: Any = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        self.fetches.append(k)
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        for position, query in enumerate(queries):
            all_scores = self.vectors @ query
            member = np.arange(self.ntotal)
            if params is not None and params.sel is not None:
                member = np.array([r for r in member if params.sel.is_member(int(r))])
            order = member[np.lexsort((member, -all_scores[member]))][: min(k, self.found)]
            scores[position, : len(order)] = all_scores[order]
            rows[position, : len(order)] = order
        return scores, rows

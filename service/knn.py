"""Exact top-k over one served collection with the project's tie rule.

The tie rule of docs/contracts.md: score descending, then row ascending. faiss orders equal
scores arbitrarily and may cut a run of equal scores at ``k``, so :func:`nearest` fetches past
the cut until the last fetched score is strictly below the k-th kept one (or the whole
collection is fetched) and re-sorts with that key. COCO holds many duplicate captions, so exact
ties are common, not theoretical.

faiss answers a non-finite query with garbage rows rather than an error; every vector that
reaches :func:`nearest` has been checked where it was made (encoder rows by the batcher, a
client's vector by :func:`service.searcher.normalised_query_vector`, stored vectors when their
bundle was written and hashed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import faiss
import numpy as np

from service.catalog import ServedCollection


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: ``rank`` is 1-based, ``score`` the inner product (cosine)."""

    rank: int
    row: int
    item_id: str
    score: float
    metadata: Mapping[str, object]


def nearest(
    served: ServedCollection,
    query: np.ndarray,
    k: int,
    exclude: Collection[str] = (),
    faiss_threads: int = 0,
) -> list[SearchHit]:
    """The ``k`` best rows of ``served`` for ``query`` (float32 ``[dim]``, finite), ids in
    ``exclude`` left out (unknown ids are ignored).

    ``k`` larger than what the collection holds (after exclusion) is clamped: the result then
    has every remaining row. Ordered by score descending, then row ascending. ``faiss_threads``
    > 0 caps faiss's OpenMP threads on the calling thread (0: faiss's default). Blocking (runs
    faiss); call it off the event loop. A query of the wrong dimension is a bug (RuntimeError).
    """
    # OpenMP's thread count is a per-thread setting: set in the main thread it would not reach
    # the worker threads, whose searches would each spin up a team of one thread per core.
    if faiss_threads > 0:
        faiss.omp_set_num_threads(faiss_threads)
    collection = served.collection
    vector = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
    if vector.shape[1] != collection.dim:
        raise RuntimeError(
            f"query has dimension {vector.shape[1]}, collection {collection.name!r} "
            f"has {collection.dim}"
        )
    excluded_rows = np.array(
        sorted({collection.row_of[item] for item in exclude if item in collection.row_of}),
        dtype=np.int64,
    )
    wanted = min(k, collection.count - len(excluded_rows))
    if wanted <= 0:
        return []
    # One row beyond the cut shows whether the last kept score ties with an unfetched row.
    fetch = min(collection.count, wanted + len(excluded_rows) + 1)
    while True:
        scores, rows = collection.index.search(vector, fetch)
        valid = rows[0] >= 0
        scores_found = scores[0][valid]
        rows_found = rows[0][valid].astype(np.int64)
        keep = ~np.isin(rows_found, excluded_rows)
        kept_scores, kept_rows = scores_found[keep], rows_found[keep]
        order = np.lexsort((kept_rows, -kept_scores))[:wanted]
        kept_scores, kept_rows = kept_scores[order], kept_rows[order]
        exhausted = fetch >= collection.count or len(rows_found) < fetch
        if exhausted or (len(kept_rows) == wanted and scores_found.min() < kept_scores[-1]):
            break
        # A run of equal scores may cross the cut: rows with a lower number may be unfetched.
        fetch = min(collection.count, fetch * 2)
    ids, metadata = collection.ids, collection.metadata
    return [
        SearchHit(rank=rank, row=row, item_id=ids[row], score=score, metadata=metadata[row])
        for rank, (score, row) in enumerate(
            zip(kept_scores.tolist(), kept_rows.tolist(), strict=True), start=1
        )
    ]

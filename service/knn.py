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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np

from index_builder.bundle import LoadedCollection
from index_builder.columns import Mask
from service.catalog import ServedCollection
from service.index_placement import GpuSearchIndex


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
    *,
    offset: int = 0,
    allowed: Mask | None = None,
) -> list[SearchHit]:
    """Ranks ``offset + 1`` to ``offset + k`` of ``served`` for ``query`` (float32 ``[dim]``,
    finite), among the rows ``allowed`` keeps (None: every row) less the ids in ``exclude``
    (unknown ids are ignored).

    Ordered by score descending, then row ascending, so consecutive pages continue each other
    exactly. Fewer rows than asked for gives every remaining one. A restricted search hands
    faiss an ID selector (a bitmap of the kept rows): the index never returns a row outside it,
    so the top-k is the exact top-k of the kept rows on a flat index. ``faiss_threads`` > 0
    caps faiss's OpenMP threads on the calling thread (0: faiss's default). Blocking (runs
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
    keep = kept_rows(collection.count, collection.row_of, exclude, allowed)
    selectable = collection.count if keep is None else int(np.count_nonzero(keep))
    wanted = min(offset + k, selectable)
    if wanted <= offset:
        return []
    index, params = collection.index, None
    if keep is not None:
        index, params = _restricted(collection.index, keep)
    # One row beyond the cut shows whether the last kept score ties with an unfetched row.
    fetch = min(selectable, wanted + 1)
    while True:
        scores, rows = (
            index.search(vector, fetch)
            if params is None
            else index.search(vector, fetch, params=params)
        )
        valid = rows[0] >= 0
        found_scores = scores[0][valid]
        found_rows = rows[0][valid].astype(np.int64)
        order = np.lexsort((found_rows, -found_scores))[:wanted]
        top_scores, top_rows = found_scores[order], found_rows[order]
        exhausted = fetch >= selectable or len(found_rows) < fetch
        if exhausted or (len(top_rows) == wanted and found_scores.min() < top_scores[-1]):
            break
        # A run of equal scores may cross the cut: rows with a lower number may be unfetched.
        fetch = min(selectable, fetch * 2)
    return _hits(collection, top_scores[offset:], top_rows[offset:], offset)


def nearest_many(
    served: ServedCollection,
    queries: np.ndarray,
    pages: Sequence[tuple[int, int]],
    faiss_threads: int = 0,
) -> list[list[SearchHit]]:
    """:func:`nearest` for several unrestricted queries (float32 ``[n, dim]``) at once, one
    ``(k, offset)`` page each: one faiss call for all of them, deep enough for the deepest page;
    a query whose cut falls inside a run of equal scores is searched again alone. Same answers
    as :func:`nearest` query by query."""
    if faiss_threads > 0:
        faiss.omp_set_num_threads(faiss_threads)
    collection = served.collection
    matrix = np.ascontiguousarray(queries, dtype=np.float32)
    count = collection.count
    deepest = max((offset + k for k, offset in pages), default=0)
    fetch = min(count, deepest + 1)
    if fetch <= 0:
        return [[] for _ in pages]
    scores, rows = collection.index.search(matrix, fetch)
    answers: list[list[SearchHit]] = []
    for position, (k, offset) in enumerate(pages):
        wanted = min(offset + k, count)
        found_scores, found_rows = scores[position], rows[position].astype(np.int64)
        valid = found_rows >= 0
        found_scores, found_rows = found_scores[valid], found_rows[valid]
        order = np.lexsort((found_rows, -found_scores))[:wanted]
        top_scores, top_rows = found_scores[order], found_rows[order]
        settled = fetch >= count or (
            len(top_rows) == wanted and (wanted == 0 or found_scores.min() < top_scores[-1])
        )
        if not settled:
            answers.append(nearest(served, matrix[position], k, offset=offset))
            continue
        answers.append(_hits(collection, top_scores[offset:], top_rows[offset:], offset))
    return answers


def _hits(
    collection: LoadedCollection, scores: np.ndarray, rows: np.ndarray, offset: int
) -> list[SearchHit]:
    ids, metadata = collection.ids, collection.metadata
    return [
        SearchHit(rank=rank, row=row, item_id=ids[row], score=score, metadata=metadata[row])
        for rank, (score, row) in enumerate(
            zip(scores.tolist(), rows.tolist(), strict=True), start=offset + 1
        )
    ]


def kept_rows(
    count: int, row_of: Mapping[str, int], exclude: Collection[str], allowed: Mask | None
) -> Mask | None:
    """The rows a search may return: ``allowed`` (None: all ``count``) less the rows of the ids
    in ``exclude``; None when that is every row."""
    excluded = [row_of[item] for item in exclude if item in row_of]
    if allowed is None and not excluded:
        return None
    keep = np.ones(count, dtype=np.bool_) if allowed is None else allowed.copy()
    keep[excluded] = False
    return None if bool(keep.all()) else keep


def _restricted(index: Any, keep: Mask) -> tuple[Any, Any]:
    """The index to search with a selector of the ``keep`` rows, and its search parameters.

    A GPU-placed index is searched through its CPU original (faiss's GPU indexes take no ID
    selectors); an IVF or HNSW index keeps its own nprobe / efSearch.
    """
    if isinstance(index, GpuSearchIndex):
        index = index.cpu
    bitmap = np.packbits(keep, bitorder="little")
    swig: Any = faiss  # the selector and parameter classes are missing from faiss's stubs
    selector = swig.IDSelectorBitmap(bitmap)
    # The selector reads the bitmap's memory: keep the array alive as long as the selector.
    selector.referenced_bitmap = bitmap
    params: Any
    try:
        ivf = faiss.extract_index_ivf(index)
    except (RuntimeError, TypeError):  # not a faiss index of faiss's own (a test's fake)
        ivf = None
    if ivf is not None:
        params = swig.SearchParametersIVF(sel=selector, nprobe=ivf.nprobe)
    elif hasattr(index, "hnsw"):
        params = swig.SearchParametersHNSW(sel=selector, efSearch=index.hnsw.efSearch)
    else:
        params = swig.SearchParameters(sel=selector)
    params.referenced_selector = selector
    return index, params

"""Exact top-k over one served collection with the project's tie rule.

The tie rule (:mod:`service.engine.rank.tie_rule`): faiss orders equal scores arbitrarily and may
cut a run of equal scores at ``k``, so :func:`top_rows` fetches past the cut until the last fetched
score is strictly below the k-th kept one (or the whole collection is fetched) and re-sorts with the
rule's key.

Unrestricted searches of a flat inner-product index on the CPU scan the collection's stored vectors
(:func:`_candidates`): the rows are the index's own. The collection's
:class:`~service.engine.rank.exact_scan.ExactScan` (onnxruntime's GEMM and TopK) scans where the
loader gave it one, else numpy's matrix product: numpy's BLAS did 256 queries x 25,000 rows x 384 in
0.07 s on this 2-core machine where faiss's bundled one took 0.74 s (one query: 2.5 ms against 3.6
ms), and the onnxruntime scan takes 8.7 ms where numpy took 12.3-15.4 ms for the 16 queries of a
search batch. Filtered searches keep faiss's ID selectors; other index kinds, and indexes on a GPU,
are searched by faiss.

A request may override an approximate index's search parameters (``nprobe``, ``efSearch``;
:mod:`service.engine.rank.search_params`): they are handed to faiss with the search (with the ID
selector of a filtered search), never set on the shared index; an override on a GPU-placed index
searches its CPU original. ``exact`` searches the stored vectors with numpy whatever the index is,
filtered or not, with a flat index's rescoring: its answers are a flat index's.

Approximate indexes rank by their own scores (an IVF-PQ index's are approximate) with the same
tie rule. A page is a slice of one ranking: an IVF index scans the same ``nprobe`` lists
however deep it is asked, so consecutive pages continue each other exactly; an HNSW index
explores ``max(efSearch, depth)`` candidates, so pages continue each other exactly while the
depth (``offset + k``, plus one row) stays within ``efSearch``. An index that returns fewer
rows than asked (an IVF index whose probed lists hold fewer, faiss's ``-1`` padding) ends the
ranking there: the fetch loop stops and the page holds what was found.

faiss answers a non-finite query with garbage rows rather than an error; every vector that
reaches :func:`nearest` has been checked where it was made (encoder rows by the batcher, a
client's vector by :func:`service.engine.query.query.normalised_query_vector`, stored vectors when
their bundle was written and hashed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import faiss
import numpy as np

from service.engine.collection.catalog import ServedCollection
from service.engine.rank.search_params import (
    DEFAULT_PARAMS,
    EffectiveParams,
    cpu_index,
    faiss_parameters,
)
from service.engine.rank.tie_rule import EXTRA_FETCH, SCORE_SLACK, exact_scores, order, settled
from storage.columns import Mask
from storage.reader import LoadedCollection


class SearchHit(NamedTuple):
    """One search result: ``rank`` is 1-based, ``score`` the inner product (cosine). A named
    tuple rather than a frozen dataclass: as immutable, and made five times faster (a bulk
    request of 3,000 searches at k = 1,000 makes three million)."""

    rank: int
    row: int
    item_id: str
    score: float
    metadata: Mapping[str, object]


# Most score cells one numpy block holds (64 MiB of float32): queries are taken this many cells
# at a time, so a bulk request over a million rows never allocates a [256, 1M] matrix.
_BLOCK_CELLS = 1 << 24


def _numpy_searchable(collection: LoadedCollection) -> bool:
    """Whether ``collection``'s index is an exact inner-product index over its stored vectors
    (a CPU ``IndexFlatIP`` of the ``Flat`` factory), which numpy can search directly."""
    index = collection.index
    return (
        type(index) is faiss.IndexFlatIP
        and collection.factory == "Flat"
        and index.ntotal == collection.count
    )


def _candidates(
    served: ServedCollection,
    queries: np.ndarray,
    fetch: int,
    *,
    exact: bool = False,
    keep: Mask | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``fetch`` best rows of every query (float32 ``[n, d]``), unordered, as faiss's
    ``search`` returns them: (scores float32 ``[n, fetch]``, rows int64 ``[n, fetch]``).

    ``exact`` multiplies by the stored vectors whatever the index is, among the ``keep`` rows
    (None: all; ``fetch`` must not exceed the kept rows); else a flat index's stored vectors,
    or the index itself, are searched (``keep`` must then be None)."""
    collection = served.collection
    if not (exact or _numpy_searchable(collection)):
        scores, rows = collection.index.search(queries, fetch)
        return scores, rows
    vectors, count = collection.vectors, collection.count
    dropped = None if keep is None else ~keep
    step = max(1, _BLOCK_CELLS // max(count, 1))
    scan = served.scan
    if scan is not None and dropped is None and fetch < count and scan.can_scan(vectors):
        parts = [
            scan.top(queries[start : start + step], vectors, fetch)
            for start in range(0, len(queries), step)
        ]
        if len(parts) == 1:
            return parts[0]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    all_scores = np.empty((len(queries), fetch), dtype=np.float32)
    all_rows = np.empty((len(queries), fetch), dtype=np.int64)
    for start in range(0, len(queries), step):
        block = queries[start : start + step] @ vectors.T
        if dropped is not None:
            # Left-out rows rank below every kept one; fetch <= kept rows never reaches them.
            block[:, dropped] = -np.inf
        if fetch >= count:
            rows = np.broadcast_to(np.arange(count, dtype=np.int64), block.shape)
        else:
            # The fetch largest: partitioned at count - fetch, no negated copy of the block.
            rows = np.argpartition(block, count - fetch, axis=1)[:, count - fetch :]
            rows = rows.astype(np.int64)
        all_scores[start : start + len(block)] = np.take_along_axis(block, rows, axis=1)
        all_rows[start : start + len(block)] = rows
    return all_scores, all_rows


def nearest(
    served: ServedCollection,
    query: np.ndarray,
    k: int,
    exclude: Collection[str] = (),
    faiss_threads: int = 0,
    *,
    offset: int = 0,
    allowed: Mask | None = None,
    params: EffectiveParams = DEFAULT_PARAMS,
) -> list[SearchHit]:
    """Ranks ``offset + 1`` to ``offset + k`` of ``served`` for ``query`` (float32 ``[dim]``,
    finite), among the rows ``allowed`` keeps (None: every row) less the ids in ``exclude``
    (unknown ids are ignored); see :func:`top_rows`."""
    collection = served.collection
    keep = kept_rows(collection.count, collection.row_of, exclude, allowed)
    selectable = collection.count if keep is None else int(np.count_nonzero(keep))
    wanted = min(offset + k, selectable)
    if wanted <= offset:
        return []
    scores, rows = top_rows(served, query, wanted, keep, faiss_threads, params)
    return _hits(collection, scores[offset:], rows[offset:], offset)


def top_rows(
    served: ServedCollection,
    query: np.ndarray,
    wanted: int,
    keep: Mask | None,
    faiss_threads: int = 0,
    params: EffectiveParams = DEFAULT_PARAMS,
) -> tuple[np.ndarray, np.ndarray]:
    """(scores float32, rows int64) of the ``wanted`` best rows of ``served`` that ``keep``
    keeps (None: every row; ``wanted`` at most the kept rows) for ``query``, in the order of
    the tie rule (:mod:`service.engine.rank.tie_rule`), so consecutive pages continue each other
    exactly. Fewer rows come back only where an approximate index finds fewer.

    A restricted search hands faiss an ID selector (a bitmap of the kept rows): the index never
    returns a row outside it, so the top-k is the exact top-k of the kept rows on a flat index.
    ``faiss_threads`` > 0 caps faiss's OpenMP threads on the calling thread (0: faiss's
    default). ``params`` are the search parameters
    (:func:`service.engine.rank.search_params.resolve`:
    checked against the index). Blocking (runs faiss); call it off the event loop. A query of
    the wrong dimension is a bug (RuntimeError).
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
    selectable = collection.count if keep is None else int(np.count_nonzero(keep))
    if wanted <= 0:
        return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
    index, search_params = collection.index, None
    if not params.exact and (keep is not None or params.overridden):
        index, search_params = restricted_index(collection.index, keep, params)
    # Rows beyond the cut show whether the last kept score ties with an unfetched row.
    fetch = min(selectable, wanted + 1 + _extra_fetch(collection, params))
    while True:
        if params.exact:
            scores, rows = _candidates(served, vector, fetch, exact=True, keep=keep)
        elif search_params is None:
            scores, rows = _candidates(served, vector, fetch)
        else:
            scores, rows = index.search(vector, fetch, params=search_params)
        # Fewer rows than asked (faiss pads with -1): the index has no more to give.
        exhausted = fetch >= selectable or int(np.count_nonzero(rows[0] >= 0)) < fetch
        top = _ranked(
            collection, vector[0], scores[0], rows[0], _NO_ROWS, wanted, exhausted, params
        )
        if top is not None:
            return top
        # A run of equal scores may cross the cut: rows with a lower number may be unfetched.
        fetch = min(selectable, fetch * 2)


def nearest_many(
    served: ServedCollection,
    queries: np.ndarray,
    pages: Sequence[tuple[int, int, Collection[str]]],
    faiss_threads: int = 0,
    params: EffectiveParams = DEFAULT_PARAMS,
) -> list[list[SearchHit]]:
    """:func:`nearest` for several queries without a filter (float32 ``[n, dim]``) at once, one
    ``(k, offset, exclude)`` page each: one search for all of them, deep enough for the
    deepest page plus its excluded rows, which are then dropped (the top ``k + e`` of every row
    holds the top ``k`` of the rows left after excluding ``e``); a query whose cut falls inside
    a run of equal scores is searched again alone. Same answers as :func:`nearest` query by
    query, without an ID selector per query (a selector search scans rows one by one, where the
    batch is one matrix product). Every query runs with the same search ``params``."""
    if faiss_threads > 0:
        faiss.omp_set_num_threads(faiss_threads)
    collection = served.collection
    matrix = np.ascontiguousarray(queries, dtype=np.float32)
    count = collection.count
    excluded = [
        np.unique(np.array(_rows_of(collection.row_of, exclude), dtype=np.int64))
        for _, _, exclude in pages
    ]
    deepest = max(
        (offset + k + len(rows) for (k, offset, _), rows in zip(pages, excluded, strict=True)),
        default=0,
    )
    fetch = min(count, deepest + 1 + _extra_fetch(collection, params))
    if fetch <= 0:
        return [[] for _ in pages]
    if params.overridden and not params.exact:
        index, search_params = restricted_index(collection.index, None, params)
        scores, rows = index.search(matrix, fetch, params=search_params)
    else:
        scores, rows = _candidates(served, matrix, fetch, exact=params.exact)
    answers: list[list[SearchHit]] = []
    for position, (k, offset, exclude) in enumerate(pages):
        dropped = excluded[position]
        wanted = min(offset + k, count - len(dropped))
        top = _ranked(
            collection,
            matrix[position],
            scores[position],
            rows[position],
            dropped,
            wanted,
            exhausted=fetch >= count,
            params=params,
        )
        if top is None:
            answers.append(
                nearest(served, matrix[position], k, exclude, offset=offset, params=params)
            )
        else:
            answers.append(_hits(collection, top[0][offset:], top[1][offset:], offset))
    return answers


_NO_ROWS = np.empty(0, dtype=np.int64)


def _rescored(collection: LoadedCollection, params: EffectiveParams) -> bool:
    """Whether a search's fetched rows are scored again from the stored vectors: a flat
    index's, and every exact search's."""
    return params.exact or collection.factory == "Flat"


def _extra_fetch(collection: LoadedCollection, params: EffectiveParams) -> int:
    return EXTRA_FETCH if _rescored(collection, params) else 0


def _ranked(
    collection: LoadedCollection,
    query: np.ndarray,
    scores: np.ndarray,
    rows: np.ndarray,
    dropped: np.ndarray,
    wanted: int,
    exhausted: bool,
    params: EffectiveParams = DEFAULT_PARAMS,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The top ``wanted`` (scores, rows) of one query's fetched rows (faiss's -1 padding and
    the ``dropped`` rows left out) by score descending then row ascending; None when an
    unfetched row might still belong there (the fetch was not deep enough past the cut).

    A flat index's rows (and an exact search's) are scored again from the stored vectors in
    float64, one row at a time in a fixed order: every path (a matrix product, faiss's selector
    search, a GPU) then gives a row the same score, so equal rows tie exactly and the tie rule,
    not rounding, orders them."""
    fetched = rows >= 0
    valid = fetched.copy()
    if len(dropped):
        valid &= ~np.isin(rows, dropped)
    found_rows = rows[valid].astype(np.int64)
    found_scores = scores[valid]
    slack = 0.0
    if _rescored(collection, params):
        found_scores = exact_scores(collection.vectors[found_rows], query)
        slack = SCORE_SLACK
    ranked = order(found_rows, found_scores)[:wanted]
    top_scores, top_found = found_scores[ranked], found_rows[ranked]
    if exhausted or wanted == 0:
        return top_scores, top_found
    # Unfetched rows score at most the lowest fetched one, kept or dropped.
    if settled(float(scores[fetched].min()), top_scores, wanted, slack):
        return top_scores, top_found
    return None


def _hits(
    collection: LoadedCollection, scores: np.ndarray, rows: np.ndarray, offset: int
) -> list[SearchHit]:
    metadata = collection.metadata
    return [
        SearchHit(rank, row, item_id, score, metadata[row])
        for rank, (row, item_id, score) in enumerate(
            zip(rows.tolist(), collection.ids.ids_of(rows), scores.tolist(), strict=True),
            start=offset + 1,
        )
    ]


def _rows_of(row_of: Mapping[str, int], ids: Collection[str]) -> list[int]:
    """The rows of the ``ids`` the collection holds (unknown ids are ignored)."""
    rows = (row_of.get(item) for item in ids)  # one lookup per id
    return [row for row in rows if row is not None]


def kept_rows(
    count: int, row_of: Mapping[str, int], exclude: Collection[str], allowed: Mask | None
) -> Mask | None:
    """The rows a search may return: ``allowed`` (None: all ``count``) less the rows of the ids
    in ``exclude``; None when that is every row."""
    excluded = _rows_of(row_of, exclude)
    if allowed is None and not excluded:
        return None
    keep = np.ones(count, dtype=np.bool_) if allowed is None else allowed.copy()
    keep[excluded] = False
    return None if bool(keep.all()) else keep


def restricted_index(index: Any, keep: Mask | None, params: EffectiveParams) -> tuple[Any, Any]:
    """The index to search with a selector of the ``keep`` rows (None: every row) and the
    search ``params``, and faiss's per-search parameters saying so.

    A GPU-placed index is searched through its CPU original (faiss's GPU indexes take neither
    ID selectors nor per-search parameters); an IVF or HNSW index keeps its own nprobe /
    efSearch unless ``params`` override them.
    """
    index = cpu_index(index)
    selector: Any = None
    if keep is not None:
        bitmap = np.packbits(keep, bitorder="little")
        swig: Any = faiss  # the selector classes are missing from faiss's stubs
        selector = swig.IDSelectorBitmap(bitmap)
        # The selector reads the bitmap's memory: keep the array alive as long as the selector.
        selector.referenced_bitmap = bitmap
    return index, faiss_parameters(index, params, selector)

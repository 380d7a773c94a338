"""Search over a live collection: its base through faiss, its own rows exactly, under the same
tie rule as a bundle.

A live collection's items are the rows alive at the view's sequence
(:class:`storage.live.segment.SegmentView`): first the base's (the bundle the last compaction
wrote), then the rows written since. The base's faiss index is searched with an ID selector — a
bitmap of its rows that are alive, kept by the filter and not excluded — so deleted and
replaced rows are never fetched and a page is never short while enough items are kept (on a
``Flat`` base; an IVF base ranks what its probed lists hold, as an IVF bundle does). The rows
written since are scored by a matrix product. Both parts' candidates are scored again in
float64, one row at a time, as a flat bundle's are (:func:`service.engine.knn.nearest`), and
ordered by score descending then row ascending: rows are numbered in write order, so a live
collection orders exactly as a bundle rebuilt from the same items in that order would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from formats.field_types import FieldType
from service.engine.filtering import filter_mask
from service.engine.knn import SearchHit, restricted_index
from service.engine.pages import SearchPage, page_of
from service.engine.query import PageRequest
from service.engine.search_params import DEFAULT_PARAMS
from storage.columns import Column, Mask, build_columns
from storage.live.segment import SegmentView, rows_of

# An unfetched row's float32 score may exceed its float64 one by rounding, never by this much.
_SCORE_SLACK = 1e-5
# Rows fetched past the cut, so that the slack rarely forces a second pass.
_EXTRA_FETCH = 16


@dataclass(frozen=True)
class LiveFields:
    """A live collection's declared fields as empty typed columns: what
    :func:`service.engine.filtering.check_filter` reads (types only), cheap on the event loop."""

    name: str
    columns: Mapping[str, Column]

    @classmethod
    def of(cls, name: str, fields: Mapping[str, FieldType]) -> LiveFields:
        """The fields of collection ``name``."""
        return cls(name, build_columns([], fields))


@dataclass(frozen=True)
class _ViewColumns:
    name: str
    columns: Mapping[str, Column]


def kept_mask(view: SegmentView, name: str, page: PageRequest) -> Mask:
    """The rows a search of ``page`` may return: alive at the view's sequence, kept by the
    filter (checked already), not excluded."""
    keep = view.alive().copy()
    if page.filter is not None:
        split = view.base_rows
        if split:
            keep[:split] &= filter_mask(page.filter, _ViewColumns(name, view.base_columns()))
        if view.rows > split:
            keep[split:] &= filter_mask(page.filter, _ViewColumns(name, view.own_columns()))
    if page.exclude:
        keep[rows_of(view, list(page.exclude))] = False
    return keep


@dataclass
class _Part:
    """The candidates of one part (the base, or the rows since) at one fetch depth."""

    scores: np.ndarray
    rows: np.ndarray
    exhausted: bool


def _base_part(view: SegmentView, vector: np.ndarray, keep: Mask, fetch: int) -> _Part:
    """The ``fetch`` best kept base rows by the base index (ID selector of ``keep``)."""
    assert view.base is not None
    items = view.base.items
    kept = int(np.count_nonzero(keep))
    if kept == 0:
        return _Part(np.empty(0, np.float32), np.empty(0, np.int64), True)
    fetch = min(fetch, kept)
    index, params = restricted_index(
        items.index, None if bool(keep.all()) else keep, DEFAULT_PARAMS
    )
    scores, rows = index.search(vector.reshape(1, -1), fetch, params=params)
    found = rows[0] >= 0
    exhausted = fetch >= kept or int(np.count_nonzero(found)) < fetch
    return _Part(scores[0][found], rows[0][found].astype(np.int64), exhausted)


def _own_part(view: SegmentView, vector: np.ndarray, keep: Mask, fetch: int) -> _Part:
    """The ``fetch`` best kept rows written since the base, by a matrix product."""
    kept = int(np.count_nonzero(keep))
    if kept == 0:
        return _Part(np.empty(0, np.float32), np.empty(0, np.int64), True)
    scores = view.own_vectors @ vector
    scores[~keep] = -np.inf
    fetch = min(fetch, kept)
    if fetch >= len(scores):
        rows = np.arange(len(scores), dtype=np.int64)
    else:
        rows = np.argpartition(-scores, fetch - 1)[:fetch].astype(np.int64)
    rows = rows[keep[rows]]
    return _Part(scores[rows], rows + view.base_rows, fetch >= kept)


def live_page(view: SegmentView, name: str, query: np.ndarray, page: PageRequest) -> SearchPage:
    """Ranks ``offset + 1`` to ``offset + k`` of the kept rows (:func:`kept_mask`) for the unit
    float32 ``query``, by score descending then row ascending. Blocking (numpy, faiss)."""
    keep = kept_mask(view, name, page)
    kept = int(np.count_nonzero(keep))
    wanted = min(page.offset + page.k, kept)
    if wanted <= page.offset:
        return page_of(page, [], kept, DEFAULT_PARAMS)
    vector = np.ascontiguousarray(query, dtype=np.float32)
    exact_query = vector.astype(np.float64)
    split = view.base_rows
    fetch = wanted + 1 + _EXTRA_FETCH
    while True:
        parts = [_own_part(view, vector, keep[split:], fetch)]
        if split:
            parts.append(_base_part(view, vector, keep[:split], fetch))
        rows = np.concatenate([part.rows for part in parts])
        exact = np.einsum("ij,j->i", view.vectors_of(rows).astype(np.float64), exact_query)
        exact = exact.astype(np.float32)
        order = np.lexsort((rows, -exact))[:wanted]
        top_rows, top_scores = rows[order], exact[order]
        # A part's unfetched rows score (float32) at most its lowest fetched one.
        if all(
            part.exhausted
            or (
                len(top_rows) == wanted
                and float(part.scores.min()) < float(top_scores[-1]) - _SCORE_SLACK
            )
            for part in parts
        ):
            break
        fetch *= 2
    hits = [
        SearchHit(
            rank=rank,
            row=row,
            item_id=view.item_id(row),
            score=score,
            metadata=view.metadata(row),
        )
        for rank, (row, score) in enumerate(
            zip(top_rows[page.offset :].tolist(), top_scores[page.offset :].tolist(), strict=True),
            start=page.offset + 1,
        )
    ]
    return page_of(page, hits, kept, DEFAULT_PARAMS)

"""Search over a live collection's segment: exact, under the same tie rule as a bundle.

A live collection's items are the rows of its mutable segment alive at the view's sequence
(:class:`storage.live.segment.SegmentView`); rows are numbered in write order, so "score
descending, then row ascending" orders them exactly as a bundle rebuilt from the same items in
that order would. Scores are inner products of unit vectors; the fetched rows are scored again
in float64, one row at a time, as a flat bundle's are (:func:`service.engine.knn.nearest`), so
equal vectors tie exactly and the tie rule, not rounding, orders them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from formats.field_types import FieldType
from service.engine.filtering import filter_mask
from service.engine.knn import SearchHit
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
        keep &= filter_mask(page.filter, _ViewColumns(name, view.columns()))
    if page.exclude:
        keep[rows_of(view, list(page.exclude))] = False
    return keep


def live_page(view: SegmentView, name: str, query: np.ndarray, page: PageRequest) -> SearchPage:
    """Ranks ``offset + 1`` to ``offset + k`` of the kept rows (:func:`kept_mask`) for the unit
    float32 ``query``, by score descending then row ascending. Blocking (numpy)."""
    keep = kept_mask(view, name, page)
    kept = int(np.count_nonzero(keep))
    wanted = min(page.offset + page.k, kept)
    if wanted <= page.offset:
        return page_of(page, [], kept, DEFAULT_PARAMS)
    vector = np.ascontiguousarray(query, dtype=np.float32)
    scores = view.vectors @ vector
    scores[~keep] = -np.inf
    exact_query = vector.astype(np.float64)
    fetch = min(kept, wanted + 1 + _EXTRA_FETCH)
    while True:
        if fetch >= len(scores):
            rows = np.arange(len(scores), dtype=np.int64)
        else:
            rows = np.argpartition(-scores, fetch - 1)[:fetch].astype(np.int64)
        rows = rows[keep[rows]]
        exact = np.einsum("ij,j->i", view.vectors[rows].astype(np.float64), exact_query).astype(
            np.float32
        )
        order = np.lexsort((rows, -exact))[:wanted]
        top_rows, top_scores = rows[order], exact[order]
        if fetch >= kept:
            break
        # Unfetched rows score (float32) at most the lowest fetched one.
        if float(scores[rows].min()) < float(top_scores[-1]) - _SCORE_SLACK:
            break
        fetch = min(kept, fetch * 2)
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

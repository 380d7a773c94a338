"""One page of a search, computed where the search runs (a batcher's or the pool's thread):
the filter's mask and the exclusions built once, the hits under the tie rule, and where the
next page starts.

A search's filter is checked against the collection's fields before anything is encoded
(:func:`service.engine.filtering.check_filter`, on the event loop: it only reads the field
types); the mask itself — one boolean per row, a numpy pass over the columns — is made here,
off the event loop, and serves both the search and the count of rows a next page could hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from service.engine.batcher import GroupedFollowUp
from service.engine.catalog import ServedCollection
from service.engine.filtering import filter_mask
from service.engine.knn import SearchHit, kept_rows, nearest, nearest_many
from service.engine.query import PageRequest
from service.engine.search_params import DEFAULT_PARAMS, EffectiveParams


@dataclass(frozen=True)
class SearchPage:
    """One page of hits, and where the next one starts (None: this page reaches the end)."""

    hits: list[SearchHit]
    next_offset: int | None
    params: EffectiveParams = DEFAULT_PARAMS
    mode: str = "dense"
    """The mode of the search (:mod:`service.engine.levers`)."""


def page_of(
    page: PageRequest, hits: list[SearchHit], kept: int, params: EffectiveParams
) -> SearchPage:
    """``hits`` with the offset of the page after them, given ``kept`` rows the search could
    return (None when they reach the end), and the search ``params`` they were found with.

    A page shorter than ``k`` has none: an exact search returned every remaining row, an
    approximate index all it found."""
    end = page.offset + len(hits)
    more = bool(hits) and end < kept and len(hits) >= page.k
    return SearchPage(hits=hits, next_offset=end if more else None, params=params)


@dataclass(frozen=True, eq=False)
class PageSearch:
    """The search of one page of ``served`` (a :class:`service.engine.batcher.GroupedFollowUp`
    when it follows an encoder batch): searches of one collection without a filter that finish
    encoding in the same batch run as one :func:`service.engine.knn.nearest_many` call."""

    served: ServedCollection
    page: PageRequest
    faiss_threads: int
    params: EffectiveParams

    @property
    def group(self) -> tuple[int, int, EffectiveParams] | None:
        """Searches of the same collection (object), thread cap and search parameters, without
        a filter."""
        if self.page.filter is not None:
            return None
        return id(self.served.collection), self.faiss_threads, self.params

    def __call__(self, rows: np.ndarray) -> SearchPage:
        """The page for the query vector ``rows[0]`` (blocking: a worker thread's)."""
        collection = self.served.collection
        allowed = None if self.page.filter is None else filter_mask(self.page.filter, collection)
        keep = kept_rows(collection.count, collection.row_of, self.page.exclude, allowed)
        hits = nearest(
            self.served,
            rows[0],
            k=self.page.k,
            faiss_threads=self.faiss_threads,
            offset=self.page.offset,
            allowed=keep,
            params=self.params,
        )
        kept = collection.count if keep is None else int(np.count_nonzero(keep))
        return page_of(self.page, hits, kept, self.params)

    def run_together(
        self, follow_ups: Sequence[GroupedFollowUp], rows: Sequence[np.ndarray]
    ) -> list[object]:
        """The pages of every search of the group (``follow_ups``, all :class:`PageSearch` of
        this group, none filtered), each for its own ``rows[i][0]``."""
        searches = [cast("PageSearch", follow_up) for follow_up in follow_ups]
        pages = [(s.page.k, s.page.offset, s.page.exclude) for s in searches]
        matrix = np.stack([row[0] for row in rows])
        collection = self.served.collection
        found = nearest_many(self.served, matrix, pages, self.faiss_threads, self.params)
        answers: list[object] = []
        for search, hits in zip(searches, found, strict=True):
            row_of = collection.row_of
            excluded = {row_of[item] for item in search.page.exclude if item in row_of}
            kept = collection.count - len(excluded)
            answers.append(page_of(search.page, hits, kept, self.params))
        return answers

"""One page of a search: its hits, and where the next page starts (made by
:mod:`service.engine.search.page_executor`)."""

from __future__ import annotations

from dataclasses import dataclass

from service.engine.collection.knn import SearchHit
from service.engine.query.query import PageRequest
from service.engine.rank.search_params import DEFAULT_PARAMS, EffectiveParams


@dataclass(frozen=True)
class SearchPage:
    """One page of hits, and where the next one starts (None: this page reaches the end)."""

    hits: list[SearchHit]
    next_offset: int | None
    params: EffectiveParams = DEFAULT_PARAMS
    mode: str = "dense"
    """The mode of the search (:mod:`service.engine.query.levers`)."""


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

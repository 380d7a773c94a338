"""A collection as the engine searches it: one protocol for every kind.

A *view* is one collection as one search sees it, from start to end: a bundle collection (a
live collection with no log), a live collection at the log sequence the search started at (its
base plus the rows written since), or a set of shards that fans out. Rows are numbered ``0 ..
rows - 1`` in write order; the tie rule orders equal scores by that number, so two views of the
same items written in the same order rank them identically.

The planner (:mod:`service.engine.search.planner`) reads a view's cheap facts on the event loop —
its fields (for the filter check), its search parameters, its keyword field — and the page executor
(:mod:`service.engine.search.page_executor`) calls its blocking methods on a worker thread. A new
kind of collection (a replica that follows a log, shards on Ray) is a new class with these methods;
neither the planner nor the executor changes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

import numpy as np
import numpy.typing as npt

from formats.field_types import FieldType
from service.engine.collection.knn import SearchHit
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import Filterable
from service.engine.rank.fusion import Leg
from service.engine.rank.lexical_index import LexicalIndex, best
from service.engine.rank.search_params import EffectiveParams, SearchOverride
from storage.columns import Mask

PageShape = tuple[int, int, Collection[str]]
"""``(k, offset, exclude)``: one page of a grouped search (:meth:`CollectionView.top_many`)."""


class CollectionView(Protocol):
    """One collection as one search sees it (see the module docstring)."""

    @property
    def name(self) -> str:
        """The collection's name, for messages."""
        ...

    @property
    def version(self) -> str:
        """What the search reads: a bundle's version, ``live@<seq>`` for a live collection."""
        ...

    @property
    def rows(self) -> int:
        """Rows numbered ``0 .. rows - 1`` (alive or not)."""
        ...

    @property
    def filterable(self) -> Filterable:
        """The typed fields a filter is checked against (types only: cheap)."""
        ...

    @property
    def fields(self) -> Mapping[str, FieldType]:
        """The declared fields and their types."""
        ...

    @property
    def live(self) -> bool:
        """Whether the collection takes writes: its keyword default is each item's own text,
        and it holds one variant's vectors only (no re-rank by another variant)."""
        ...

    @property
    def remote(self) -> bool:
        """Whether its searches wait on other processes (shards on Ray): its pages are then made
        on the pool's threads, never on an encoder batch's thread, which they would hold."""
        ...

    @property
    def missing(self) -> tuple[str, ...]:
        """The parts of the collection that did not answer this search (shards left out under
        a ``partial`` missing-shards policy); empty for a whole answer."""
        ...

    def params(self, override: SearchOverride | None, where: str) -> EffectiveParams:
        """The search parameters a search uses (``override`` checked against the index);
        :class:`SearchParamNotApplicableError` for parameters it does not take."""
        ...

    # -- blocking: a worker thread's ----------------------------------------------------------

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """The rows a search may return: alive, kept by the (checked) filter ``node``, not
        excluded; None when that is every row."""
        ...

    def kept_count(self, keep: Mask | None) -> int:
        """How many rows ``keep`` (from :meth:`keep`) holds."""
        ...

    def top(
        self, query: np.ndarray, wanted: int, keep: Mask | None, params: EffectiveParams
    ) -> Leg:
        """The ``wanted`` best kept rows for the unit float32 ``query`` (``wanted`` at most the
        kept rows), ordered by the tie rule; fewer only where an approximate index finds
        fewer."""
        ...

    def batch_key(self, params: EffectiveParams) -> object | None:
        """Searches of this collection without a filter whose keys are equal (not None) may
        run as one :meth:`top_many` call."""
        ...

    def top_many(
        self, queries: np.ndarray, pages: list[PageShape], params: EffectiveParams
    ) -> list[list[SearchHit]]:
        """For each of ``queries`` (float32 ``[n, dim]``) and its ``(k, offset, exclude)``,
        the hits of ranks ``offset + 1 .. offset + k``: what :meth:`top` and :meth:`hits` give
        query by query. Only for searches whose :meth:`batch_key` is not None."""
        ...

    def field_texts(self, field: str, start: int, stop: int) -> list[str | None]:
        """The keyword texts of rows ``start .. stop - 1`` in ``field`` (None: no text)."""
        ...

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """The ``depth`` best kept rows by BM25 of ``terms`` in ``field`` (statistics over
        every row alive), ordered by the tie rule, and how many kept rows match in all."""
        ...

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> np.ndarray:
        """The stored float32 vectors of ``rows``, in order."""
        ...

    def row_of(self, item_id: str) -> int | None:
        """The row of ``item_id`` (None: not held)."""
        ...

    def ids_of(self, rows: npt.NDArray[np.int64]) -> list[str]:
        """The ids ``rows`` hold, in order."""
        ...

    def hits(self, leg: Leg, offset: int) -> list[SearchHit]:
        """``leg``'s rows as hits ranked from ``offset + 1``."""
        ...


class SearchedOneByOne:
    """What a view whose searches never run together answers for grouping: no batch key, so
    :meth:`top_many` is never asked."""

    def batch_key(self, params: EffectiveParams) -> object | None:
        """None: every search runs alone."""
        del params
        return None

    def top_many(
        self, queries: np.ndarray, pages: list[PageShape], params: EffectiveParams
    ) -> list[list[SearchHit]]:
        """Not offered (:meth:`batch_key` is None)."""
        raise NotImplementedError(f"{type(self).__name__} runs its searches one by one")


def hits_of(
    leg: Leg, offset: int, ids: list[str], metadata: list[Mapping[str, object]]
) -> list[SearchHit]:
    """``leg``'s rows as hits ranked from ``offset + 1``, given their ``ids`` and
    ``metadata`` (in the leg's order)."""
    return [
        SearchHit(rank, row, item_id, score, meta)
        for rank, (row, item_id, score, meta) in enumerate(
            zip(leg.rows.tolist(), ids, leg.scores.tolist(), metadata, strict=True),
            start=offset + 1,
        )
    ]


def keyword_ranking(
    view: CollectionView,
    index: LexicalIndex,
    alive: Mask | None,
    field: str,
    terms: list[str],
    keep: Mask | None,
    depth: int,
) -> tuple[Leg, int]:
    """What :meth:`CollectionView.keyword_leg` answers, for any view: ``index`` (the view's
    keyword index of ``field``) extended to every row from :meth:`~CollectionView.field_texts`,
    BM25 statistics over ``alive`` (None: every row), then the ``depth`` best rows ``keep``
    keeps by the tie rule, and how many kept rows match."""
    rows = view.rows
    with index.lock:
        if index.rows < rows:
            index.append(view.field_texts(field, index.rows, rows))
        found = index.score(terms, index.all_alive()[:rows] if alive is None else alive)
    ranked, scores, matched = best(found, keep, depth)
    return Leg(ranked, scores), matched

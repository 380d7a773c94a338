"""A live collection as a view (:mod:`service.engine.collection.collection_view`): its base through
faiss, its own rows exactly, under the same tie rule as a bundle.

A live collection's items are the rows alive at the view's sequence
(:class:`storage.live.segment.SegmentView`): first the base's (the bundle the last compaction
wrote), then the rows written since. The base's faiss index is searched with an ID selector — a
bitmap of its rows that are alive, kept by the filter and not excluded — so deleted and
replaced rows are never fetched and a page is never short while enough items are kept (on a
``Flat`` base; an IVF base ranks what its probed lists hold, as an IVF bundle does). The rows
written since are scored by a matrix product. Both parts' candidates are scored again exactly
(:func:`service.engine.rank.tie_rule.exact_scores`), as a flat bundle's are, and ordered by the tie
rule: rows are numbered in write order, so a live collection orders exactly as a bundle rebuilt
from the same items in that order would. A live collection is searched exactly: it takes no
``nprobe`` or ``ef_search``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from formats.field_types import FieldType
from service.engine.collection.collection_view import SearchedOneByOne, hits_of, keyword_ranking
from service.engine.collection.knn import SearchHit, restricted_index
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import Filterable, filter_mask
from service.engine.query.levers import ITEM_TEXT, field_text
from service.engine.rank.fusion import Leg
from service.engine.rank.lexical_index import LexicalIndexes
from service.engine.rank.search_params import DEFAULT_PARAMS, EffectiveParams, SearchOverride
from service.engine.rank.tie_rule import EXTRA_FETCH, SCORE_SLACK, exact_scores, order, settled
from service.exceptions import SearchParamNotApplicableError, quoted
from storage.columns import Column, Mask, build_columns
from storage.live.segment import SegmentView, rows_of


@dataclass(frozen=True)
class LiveFields:
    """A live collection's declared fields as empty typed columns: what
    :func:`service.engine.query.filtering.check_filter` reads (types only), cheap on the event
    loop."""

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


def kept_mask(
    view: SegmentView, name: str, node: Filter | None, exclude: Collection[str] = ()
) -> Mask:
    """The rows of ``view`` a search may return: alive at the view's sequence, kept by the
    (checked) filter ``node``, not excluded."""
    keep = view.alive().copy()
    if node is not None:
        split = view.base_rows
        if split:
            keep[:split] &= filter_mask(node, _ViewColumns(name, view.base_columns()))
        if view.rows > split:
            keep[split:] &= filter_mask(node, _ViewColumns(name, view.own_columns()))
    if exclude:
        keep[rows_of(view, list(exclude))] = False
    return keep


@dataclass
class _Part:
    """The candidates of one part (the base, or the rows since) at one fetch depth."""

    scores: np.ndarray
    rows: np.ndarray
    exhausted: bool


_EMPTY = _Part(np.empty(0, np.float32), np.empty(0, np.int64), True)


def _base_part(view: SegmentView, vector: np.ndarray, keep: Mask, fetch: int) -> _Part:
    """The ``fetch`` best kept base rows by the base index (ID selector of ``keep``)."""
    assert view.base is not None
    kept = int(np.count_nonzero(keep))
    if kept == 0:
        return _EMPTY
    fetch = min(fetch, kept)
    index, params = restricted_index(
        view.base.items.index, None if bool(keep.all()) else keep, DEFAULT_PARAMS
    )
    scores, rows = index.search(vector.reshape(1, -1), fetch, params=params)
    found = rows[0] >= 0
    exhausted = fetch >= kept or int(np.count_nonzero(found)) < fetch
    return _Part(scores[0][found], rows[0][found].astype(np.int64), exhausted)


def _own_part(view: SegmentView, vector: np.ndarray, keep: Mask, fetch: int) -> _Part:
    """The ``fetch`` best kept rows written since the base, by a matrix product."""
    kept = int(np.count_nonzero(keep))
    if kept == 0:
        return _EMPTY
    scores = view.own_vectors @ vector
    scores[~keep] = -np.inf
    fetch = min(fetch, kept)
    if fetch >= len(scores):
        rows = np.arange(len(scores), dtype=np.int64)
    else:
        rows = np.argpartition(-scores, fetch - 1)[:fetch].astype(np.int64)
    rows = rows[keep[rows]]
    return _Part(scores[rows], rows + view.base_rows, fetch >= kept)


@dataclass(frozen=True)
class LiveView(SearchedOneByOne):
    """Live collection ``name`` as ``segment`` (a view at one sequence) holds it, with its
    declared ``declared`` fields and keyword ``lexical`` indexes."""

    segment: SegmentView
    collection_name: str
    declared: LiveFields
    lexical: LexicalIndexes

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.collection_name

    @property
    def version(self) -> str:
        """``live@<seq>``: the log sequence the search reads at."""
        return f"live@{self.segment.seq}"

    @property
    def rows(self) -> int:
        """Rows of the view (alive or not)."""
        return self.segment.rows

    @property
    def filterable(self) -> Filterable:
        """The declared fields."""
        return self.declared

    @property
    def fields(self) -> Mapping[str, FieldType]:
        """The declared fields' types."""
        return {name: column.type for name, column in self.declared.columns.items()}

    @property
    def live(self) -> bool:
        """A live collection takes writes."""
        return True

    @property
    def remote(self) -> bool:
        """Searched in this process."""
        return False

    @property
    def missing(self) -> tuple[str, ...]:
        """Always whole."""
        return ()

    def params(self, override: SearchOverride | None, where: str) -> EffectiveParams:
        """The defaults: :class:`SearchParamNotApplicableError` for ``nprobe`` or
        ``ef_search`` (a live collection is searched exactly)."""
        if override is not None and (override.nprobe is not None or override.ef_search is not None):
            raise SearchParamNotApplicableError(
                f"{where}: live collection {quoted(self.name)} is searched exactly; "
                "nprobe and ef_search do not apply",
                param=where,
            )
        return DEFAULT_PARAMS

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """The rows alive, kept and not excluded (:func:`kept_mask`)."""
        return kept_mask(self.segment, self.name, node, exclude)

    def kept_count(self, keep: Mask | None) -> int:
        """Rows ``keep`` holds."""
        return self.segment.rows if keep is None else int(np.count_nonzero(keep))

    def top(
        self, query: np.ndarray, wanted: int, keep: Mask | None, params: EffectiveParams
    ) -> Leg:
        """The ``wanted`` best kept rows of both parts, exactly (see the module docstring)."""
        del params  # searched exactly: no parameters apply
        view = self.segment
        if keep is None:
            keep = view.alive()
        if wanted <= 0:
            return Leg(np.empty(0, np.int64), np.empty(0, np.float64))
        vector = np.ascontiguousarray(query, dtype=np.float32)
        split = view.base_rows
        fetch = wanted + 1 + EXTRA_FETCH
        while True:
            parts = [_own_part(view, vector, keep[split:], fetch)]
            if split:
                parts.append(_base_part(view, vector, keep[:split], fetch))
            rows = np.concatenate([part.rows for part in parts])
            exact = exact_scores(view.vectors_of(rows), vector)
            ranked = order(rows, exact)[:wanted]
            top_rows, top_scores = rows[ranked], exact[ranked]
            # A part's unfetched rows score (float32) at most its lowest fetched one.
            if all(
                part.exhausted or settled(float(part.scores.min()), top_scores, wanted, SCORE_SLACK)
                for part in parts
            ):
                return Leg(top_rows, top_scores.astype(np.float64))
            fetch *= 2

    def field_texts(self, field: str, start: int, stop: int) -> list[str | None]:
        """The texts of ``field`` (:data:`~service.engine.query.levers.ITEM_TEXT`: each item's own
        text, else its ``text`` field)."""
        text_of = _text_of(self.segment, field)
        return [text_of(row) for row in range(start, stop)]

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """BM25 over ``field``'s texts (:meth:`field_texts`), statistics over the rows
        alive."""
        view = self.segment
        index = self.lexical.of(view.segment, field)
        return keyword_ranking(self, index, view.alive(), field, terms, keep, depth)

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> np.ndarray:
        """The stored vectors of ``rows``."""
        return self.segment.vectors_of(rows)

    def row_of(self, item_id: str) -> int | None:
        """The row of ``item_id``'s version at the view's sequence, or None."""
        return self.segment.row_of(item_id)

    def ids_of(self, rows: npt.NDArray[np.int64]) -> list[str]:
        """The ids of ``rows``."""
        return [self.segment.item_id(row) for row in rows.tolist()]

    def hits(self, leg: Leg, offset: int) -> list[SearchHit]:
        """The hits of ``leg``'s rows."""
        view = self.segment
        rows = leg.rows.tolist()
        return hits_of(leg, offset, self.ids_of(leg.rows), [view.metadata(row) for row in rows])


def _text_of(view: SegmentView, field: str) -> Callable[[int], str | None]:
    def text_of(row: int) -> str | None:
        metadata: Mapping[str, object] = view.metadata(row)
        if field == ITEM_TEXT:
            text = view.text(row)
            return text if text is not None else field_text(metadata.get("text"))
        return field_text(metadata.get(field))

    return text_of

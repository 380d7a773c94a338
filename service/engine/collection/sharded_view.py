"""A collection split into shards, as one view (:mod:`service.engine.collection.collection_view`)
that fans out to its shards' views and merges under the tie rule.

Shard ``i`` holds the rows ``offset_i .. offset_i + rows_i - 1`` of the whole collection, in
order (a bundle split into contiguous row ranges, or shards filled in write order). Each shard
ranks its own rows by the tie rule with its own numbers; shifted by its offset they keep their
order, rows of different shards are disjoint, and every exact score is the same float64 product
of the same stored vector (:func:`service.engine.rank.tie_rule.exact_scores`), so the first ``n`` of
the merged rankings are the unsplit collection's, ties included. Keyword statistics (BM25's
document frequencies and lengths) are the whole collection's: the view keeps one keyword index
over every shard's texts, so a shard's row scores as it would unsplit.

Every call to the shards goes through :meth:`ShardedView.each` (the calls a search may answer
without some shards: the filter, the dense candidates, the hits) or :meth:`ShardedView.every`
(those it cannot: stored vectors, ids, texts). Here both ask the shards one after the other and
let any failure through; a view of shards in other processes (:mod:`cluster.served_shards`) asks
them at once, under a deadline, and applies its missing-shards policy.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from formats.field_types import FieldType
from service.engine.collection.collection_view import (
    CollectionView,
    SearchedOneByOne,
    keyword_ranking,
)
from service.engine.collection.knn import SearchHit
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import Filterable
from service.engine.rank.fusion import Leg
from service.engine.rank.lexical_index import LexicalIndexes
from service.engine.rank.search_params import EffectiveParams, SearchOverride
from service.engine.rank.tie_rule import order
from storage.columns import Mask

T = TypeVar("T")


class LeftOut:
    """What :meth:`ShardedView.each` gives in place of the answer of a shard the search goes on
    without."""

    def __repr__(self) -> str:
        return "LEFT_OUT"


LEFT_OUT = LeftOut()


@dataclass(frozen=True)
class ShardedView(SearchedOneByOne):
    """Collection ``collection_name`` as its ``shards`` (views, in row order) hold it."""

    collection_name: str
    shards: Sequence[CollectionView]
    lexical: LexicalIndexes = field(default_factory=LexicalIndexes, compare=False, repr=False)
    """The keyword indexes over every shard's rows (whole-collection statistics)."""

    def __post_init__(self) -> None:
        if not self.shards:
            raise ValueError("a sharded view needs at least one shard")

    @cached_property
    def _offsets(self) -> list[int]:
        """Each shard's first global row (made once: a view's shards do not change)."""
        offsets, start = [], 0
        for shard in self.shards:
            offsets.append(start)
            start += shard.rows
        return offsets

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.collection_name

    @property
    def version(self) -> str:
        """The shards' versions, joined by ``+`` (one when they agree)."""
        versions = list(dict.fromkeys(shard.version for shard in self.shards))
        return "+".join(versions)

    @property
    def rows(self) -> int:
        """Every shard's rows."""
        return sum(shard.rows for shard in self.shards)

    @property
    def filterable(self) -> Filterable:
        """The first shard's fields (every shard declares the same)."""
        return self.shards[0].filterable

    @property
    def fields(self) -> Mapping[str, FieldType]:
        """The first shard's fields."""
        return self.shards[0].fields

    @property
    def live(self) -> bool:
        """Whether the shards take writes."""
        return self.shards[0].live

    @property
    def remote(self) -> bool:
        """Whether any shard is searched in another process."""
        return any(shard.remote for shard in self.shards)

    @property
    def missing(self) -> tuple[str, ...]:
        """Shards in this process always answer."""
        return ()

    def each(self, calls: Sequence[tuple[int, Callable[[], T]]]) -> list[T | LeftOut]:
        """The answers of ``(shard, call)`` pairs, in order; :data:`LEFT_OUT` where the search
        goes on without that shard (never, here: a failure is raised)."""
        return [call() for _, call in calls]

    def every(self, calls: Sequence[tuple[int, Callable[[], T]]]) -> list[T]:
        """The answers of ``(shard, call)`` pairs that every shard must give."""
        return [call() for _, call in calls]

    def params(self, override: SearchOverride | None, where: str) -> EffectiveParams:
        """Every shard's parameters checked; the first shard's are used."""
        resolved = [shard.params(override, where) for shard in self.shards]
        return resolved[0]

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """Each shard's kept rows, in row order (None: every row of every shard); a shard
        left out keeps none."""
        parts = self.each(
            [(i, partial(shard.keep, node, exclude)) for i, shard in enumerate(self.shards)]
        )
        if all(part is None for part in parts):
            return None
        return np.concatenate(
            [_whole(shard, part) for shard, part in zip(self.shards, parts, strict=True)]
        )

    def _slices(self, keep: Mask | None) -> list[Mask | None]:
        if keep is None:
            return [None] * len(self.shards)
        return [
            keep[start : start + shard.rows]
            for start, shard in zip(self._offsets, self.shards, strict=True)
        ]

    def kept_count(self, keep: Mask | None) -> int:
        """Rows ``keep`` holds."""
        return sum(
            shard.kept_count(part)
            for shard, part in zip(self.shards, self._slices(keep), strict=True)
        )

    def top(
        self, query: np.ndarray, wanted: int, keep: Mask | None, params: EffectiveParams
    ) -> Leg:
        """Each shard's best ``wanted`` (as many as it keeps), merged by the tie rule."""
        asks, starts = [], []
        slices = self._slices(keep)
        for number, (start, shard, part) in enumerate(
            zip(self._offsets, self.shards, slices, strict=True)
        ):
            depth = min(wanted, shard.kept_count(part))
            if depth > 0:
                asks.append((number, partial(shard.top, query, depth, part, params)))
                starts.append(start)
        legs = [
            Leg(leg.rows + start, leg.scores)
            for start, leg in zip(starts, self.each(asks), strict=True)
            if not isinstance(leg, LeftOut)
        ]
        return _merged(legs, wanted)

    def field_texts(self, field: str, start: int, stop: int) -> list[str | None]:
        """The texts of rows ``start .. stop - 1``, from the shards that hold them."""
        asks = []
        for number, (offset, shard) in enumerate(zip(self._offsets, self.shards, strict=True)):
            low, high = max(start, offset), min(stop, offset + shard.rows)
            if low < high:
                asks.append(
                    (number, partial(shard.field_texts, field, low - offset, high - offset))
                )
        return [text for part in self.every(asks) for text in part]

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """BM25 with the whole collection's statistics (see the module docstring): every row
        is alive unless a shard's :meth:`keep` of nothing says otherwise."""
        index = self.lexical.of(self.shards, field)  # the same shards: the same rows
        return keyword_ranking(self, index, self.keep(None, ()), field, terms, keep, depth)

    def _by_shard(self, rows: npt.NDArray[np.int64]) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """``(shard, positions in rows, local rows)`` of every shard holding some of ``rows``:
        one call per shard, not per row."""
        offsets = np.array(self._offsets, dtype=np.int64)
        shard_of = np.searchsorted(offsets, rows, side="right") - 1
        found = []
        for shard in np.unique(shard_of).tolist():
            positions = np.flatnonzero(shard_of == shard)
            found.append((shard, positions, rows[positions] - offsets[shard]))
        return found

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> np.ndarray:
        """The stored vectors of ``rows``, read from their shards."""
        groups = self._by_shard(rows)
        if not groups:
            return self.shards[0].vectors_of(rows)
        asks = [
            (shard, partial(self.shards[shard].vectors_of, local)) for shard, _, local in groups
        ]
        parts = self.every(asks)
        out = np.empty((len(rows), parts[0].shape[1]), dtype=np.float32)
        for (_, positions, _), part in zip(groups, parts, strict=True):
            out[positions] = part
        return out

    def row_of(self, item_id: str) -> int | None:
        """The global row of ``item_id`` (the first shard that holds it)."""
        asks = [
            (number, partial(shard.row_of, item_id)) for number, shard in enumerate(self.shards)
        ]
        for offset, row in zip(self._offsets, self.every(asks), strict=True):
            if row is not None:
                return offset + row
        return None

    def ids_of(self, rows: npt.NDArray[np.int64]) -> list[str]:
        """The ids of ``rows``, read from their shards."""
        ids = [""] * len(rows)
        groups = self._by_shard(rows)
        asks = [(shard, partial(self.shards[shard].ids_of, local)) for shard, _, local in groups]
        for (_, positions, _), part in zip(groups, self.every(asks), strict=True):
            for position, item_id in zip(positions.tolist(), part, strict=True):
                ids[position] = item_id
        return ids

    def hits(self, leg: Leg, offset: int) -> list[SearchHit]:
        """The hits of ``leg``'s rows (global row numbers), read from their shards; the rows
        of a shard left out are not shown (the others keep their ranks)."""
        found: list[SearchHit | None] = [None] * len(leg.rows)
        groups = self._by_shard(leg.rows)
        asks = [
            (shard, partial(self.shards[shard].hits, Leg(local, leg.scores[positions]), 0))
            for shard, positions, local in groups
        ]
        for (_, positions, _), part in zip(groups, self.each(asks), strict=True):
            if isinstance(part, LeftOut):
                continue
            for position, hit in zip(positions.tolist(), part, strict=True):
                found[position] = SearchHit(
                    offset + position + 1,
                    int(leg.rows[position]),
                    hit.item_id,
                    hit.score,
                    hit.metadata,
                )
        return [hit for hit in found if hit is not None]


def _whole(shard: CollectionView, part: Mask | LeftOut | None) -> Mask:
    """A shard's kept rows as a mask: every row for None, none for a shard left out."""
    if isinstance(part, LeftOut):
        return np.zeros(shard.rows, dtype=np.bool_)
    return np.ones(shard.rows, dtype=np.bool_) if part is None else part


def _merged(legs: list[Leg], wanted: int) -> Leg:
    """The first ``wanted`` rows of ``legs`` (disjoint rows) by the tie rule."""
    if not legs:
        return Leg(np.empty(0, np.int64), np.empty(0, np.float64))
    rows = np.concatenate([leg.rows for leg in legs])
    scores = np.concatenate([leg.scores for leg in legs])
    ranked = order(rows, scores)[:wanted]
    return Leg(rows[ranked], scores[ranked])

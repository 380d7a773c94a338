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
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

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

    def params(self, override: SearchOverride | None, where: str) -> EffectiveParams:
        """Every shard's parameters checked; the first shard's are used."""
        resolved = [shard.params(override, where) for shard in self.shards]
        return resolved[0]

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """Each shard's kept rows, in row order (None: every row of every shard)."""
        parts = [shard.keep(node, exclude) for shard in self.shards]
        if all(part is None for part in parts):
            return None
        return np.concatenate(
            [
                np.ones(shard.rows, dtype=np.bool_) if part is None else part
                for shard, part in zip(self.shards, parts, strict=True)
            ]
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
        legs = []
        for start, shard, part in zip(self._offsets, self.shards, self._slices(keep), strict=True):
            depth = min(wanted, shard.kept_count(part))
            if depth > 0:
                leg = shard.top(query, depth, part, params)
                legs.append(Leg(leg.rows + start, leg.scores))
        return _merged(legs, wanted)

    def field_texts(self, field: str, start: int, stop: int) -> list[str | None]:
        """The texts of rows ``start .. stop - 1``, from the shards that hold them."""
        texts: list[str | None] = []
        for offset, shard in zip(self._offsets, self.shards, strict=True):
            low, high = max(start, offset), min(stop, offset + shard.rows)
            if low < high:
                texts += shard.field_texts(field, low - offset, high - offset)
        return texts

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """BM25 with the whole collection's statistics (see the module docstring): every row
        is alive unless a shard's :meth:`keep` of nothing says otherwise."""
        index = self.lexical.of(self, field)
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
        vectors = self.shards[0].vectors_of(rows[:0])
        if len(rows) == 0:
            return vectors
        out = np.empty((len(rows), vectors.shape[1]), dtype=np.float32)
        for shard, positions, local in self._by_shard(rows):
            out[positions] = self.shards[shard].vectors_of(local)
        return out

    def row_of(self, item_id: str) -> int | None:
        """The global row of ``item_id`` (the first shard that holds it)."""
        for offset, shard in zip(self._offsets, self.shards, strict=True):
            row = shard.row_of(item_id)
            if row is not None:
                return offset + row
        return None

    def ids_of(self, rows: npt.NDArray[np.int64]) -> list[str]:
        """The ids of ``rows``, read from their shards."""
        ids = [""] * len(rows)
        for shard, positions, local in self._by_shard(rows):
            for position, item_id in zip(
                positions.tolist(), self.shards[shard].ids_of(local), strict=True
            ):
                ids[position] = item_id
        return ids

    def hits(self, leg: Leg, offset: int) -> list[SearchHit]:
        """The hits of ``leg``'s rows (global row numbers), read from their shards."""
        found: list[SearchHit | None] = [None] * len(leg.rows)
        for shard, positions, local in self._by_shard(leg.rows):
            part = self.shards[shard].hits(Leg(local, leg.scores[positions]), 0)
            for position, hit in zip(positions.tolist(), part, strict=True):
                found[position] = SearchHit(
                    offset + position + 1,
                    int(leg.rows[position]),
                    hit.item_id,
                    hit.score,
                    hit.metadata,
                )
        return [hit for hit in found if hit is not None]


def _merged(legs: list[Leg], wanted: int) -> Leg:
    """The first ``wanted`` rows of ``legs`` (disjoint rows) by the tie rule."""
    if not legs:
        return Leg(np.empty(0, np.int64), np.empty(0, np.float64))
    rows = np.concatenate([leg.rows for leg in legs])
    scores = np.concatenate([leg.scores for leg in legs])
    ranked = order(rows, scores)[:wanted]
    return Leg(rows[ranked], scores[ranked])

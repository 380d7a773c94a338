"""A bundle collection as a view (:mod:`service.engine.collection.collection_view`): a live
collection with no log. Its rows are all alive; its index is searched with faiss or, when flat, by
the scan of its stored vectors (:mod:`service.engine.collection.knn`); its keyword indexes are made
from its metadata on first use."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from formats.field_types import FieldType
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.collection_view import PageShape, hits_of, keyword_ranking
from service.engine.collection.knn import SearchHit, kept_rows, nearest_many, top_rows
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import Filterable, filter_mask
from service.engine.query.levers import field_text
from service.engine.rank.fusion import Leg
from service.engine.rank.search_params import EffectiveParams, SearchOverride, resolve
from storage.columns import Mask


@dataclass(frozen=True)
class BundleView:
    """``served`` as a view; ``faiss_threads`` > 0 caps faiss's threads where it searches."""

    served: ServedCollection
    faiss_threads: int = 0

    @property
    def name(self) -> str:
        """The collection's name in its bundle."""
        return self.served.name

    @property
    def version(self) -> str:
        """The bundle version served."""
        return self.served.bundle_version

    @property
    def rows(self) -> int:
        """The collection's rows (all alive)."""
        return self.served.collection.count

    @property
    def filterable(self) -> Filterable:
        """The loaded collection (its typed columns)."""
        return self.served.collection

    @property
    def fields(self) -> Mapping[str, FieldType]:
        """The collection's typed fields."""
        return self.served.collection.fields

    @property
    def live(self) -> bool:
        """A bundle takes no writes."""
        return False

    @property
    def remote(self) -> bool:
        """Searched in this process."""
        return False

    @property
    def missing(self) -> tuple[str, ...]:
        """Always whole."""
        return ()

    def params(self, override: SearchOverride | None, where: str) -> EffectiveParams:
        """The index's parameters under ``override``
        (:func:`service.engine.rank.search_params.resolve`)."""
        return resolve(self.served.collection, override, where)

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """The rows the filter keeps less the excluded ids' (None: all)."""
        collection = self.served.collection
        allowed = None if node is None else filter_mask(node, collection)
        return kept_rows(collection.count, collection.row_of, exclude, allowed)

    def kept_count(self, keep: Mask | None) -> int:
        """Rows ``keep`` holds (every row for None)."""
        return self.served.collection.count if keep is None else int(np.count_nonzero(keep))

    def top(
        self, query: np.ndarray, wanted: int, keep: Mask | None, params: EffectiveParams
    ) -> Leg:
        """The ``wanted`` best kept rows (:func:`service.engine.collection.knn.top_rows`)."""
        scores, rows = top_rows(self.served, query, wanted, keep, self.faiss_threads, params)
        return Leg(rows.astype(np.int64, copy=False), scores.astype(np.float64))

    def batch_key(self, params: EffectiveParams) -> object | None:
        """The collection (object), thread cap and parameters."""
        return id(self.served.collection), self.faiss_threads, params

    def top_many(
        self, queries: np.ndarray, pages: list[PageShape], params: EffectiveParams
    ) -> list[list[SearchHit]]:
        """One search for all (:func:`service.engine.collection.knn.nearest_many`)."""
        return nearest_many(self.served, queries, pages, self.faiss_threads, params)

    def field_texts(self, field: str, start: int, stop: int) -> list[str | None]:
        """The metadata texts of ``field`` (a list's strings joined by newlines)."""
        metadata = self.served.collection.metadata
        return [field_text(metadata[row].get(field)) for row in range(start, stop)]

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """BM25 over ``field``'s texts, every row alive (:func:`keyword_ranking`)."""
        index = self.served.lexical.of(self.served.collection, field)
        return keyword_ranking(self, index, None, field, terms, keep, depth)

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> np.ndarray:
        """The stored vectors of ``rows``."""
        vectors: np.ndarray = self.served.collection.vectors[rows]
        return vectors

    def row_of(self, item_id: str) -> int | None:
        """The row of ``item_id``, or None."""
        return self.served.collection.row_of.get(item_id)

    def ids_of(self, rows: npt.NDArray[np.int64]) -> list[str]:
        """The ids of ``rows``."""
        return self.served.collection.ids.ids_of(rows)

    def hits(self, leg: Leg, offset: int) -> list[SearchHit]:
        """The hits of ``leg``'s rows."""
        collection = self.served.collection
        metadata = collection.metadata
        return hits_of(
            leg, offset, self.ids_of(leg.rows), [metadata[row] for row in leg.rows.tolist()]
        )

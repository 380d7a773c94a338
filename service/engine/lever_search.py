"""The page of a search with quality levers (:mod:`service.engine.levers`), over a bundle
collection or a live collection's view: blocking, run on a worker thread once the query's
vectors are made.

Both legs of a hybrid search see the same rows: those the filter keeps, less the exclusions
(and, in a live collection, those alive at the view's sequence). The dense leg is the
collection's own search at depth ``window`` (its index and search parameters, the tie rule);
the lexical leg is BM25 over the same rows. The keyword index of a field is appended to, under
its lock, up to the rows the search sees before it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from service.engine.catalog import ServedCollection
from service.engine.filtering import filter_mask
from service.engine.fusion import Leg
from service.engine.knn import SearchHit, kept_rows, nearest
from service.engine.levers import (
    ITEM_TEXT,
    Levers,
    dense_leg,
    field_text,
    lexical_leg,
    page_rows,
    ranked,
    rescored,
)
from service.engine.lexical_index import LexicalIndex, LexicalIndexes
from service.engine.live_search import kept_mask, live_page
from service.engine.pages import SearchPage, page_of
from service.engine.query import PageRequest
from service.engine.search_params import DEFAULT_PARAMS, EffectiveParams
from storage.live.segment import SegmentView


@dataclass(frozen=True)
class LeverInputs:
    """What a lever search needs besides its page: the query vector (None for a lexical
    search), the keywords (None for a dense one) and their field, and for a re-rank by another
    variant, that variant's collection and query vector."""

    vector: np.ndarray | None
    terms: Sequence[str] | None
    field: str | None
    other: ServedCollection | None = None
    other_vector: np.ndarray | None = None


def _synced(index: LexicalIndex, rows: int, text_of: Callable[[int], str | None]) -> None:
    if index.rows < rows:
        index.append(text_of(row) for row in range(index.rows, rows))


def _finish(
    levers: Levers,
    page: PageRequest,
    dense: Leg | None,
    lexical: tuple[Leg, int] | None,
    rescore: Callable[[Leg], Leg] | None,
    hit: Callable[[int, int, float], SearchHit],
    params: EffectiveParams,
    depth: int,
) -> SearchPage:
    ranking = ranked(levers, dense, None if lexical is None else lexical[0])
    if levers.mode == "hybrid":  # the fused ranking of two legs of depth rows ends at depth
        ranking = Leg(ranking.rows[:depth], ranking.scores[:depth])
    total = len(ranking.rows)
    if levers.mode == "lexical" and lexical is not None and levers.rerank is None:
        total = lexical[1]
    if rescore is not None:
        ranking = rescore(ranking)
        total = len(ranking.rows)
    hits = [hit(rank, row, score) for rank, row, score in page_rows(ranking, page.offset, page.k)]
    return replace(page_of(page, hits, total, params), mode=levers.mode)


def _depth(levers: Levers, page: PageRequest) -> int:
    if levers.mode == "hybrid" or levers.rerank is not None:
        return levers.depth(page.offset, page.k)
    return page.offset + page.k


def bundle_page(
    served: ServedCollection,
    lexical: LexicalIndexes,
    page: PageRequest,
    levers: Levers,
    inputs: LeverInputs,
    faiss_threads: int,
    params: EffectiveParams,
) -> SearchPage:
    """The page of a lever search of a bundle collection (filter and parameters checked)."""
    collection = served.collection
    allowed = None if page.filter is None else filter_mask(page.filter, collection)
    keep = kept_rows(collection.count, collection.row_of, page.exclude, allowed)
    depth = _depth(levers, page)
    dense = None
    if inputs.vector is not None:
        dense = dense_leg(
            nearest(
                served,
                inputs.vector,
                k=depth,
                faiss_threads=faiss_threads,
                allowed=keep,
                params=params,
            )
        )
    found = None
    if inputs.terms is not None and inputs.field is not None:
        name = inputs.field
        metadata = collection.metadata
        index = lexical.of(collection, name)
        with index.lock:
            _synced(index, collection.count, lambda row: field_text(metadata[row].get(name)))
            alive = index.all_alive()[: collection.count]
            found = lexical_leg(index, inputs.terms, alive, keep, depth)
    rescore = None
    if levers.rerank is not None:
        rescore = _bundle_rescorer(served, inputs, depth)
    ids, metadata = collection.ids, collection.metadata

    def hit(rank: int, row: int, score: float) -> SearchHit:
        return SearchHit(rank=rank, row=row, item_id=ids[row], score=score, metadata=metadata[row])

    return _finish(levers, page, dense, found, rescore, hit, params, depth)


def _bundle_rescorer(
    served: ServedCollection, inputs: LeverInputs, depth: int
) -> Callable[[Leg], Leg]:
    collection = served.collection

    def rescore(ranking: Leg) -> Leg:
        rows = ranking.rows[:depth]
        if inputs.other is None:
            assert inputs.vector is not None
            return rescored(rows, collection.vectors[rows], inputs.vector)
        other = inputs.other.collection
        assert inputs.other_vector is not None
        found = [other.row_of.get(collection.ids[row]) for row in rows.tolist()]
        present = np.fromiter((row is not None for row in found), dtype=np.bool_, count=len(rows))
        other_rows = np.fromiter(
            (row for row in found if row is not None), dtype=np.int64, count=int(present.sum())
        )
        return rescored(rows[present], other.vectors[other_rows], inputs.other_vector)

    return rescore


def live_page_with_levers(
    view: SegmentView,
    name: str,
    lexical: LexicalIndexes,
    page: PageRequest,
    levers: Levers,
    inputs: LeverInputs,
) -> SearchPage:
    """The page of a lever search of a live collection as ``view`` sees it."""
    keep = kept_mask(view, name, page)
    depth = _depth(levers, page)
    dense = None
    if inputs.vector is not None:
        stage = PageRequest(k=depth, exclude=page.exclude, filter=page.filter, where=page.where)
        dense = dense_leg(live_page(view, name, inputs.vector, stage).hits)
    found = None
    if inputs.terms is not None and inputs.field is not None:
        index = lexical.of(view.segment, inputs.field)
        with index.lock:
            _synced(index, view.rows, _live_text(view, inputs.field))
            found = lexical_leg(index, inputs.terms, view.alive(), keep, depth)
    rescore = None
    if levers.rerank is not None:
        vector = inputs.vector
        assert vector is not None

        def rescore(ranking: Leg) -> Leg:
            rows = ranking.rows[:depth]
            return rescored(rows, view.vectors_of(rows), vector)

    def hit(rank: int, row: int, score: float) -> SearchHit:
        return SearchHit(
            rank=rank,
            row=row,
            item_id=view.item_id(row),
            score=score,
            metadata=view.metadata(row),
        )

    return _finish(levers, page, dense, found, rescore, hit, DEFAULT_PARAMS, depth)


def _live_text(view: SegmentView, field: str) -> Callable[[int], str | None]:
    def text_of(row: int) -> str | None:
        metadata: Mapping[str, object] = view.metadata(row)
        if field == ITEM_TEXT:
            text = view.text(row)
            return text if text is not None else field_text(metadata.get("text"))
        return field_text(metadata.get(field))

    return text_of

"""A search of a bundle collection with quality levers (:mod:`service.engine.levers`): its
keywords, window and re-rank checked, then the vectors it needs made — the query's in the
collection's variant, and in the re-rank's variant — and handed, with the page, to
:func:`service.engine.lever_search.bundle_page`, which runs on a worker thread.

The search core (:class:`service.engine.searcher.Searcher`) resolves the target and hands a
query with levers to :func:`plan_lever_search`, with itself as the embedder; a bulk request's
texts are embedded ahead by :func:`embed_lever_texts`, one encoder job per variant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

import numpy as np

from service.engine.catalog import Catalog, ServedCollection, ServedVariant
from service.engine.embedder import Embedder
from service.engine.filtering import check_filter
from service.engine.lever_search import LeverInputs, bundle_page
from service.engine.levers import Levers, keywords, needs_vector
from service.engine.pages import SearchPage
from service.engine.query import ImageSide, QuerySide, SearchQuery, TextSide, VectorSide, tower_of
from service.engine.search_params import resolve
from service.exceptions import (
    DomainError,
    InvalidQueryError,
    LeverNotApplicableError,
    NotFoundError,
    quoted,
)
from service.request_context import RequestContext

EmbeddedTexts = dict[tuple[str, str], np.ndarray]
"""Text vectors a bulk request embedded ahead, by (variant name, text)."""


class LeverEmbedder(Embedder, Protocol):
    """What makes a lever search's vectors (the search core): it embeds texts and images, and
    looks up a stored item's vector or checks a client's."""

    def given_vector(
        self, catalog: Catalog, variant: ServedVariant, side: QuerySide
    ) -> np.ndarray: ...


async def plan_lever_search(
    embedder: LeverEmbedder,
    context: RequestContext,
    catalog: Catalog,
    target: tuple[ServedVariant, ServedCollection],
    query: SearchQuery,
    faiss_threads: int,
    embedded: EmbeddedTexts | None = None,
) -> Callable[[], SearchPage]:
    """The search of ``query`` with levers in its ``target`` (variant, collection), ready to run
    on a worker thread: the filter, search parameters, keywords, window and re-rank are checked
    before anything is embedded, then the vectors are made (a text's found in ``embedded``
    when it is there). Raises :class:`FilterNotApplicableError`,
    :class:`SearchParamNotApplicableError`, :class:`LeverNotApplicableError`,
    :class:`InvalidQueryError` and the refusals of :func:`rerank_target` and of embedding."""
    variant, served = target
    levers, side, page = query.levers, query.side, query.page
    if page.filter is not None:
        check_filter(page.filter, served.collection, page.where)
    params = resolve(served.collection, page.override, page.params_where)
    text = side.text if isinstance(side, TextSide) else None
    terms, field = keywords(levers, text, served.collection.fields, live=False)
    if levers.mode == "hybrid" or levers.rerank is not None:
        levers.depth(page.offset, page.k)
    other = rerank_target(catalog, levers, served, side)
    vector = None
    if needs_vector(levers):
        vector = await _side_vector(embedder, context, catalog, variant, side, embedded)
    other_vector = None
    if other is not None:
        other_vector = await _side_vector(embedder, context, catalog, other[0], side, embedded)
    inputs = LeverInputs(
        vector=vector,
        terms=terms,
        field=field,
        other=None if other is None else other[1],
        other_vector=other_vector,
    )
    return partial(bundle_page, served, served.lexical, page, levers, inputs, faiss_threads, params)


def rerank_target(
    catalog: Catalog, levers: Levers, served: ServedCollection, side: QuerySide
) -> tuple[ServedVariant, ServedCollection] | None:
    """The variant, and its collection of the same items, that a re-rank by another variant
    reads; None for no re-rank or one by the exact stored vectors. :class:`NotFoundError` for
    an unknown variant, :class:`LeverNotApplicableError` for a client's vector or a variant
    that serves no collection of that name, :class:`TowerMissingError` for a variant without
    the side's tower."""
    rerank = levers.rerank
    if rerank is None or rerank.by == "exact" or rerank.variant is None:
        return None
    where = f"{levers.where}rerank.variant"
    other = catalog.variant_named(rerank.variant)
    if other is None:
        raise NotFoundError(f"{where}: unknown variant {quoted(rerank.variant)}")
    if isinstance(side, VectorSide):
        raise LeverNotApplicableError(
            f"{where}: a client's vector is in the first variant's space only; re-rank "
            "by another variant takes a text, an image or an item"
        )
    tower = tower_of(side)
    if tower is not None:
        catalog.require_tower(other, tower, where)
    try:
        other_served = catalog.collection(other, served.name)
    except DomainError as error:
        raise LeverNotApplicableError(
            f"{where}: variant {quoted(other.name)} serves no collection "
            f"{quoted(served.name)} to re-rank by ({error})"
        ) from error
    return other, other_served


async def embed_lever_texts(
    embedder: LeverEmbedder,
    context: RequestContext,
    catalog: Catalog,
    searches: Sequence[tuple[SearchQuery, ServedVariant, ServedCollection]],
) -> EmbeddedTexts:
    """The vectors of the text sides of bundle searches with levers — each with its target
    (variant, collection) — in their collection's variant and in their re-rank's: one encoder
    job per variant, distinct texts once. Other sides are skipped; so is a search whose re-rank
    does not resolve, and a batch a text of which has no finite embedding: its own search then
    raises its error or embeds its text alone."""
    texts_of: dict[str, tuple[ServedVariant, list[str]]] = {}
    for query, variant, served in searches:
        side, levers = query.side, query.levers
        if not isinstance(side, TextSide):
            continue
        try:
            other = rerank_target(catalog, levers, served, side)
        except DomainError:
            continue
        wanted = [variant] if needs_vector(levers) else []
        wanted += [] if other is None else [other[0]]
        for each in wanted:
            texts_of.setdefault(each.name, (each, []))[1].append(side.text)
    embedded: EmbeddedTexts = {}
    for variant, texts in texts_of.values():
        distinct = list(dict.fromkeys(texts))
        try:
            rows = await embedder.embed_texts(context, variant, distinct)
        except InvalidQueryError:
            continue
        for text, row in zip(distinct, rows, strict=True):
            embedded[(variant.name, text)] = row
    return embedded


async def _side_vector(
    embedder: LeverEmbedder,
    context: RequestContext,
    catalog: Catalog,
    variant: ServedVariant,
    side: QuerySide,
    embedded: EmbeddedTexts | None,
) -> np.ndarray:
    """The unit vector of ``side`` in ``variant``'s space: embedded (or found in
    ``embedded``), stored, or given."""
    if isinstance(side, TextSide) and embedded is not None:
        found = embedded.get((variant.name, side.text))
        if found is not None:
            return found
    if isinstance(side, TextSide):
        rows = await embedder.embed_texts(context, variant, [side.text])
    elif isinstance(side, ImageSide):
        rows = await embedder.embed_images(context, variant, [side.payload])
    else:
        return embedder.given_vector(catalog, variant, side)
    vector: np.ndarray = rows[0]
    return vector

"""A search of a live collection: the query side made into a vector against the collection
(embedded by its variant, a client's vector of its dimension, or one of its stored items), then
an exact search of the collection as readers see it now (:mod:`service.engine.live_search`).

The bundle collections' search core is :class:`service.engine.searcher.Searcher`; it hands a
query naming a live collection to :func:`search_live`, with itself as the embedder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np
from starlette.concurrency import run_in_threadpool

from encoders.variant import Tower
from service.engine.catalog import Catalog, ServedVariant
from service.engine.embedder import Embedder
from service.engine.filtering import check_filter
from service.engine.lever_search import LeverInputs, live_page_with_levers
from service.engine.levers import keywords, needs_vector
from service.engine.live_collections import LiveEntry
from service.engine.live_search import live_page
from service.engine.pages import SearchPage
from service.engine.query import (
    ImageSide,
    ItemSide,
    QuerySide,
    SearchQuery,
    TextSide,
    VectorSide,
    normalised_query_vector,
    tower_of,
)
from service.exceptions import (
    DimensionMismatchError,
    LeverNotApplicableError,
    NotFoundError,
    SearchParamNotApplicableError,
    TowerMissingError,
    VariantMismatchError,
    quoted,
)
from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from storage.live.segment import SegmentView


def stored_live_vector(entry: LiveEntry, item_id: str) -> tuple[int, np.ndarray]:
    """(the sequence number read at, a copy of the stored vector) of ``item_id``;
    :class:`NotFoundError` when the collection holds no such item."""
    view = entry.collection.view()
    row = view.row_of(item_id)
    if row is None:
        raise NotFoundError(
            f"unknown item {quoted(item_id)} in collection {quoted(entry.collection.name)}"
        )
    return view.seq, view.vector(row)


async def search_live(
    embedder: Embedder,
    metrics: ServiceMetrics,
    context: RequestContext,
    catalog: Catalog,
    entry: LiveEntry,
    query: SearchQuery,
) -> tuple[int, SearchPage]:
    """(the sequence number it saw, the page): the search of a live collection. Its filter and
    parameters are checked, the side's vector made (embedded by the collection's variant, a
    client's vector of its dimension, or a stored item of it), then the collection as it stands
    now is searched exactly."""
    collection = entry.collection
    spec, page = collection.spec, query.page
    if query.variant is not None and query.variant != spec.variant:
        embedded = f"variant {spec.variant!r}" if spec.variant else "client vectors"
        raise VariantMismatchError(
            f"variant: live collection {quoted(spec.name)} holds {embedded}, not "
            f"{query.variant!r}: leave 'variant' out"
        )
    if page.filter is not None:
        check_filter(page.filter, entry.fields, page.where)
    override = page.override
    if override is not None and (override.nprobe is not None or override.ef_search is not None):
        raise SearchParamNotApplicableError(
            f"{page.params_where}: live collection {quoted(spec.name)} is searched exactly; "
            "nprobe and ef_search do not apply"
        )
    levers = query.levers
    search: Callable[[SegmentView, str], SearchPage]
    if levers.plain:
        vector = await live_vector(embedder, context, catalog, entry, query.side, query.side_where)
        search = partial(live_page, query=vector, page=page)
    else:
        search = await _lever_search(embedder, context, catalog, entry, query)
    started = time.perf_counter()
    view = collection.view()
    try:
        found = await run_in_threadpool(search, view, spec.name)
    finally:
        seconds = time.perf_counter() - started
        context.add_search_ms(seconds * 1000.0, started)
        metrics.search_seconds.labels(spec.variant or "", spec.name).observe(seconds)
    return view.seq, found


async def live_vector(
    embedder: Embedder,
    context: RequestContext,
    catalog: Catalog,
    entry: LiveEntry,
    side: QuerySide,
    where: str,
) -> np.ndarray:
    """The unit vector of a query side against a live collection: a text or an image
    embedded by the collection's variant (:class:`TowerMissingError` for a collection of
    client vectors, or a variant without the tower), a client's vector of the collection's
    dimension (:class:`DimensionMismatchError` otherwise), or a stored item of the same
    collection (:class:`NotFoundError` for another collection or an unknown id)."""
    spec = entry.collection.spec
    if isinstance(side, VectorSide):
        if len(side.values) != spec.dim:
            raise DimensionMismatchError(
                f"{side.where}: {len(side.values)} numbers, but live collection "
                f"{quoted(spec.name)} has dimension {spec.dim}"
            )
        return normalised_query_vector(side.values, spec.dim, side.where)
    if isinstance(side, ItemSide):
        if side.collection != spec.name:
            raise NotFoundError(
                f"{where}: a search of live collection {quoted(spec.name)} takes items of "
                f"that collection, not of {quoted(side.collection)}"
            )
        return stored_live_vector(entry, side.item_id)[1]
    tower = tower_of(side)
    assert tower is not None
    variant = live_variant(catalog, entry, tower, where)
    if isinstance(side, TextSide):
        rows = await embedder.embed_texts(context, variant, [side.text])
    else:
        assert isinstance(side, ImageSide)
        rows = await embedder.embed_images(context, variant, [side.payload])
    embedded: np.ndarray = rows[0]
    return embedded


async def _lever_search(
    embedder: Embedder,
    context: RequestContext,
    catalog: Catalog,
    entry: LiveEntry,
    query: SearchQuery,
) -> Callable[[SegmentView, str], SearchPage]:
    """The search of a live collection with quality levers, its keywords, field and re-rank
    checked and its vector made (:mod:`service.engine.levers`)."""
    levers, side, spec = query.levers, query.side, entry.collection.spec
    fields = {name: column.type for name, column in entry.fields.columns.items()}
    text = side.text if isinstance(side, TextSide) else None
    terms, field = keywords(levers, text, fields, live=True)
    if levers.rerank is not None and levers.rerank.by == "variant":
        raise LeverNotApplicableError(
            f"{levers.where}rerank: live collection {quoted(spec.name)} is embedded by one "
            "variant only; re-rank it by its exact vectors (by: exact)"
        )
    levers.depth(query.page.offset, query.page.k)
    vector = None
    if needs_vector(levers):
        vector = await live_vector(embedder, context, catalog, entry, side, query.side_where)
    inputs = LeverInputs(vector=vector, terms=terms, field=field)
    lexical, page = entry.lexical, query.page

    def search(view: SegmentView, name: str) -> SearchPage:
        return live_page_with_levers(view, name, lexical, page, levers, inputs)

    return search


def live_variant(catalog: Catalog, entry: LiveEntry, tower: Tower, where: str) -> ServedVariant:
    """The served variant that embeds a live collection's ``tower`` inputs;
    :class:`TowerMissingError` for a collection of client vectors or a variant without
    the tower, :class:`NotFoundError` when its variant is not served."""
    spec = entry.collection.spec
    if spec.variant is None:
        raise TowerMissingError(
            f"{where}: live collection {quoted(spec.name)} holds client vectors (no variant "
            "embeds it): send a vector or an item"
        )
    variant = catalog.variant_named(spec.variant)
    if variant is None:
        raise NotFoundError(
            f"{where}: the variant {spec.variant!r} of live collection {quoted(spec.name)} is "
            "not served"
        )
    catalog.require_tower(variant, tower, where)
    return variant

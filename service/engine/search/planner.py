"""Every search planned once: its target, its checks, and the vectors it needs.

:func:`plan_search` turns a :class:`~service.engine.query.query.SearchQuery` into a
:class:`SearchPlan` on the event loop, before anything is encoded:

1. **target** — the collection view (:mod:`service.engine.collection.collection_view`) the query
   names: a live collection by its name, else a sharded collection by its name
   (:mod:`service.engine.collection.sharded_collections`), else a bundle collection through
   :meth:`Catalog.locate` (a bare name finds the one served collection whose variant can answer
   the side), and the :class:`VectorSpace` its query side is turned into;
2. **checks** — the filter against the view's fields, the search parameters against its index,
   the keywords and their field, the window (where a ranking is cut to it: a hybrid search or a
   re-rank), the re-rank's variant and its view of the same items;
3. **vectors** — which it needs: the side in the collection's space (a dense leg, or a re-rank by
   the exact vectors), and in the re-rank variant's.

The searcher (:mod:`service.engine.search.searcher`) makes the vectors
(:mod:`service.engine.search.side_vectors`) and the page executor
(:mod:`service.engine.search.page_executor`) runs the plan. Errors are domain errors, raised in that
order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from encoders.variant import Tower
from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import Catalog, ServedCollection, ServedVariant
from service.engine.collection.collection_view import CollectionView
from service.engine.collection.live_collections import LiveCollections, LiveEntry
from service.engine.collection.live_view import LiveView
from service.engine.collection.sharded_collections import ShardedCollection, ShardedCollections
from service.engine.query.filtering import check_filter
from service.engine.query.levers import keywords, needs_vector
from service.engine.query.query import (
    ItemSide,
    QuerySide,
    SearchQuery,
    TextSide,
    VectorSide,
    tower_of,
)
from service.engine.rank.search_params import EffectiveParams
from service.exceptions import (
    DomainError,
    LeverNotApplicableError,
    NotFoundError,
    TowerMissingError,
    VariantMismatchError,
    quoted,
)


@dataclass(frozen=True)
class VectorSpace:
    """What a query side is turned into a vector of: ``variant``'s space (None: a live
    collection of client vectors), of dimension ``dim``. ``live`` names the live collection
    searched (its items are the only stored items a side may name); None for a bundle's, whose
    side may name an item of any collection of the variant."""

    variant: ServedVariant | None
    dim: int
    live: str | None = None
    items: CollectionView | None = None
    """The view whose stored items a side may name, where that is the searched collection's
    alone and reading them is blocking (a sharded collection's)."""


@dataclass(frozen=True)
class SearchPlan:
    """A search ready to run: its query, view and the facts the executor and the answer need."""

    query: SearchQuery
    view: CollectionView
    space: VectorSpace
    """Where the query side's vector lives (the collection's variant, or the live collection)."""
    params: EffectiveParams
    terms: list[str] | None
    """The keywords of a lexical or hybrid search (None: dense)."""
    field: str | None
    """The field the keywords are searched in."""
    depth: int
    """Rows of the first-stage ranking: ``window`` for a hybrid search or a re-rank, else
    ``offset + k``."""
    wants_vector: bool
    """Whether the side's vector in :attr:`space` is needed."""
    rerank: tuple[VectorSpace, CollectionView] | None = None
    """A re-rank by another variant: its space and its view of the same items."""
    bundle: str = ""
    """The bundle the collection came from (a live collection's own name)."""
    embedded_by: str | None = None
    """The variant that embeds the collection (None: a live collection of client vectors)."""

    @property
    def plain(self) -> bool:
        """One dense leg, no re-rank: the fast path (the search follows the encoder batch)."""
        return self.query.levers.plain

    @property
    def collection(self) -> str:
        """The collection's name."""
        return self.view.name


def plan_search(
    catalog: Catalog,
    live: LiveCollections | None,
    query: SearchQuery,
    faiss_threads: int = 0,
    sharded: ShardedCollections | None = None,
) -> SearchPlan:
    """The plan of ``query`` (see the module docstring): :class:`NotFoundError`,
    :class:`AmbiguousNameError`, :class:`VariantMismatchError`, :class:`TowerMissingError` for
    the target; :class:`FilterNotApplicableError`, :class:`InvalidQueryError`,
    :class:`SearchParamNotApplicableError`, :class:`LeverNotApplicableError` for the checks."""
    entry = None if live is None else live.get(query.collection)
    shards = None if sharded is None or entry is not None else sharded.get(query.collection)
    if shards is not None:
        assert sharded is not None
        return _sharded_plan(catalog, sharded, shards, query)
    if entry is not None:
        view: CollectionView
        view, space, bundle = _live_target(entry, query)
        served, embedded_by = None, entry.collection.spec.variant
    else:
        variant, served = target(
            catalog, query.variant, query.collection, query.side, query.side_where
        )
        view = BundleView(served, faiss_threads)
        space, bundle = VectorSpace(variant, variant.dim), served.bundle
        embedded_by = variant.name
    plan = checked_plan(view, query, space, bundle=bundle, embedded_by=embedded_by)
    levers = query.levers
    if served is not None:
        rerank = _rerank_target(catalog, query, served, faiss_threads)
        if rerank is not None:
            plan = replace(plan, rerank=rerank)
    elif levers.rerank is not None and levers.rerank.by == "variant":
        raise LeverNotApplicableError(
            f"{levers.where}rerank: live collection {quoted(view.name)} is embedded by one "
            "variant only; re-rank it by its exact vectors (by: exact)",
            param=f"{levers.where}rerank",
        )
    if plan.wants_vector and entry is not None:
        plan = replace(plan, space=_live_space(catalog, entry, query.side, query.side_where))
    return plan


def _field(query: SearchQuery, name: str) -> str:
    """Where the search's own field ``name`` is in the request (``searches.3.variant``)."""
    return f"{query.where}.{name}" if query.where else name


def checked_plan(
    view: CollectionView,
    query: SearchQuery,
    space: VectorSpace,
    *,
    bundle: str = "",
    embedded_by: str | None = None,
) -> SearchPlan:
    """The plan of ``query`` on ``view`` once its checks pass: the filter against the view's
    fields, the search parameters against its index, the keywords and their field, the window
    where a ranking is cut to it (a hybrid search or a re-rank). Any view: a new kind of
    collection is planned here unchanged."""
    levers, page, side = query.levers, query.page, query.side
    if page.filter is not None:
        check_filter(page.filter, view.filterable, page.where)
    params = view.params(page.override, page.params_where)
    text = side.text if isinstance(side, TextSide) else None
    terms, field = keywords(levers, text, view.fields, live=view.live)
    depth = page.offset + page.k
    if levers.mode == "hybrid" or levers.rerank is not None:
        depth = levers.depth(page.offset, page.k)
    return SearchPlan(
        query=query,
        view=view,
        space=space,
        params=params,
        terms=terms,
        field=field,
        depth=depth,
        wants_vector=needs_vector(levers),
        bundle=bundle,
        embedded_by=embedded_by,
    )


def _sharded_plan(
    catalog: Catalog, sharded: ShardedCollections, shards: ShardedCollection, query: SearchQuery
) -> SearchPlan:
    """The plan of ``query`` on a sharded collection: a view of its shards, in its variant's
    space where the side needs a tower. :class:`VariantMismatchError` for another variant,
    :class:`TowerMissingError` when its variant is not served with the side's tower,
    :class:`LeverNotApplicableError` for a re-rank by another variant."""
    if query.variant is not None and query.variant != shards.variant:
        raise VariantMismatchError(
            f"variant: sharded collection {quoted(shards.name)} was embedded by variant "
            f"{shards.variant!r}, not {query.variant!r}: leave 'variant' out",
            param=_field(query, "variant"),
        )
    levers = query.levers
    if levers.rerank is not None and levers.rerank.by == "variant":
        raise LeverNotApplicableError(
            f"{levers.where}rerank: sharded collection {quoted(shards.name)} holds one "
            "variant's vectors; re-rank it by its exact vectors (by: exact)",
            param=f"{levers.where}rerank",
        )
    side = query.side
    if isinstance(side, ItemSide) and sharded.get(side.collection) is not shards:
        raise NotFoundError(
            f"{query.side_where}: a search of sharded collection {quoted(shards.name)} takes "
            f"items of that collection, not of {quoted(side.collection)}",
            param=f"{query.side_where}.collection",
        )
    tower = tower_of(query.side)
    variant = (
        catalog.variant_named(shards.variant)
        if tower is None
        else sharded_variant(catalog, shards, tower, query.side_where)
    )
    view = shards.view()
    space = VectorSpace(variant, shards.dim, items=view)
    return checked_plan(view, query, space, bundle=shards.bundle, embedded_by=shards.variant)


def sharded_variant(
    catalog: Catalog, shards: ShardedCollection, tower: Tower, where: str
) -> ServedVariant:
    """The served variant whose ``tower`` embeds the inputs of a sharded collection;
    :class:`TowerMissingError` when the collection is served without its variant's encoders or
    the variant lacks the tower."""
    variant = catalog.variant_named(shards.variant)
    if variant is None:
        raise TowerMissingError(
            f"{where}: sharded collection {quoted(shards.name)} is served without its variant "
            f"{shards.variant!r}: send a vector or an item",
            param=where,
        )
    catalog.require_tower(variant, tower, where)
    return variant


def _live_target(entry: LiveEntry, query: SearchQuery) -> tuple[LiveView, VectorSpace, str]:
    """The view of a live collection as it stands now; :class:`VariantMismatchError` when the
    query names another variant than the collection's."""
    collection = entry.collection
    spec = collection.spec
    if query.variant is not None and query.variant != spec.variant:
        embedded = f"variant {spec.variant!r}" if spec.variant else "client vectors"
        raise VariantMismatchError(
            f"variant: live collection {quoted(spec.name)} holds {embedded}, not "
            f"{query.variant!r}: leave 'variant' out",
            param=_field(query, "variant"),
        )
    view = LiveView(collection.view(), spec.name, entry.fields, entry.lexical)
    return view, VectorSpace(None, spec.dim, spec.name), spec.name


def _live_space(catalog: Catalog, entry: LiveEntry, side: QuerySide, where: str) -> VectorSpace:
    """The space of a live collection's query side: its variant's where the side needs a
    tower (:func:`live_variant`), else the collection's dimension."""
    spec = entry.collection.spec
    tower = tower_of(side)
    variant = None if tower is None else live_variant(catalog, entry, tower, where)
    return VectorSpace(variant, spec.dim, spec.name)


def live_variant(catalog: Catalog, entry: LiveEntry, tower: Tower, where: str) -> ServedVariant:
    """The served variant that embeds a live collection's ``tower`` inputs;
    :class:`TowerMissingError` for a collection of client vectors or a variant without
    the tower, :class:`NotFoundError` when its variant is not served."""
    spec = entry.collection.spec
    if spec.variant is None:
        raise TowerMissingError(
            f"{where}: live collection {quoted(spec.name)} holds client vectors (no variant "
            "embeds it): send a vector or an item",
            param=where,
        )
    variant = catalog.variant_named(spec.variant)
    if variant is None:
        raise NotFoundError(
            f"{where}: the variant {spec.variant!r} of live collection {quoted(spec.name)} is "
            "not served",
            param=where,
        )
    catalog.require_tower(variant, tower, where)
    return variant


def can_answer(catalog: Catalog, need: QuerySide | Tower, variant: ServedVariant) -> bool:
    """Whether ``variant`` can answer a query side: it has the side's tower, the client's vector
    has its dimension, or it serves the stored item."""
    if isinstance(need, str):
        return need in variant.towers
    tower = tower_of(need)
    if tower is not None:
        return tower in variant.towers
    if isinstance(need, VectorSide):
        return len(need.values) == variant.dim
    assert isinstance(need, ItemSide)
    try:
        served = catalog.collection(variant, need.collection)
    except DomainError:
        return False
    return need.item_id in served.collection.row_of


def target(
    catalog: Catalog,
    variant_name: str | None,
    collection: str,
    need: QuerySide | Tower,
    where: str,
) -> tuple[ServedVariant, ServedCollection]:
    """The variant and bundle collection a search names (see :meth:`Catalog.locate`): a bare
    collection name without a variant finds the one served collection whose variant can
    answer ``need`` (a query side, or the tower an upload needs). :class:`NotFoundError` for
    unknown names, :class:`AmbiguousNameError` for an ambiguous name,
    :class:`VariantMismatchError` for a variant that does not embed the collection,
    :class:`TowerMissingError` for a variant without the tower the side needs; ``where``
    names the side in that message."""
    variant, served = catalog.locate(variant_name, collection, partial(can_answer, catalog, need))
    tower = need if isinstance(need, str) else tower_of(need)
    if tower is not None:
        catalog.require_tower(variant, tower, where)
    return variant, served


def _rerank_target(
    catalog: Catalog, query: SearchQuery, served: ServedCollection, faiss_threads: int
) -> tuple[VectorSpace, CollectionView] | None:
    """The space, and the view of the same items, that a re-rank by another variant reads;
    None for no re-rank or one by the exact stored vectors. :class:`NotFoundError` for an
    unknown variant, :class:`LeverNotApplicableError` for a client's vector or a variant that
    serves no collection of that name, :class:`TowerMissingError` for a variant without the
    side's tower."""
    levers, side = query.levers, query.side
    rerank = levers.rerank
    if rerank is None or rerank.by == "exact" or rerank.variant is None:
        return None
    where = f"{levers.where}rerank.variant"
    other = catalog.variant_named(rerank.variant)
    if other is None:
        raise NotFoundError(f"{where}: unknown variant {quoted(rerank.variant)}", param=where)
    if isinstance(side, VectorSide):
        raise LeverNotApplicableError(
            f"{where}: a client's vector is in the first variant's space only; re-rank "
            "by another variant takes a text, an image or an item",
            param=where,
        )
    tower = tower_of(side)
    if tower is not None:
        catalog.require_tower(other, tower, where)
    try:
        other_served = catalog.collection(other, served.name)
    except DomainError as error:
        raise LeverNotApplicableError(
            f"{where}: variant {quoted(other.name)} serves no collection "
            f"{quoted(served.name)} to re-rank by ({error})",
            param=where,
        ) from error
    return VectorSpace(other, other.dim), BundleView(other_served, faiss_threads)

"""The search core: one path from a query to ranked hits, for every kind of collection and
every lever.

The HTTP layer makes one :class:`~service.engine.query.query.SearchQuery` of a request and calls
:meth:`Searcher.search` once (or :meth:`Searcher.search_many` for a bulk request). Every search
takes the same three steps: it is planned (:func:`service.engine.search.planner.plan_search`:
target, checks, the vectors it needs), its vectors are made
(:mod:`service.engine.search.side_vectors`), and its page is made by the one executor
(:mod:`service.engine.search.page_executor`) over the collection's view. A plain dense search of a
text or an image runs on the encoder batch's worker thread right after the batch (its follow-up: one
trip off the event loop instead of two); any other on a worker thread of the pool. Scores and
embeddings use the same vectors without the search.

Each stage adds its time to the request's context (for the ``x-timing-*`` headers, the access
log and ``timings_ms``) and to the stage histograms. Errors are domain errors
(:mod:`service.exceptions`); the HTTP layer maps them to statuses.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from starlette.concurrency import run_in_threadpool

from encoders.image_decode import ImageLimits
from encoders.variant import Tower
from service.engine.collection.catalog import Catalog, ServedVariant
from service.engine.collection.live_collections import LiveCollections, LiveEntry
from service.engine.collection.sharded_collections import ShardedCollections
from service.engine.encode.query_cache import QueryCache
from service.engine.query.images import ImagePayload
from service.engine.query.query import (
    ImageSide,
    ItemSide,
    QuerySide,
    SearchQuery,
    TextSide,
    VectorSide,
    tower_of,
    where_of,
)
from service.engine.search.page_executor import PageRun, Vectors, execute, run_together
from service.engine.search.pages import SearchPage
from service.engine.search.planner import (
    SearchPlan,
    VectorSpace,
    can_answer,
    live_variant,
    plan_search,
    sharded_variant,
    target,
)
from service.engine.search.side_vectors import EmbeddedTexts, SideVectors
from service.exceptions import (
    DomainError,
    InvalidQueryError,
    OverloadedError,
    ShuttingDownError,
)
from service.metrics import ServiceMetrics
from service.request_context import RequestContext


@dataclass(frozen=True)
class Answer:
    """A search's page and where it came from: the collection, the variant that embeds it (None
    for a live collection of client vectors), the bundle and version (a live collection's own
    name, and ``live@<seq>``: the log sequence the search saw)."""

    collection: str
    variant: str | None
    bundle: str
    bundle_version: str
    page: SearchPage
    missing: tuple[str, ...] = ()
    """The shards a sharded collection answered without (its policy ``partial``)."""

    @classmethod
    def of(cls, plan: SearchPlan, page: SearchPage) -> Answer:
        """The answer of ``plan``'s search."""
        view = plan.view
        return cls(plan.collection, plan.embedded_by, plan.bundle, view.version, page, view.missing)


class Searcher:
    """Searches, scores and embeds for one app, timing each stage.

    ``image_limits`` bound every decoded image; ``faiss_threads`` > 0 caps faiss's OpenMP
    threads on the threads that search (0: faiss's default).
    """

    def __init__(
        self, metrics: ServiceMetrics, image_limits: ImageLimits, faiss_threads: int
    ) -> None:
        self._metrics = metrics
        self._faiss_threads = faiss_threads
        self.sides = SideVectors(metrics, image_limits)
        """Turns query sides into vectors (texts, images, items, clients' vectors)."""
        self.sharded: ShardedCollections | None = None
        """The collections held by shards in other processes (the sharded mode)."""

    @property
    def live(self) -> LiveCollections | None:
        """The live collections searches may name (set when the app's lifespan opens them)."""
        return self.sides.live

    @live.setter
    def live(self, live: LiveCollections | None) -> None:
        self.sides.live = live

    @property
    def query_cache(self) -> QueryCache | None:
        """The query-embedding cache (set when ``query_cache_entries`` is above 0)."""
        return self.sides.query_cache

    @query_cache.setter
    def query_cache(self, cache: QueryCache | None) -> None:
        self.sides.query_cache = cache

    def vector_dims(self, catalog: Catalog) -> set[int]:
        """The dimensions a client's vector may have: every served variant's and every live
        collection's."""
        dims = {variant.dim for variant in catalog.variants}
        if self.live is not None:
            dims |= {entry.collection.spec.dim for entry in self.live.entries}
        if self.sharded is not None:
            dims |= {entry.dim for entry in self.sharded.entries}
        return dims

    def live_entry(self, name: str) -> LiveEntry | None:
        """The live collection called ``name``, if there is one."""
        live = self.live
        return None if live is None else live.get(name)

    target = staticmethod(target)
    """The variant and bundle collection a search names (:func:`.planner.target`)."""

    def require_tower(
        self, catalog: Catalog, variant_name: str | None, collection: str, tower: Tower, where: str
    ) -> None:
        """Refuse, before any input is read, a search of ``collection`` by a side that needs
        ``tower``: the errors the planner would raise for its target (a live, sharded or bundle
        collection)."""
        live = self.live_entry(collection)
        if live is not None:
            live_variant(catalog, live, tower, where)
            return
        shards = None if self.sharded is None else self.sharded.get(collection)
        if shards is not None:
            sharded_variant(catalog, shards, tower, where)
            return
        target(catalog, variant_name, collection, tower, where)

    @staticmethod
    def variant_for(
        catalog: Catalog, variant_name: str | None, sides: Sequence[QuerySide]
    ) -> ServedVariant:
        """The variant a request of ``sides`` names, or — naming none where there is no
        default — the one variant that can answer every side (see
        :meth:`Catalog.resolve_variant_for`)."""

        def fits(variant: ServedVariant) -> bool:
            return all(can_answer(catalog, side, variant) for side in sides)

        return catalog.resolve_variant_for(variant_name, fits)

    # -- search -----------------------------------------------------------------------------------

    def plan(self, catalog: Catalog, query: SearchQuery) -> SearchPlan:
        """The plan of ``query`` (:func:`service.engine.search.planner.plan_search`)."""
        return plan_search(catalog, self.live, query, self._faiss_threads, self.sharded)

    async def search(self, context: RequestContext, catalog: Catalog, query: SearchQuery) -> Answer:
        """One page of hits for ``query``: planned (every check before anything is encoded),
        its vectors made, its page made on the thread that embedded the side (a plain dense
        search of a text or an image) or the pool's. Raises the planner's refusals
        (:func:`service.engine.search.planner.plan_search`), :class:`DimensionMismatchError` for a
        vector of another dimension, :class:`InvalidQueryError` for a vector of zero norm or an
        input without a finite embedding, :class:`ImageRefusedError`,
        :class:`OverloadedError` or :class:`ShuttingDownError` as the batchers do."""
        plan = self.plan(catalog, query)
        side, variant = query.side, plan.space.variant
        follow = plan.plain and not plan.view.remote
        if follow and variant is not None and isinstance(side, TextSide | ImageSide):
            cached = (
                self.sides.cached_text(variant, side.text) if isinstance(side, TextSide) else None
            )
            if cached is None:
                result = await self.sides.follow(context, variant, side, PageRun(plan))
                self._record_search(context, plan, result.follow_up_started_s, result.follow_up_s)
                return Answer.of(plan, cast("SearchPage", result.follow_up))
            vectors = Vectors(cached)
        else:
            vectors = await self._vectors_of(context, catalog, plan)
        started = time.perf_counter()
        try:
            page = await run_in_threadpool(execute, plan, vectors)
        finally:
            self._record_search(context, plan, started, time.perf_counter() - started)
        return Answer.of(plan, page)

    async def _vectors_of(
        self,
        context: RequestContext,
        catalog: Catalog,
        plan: SearchPlan,
        embedded: EmbeddedTexts | None = None,
    ) -> Vectors:
        """The vectors ``plan`` asked for (texts found in ``embedded`` when there)."""
        side, where = plan.query.side, plan.query.side_where
        query = None
        if plan.wants_vector:
            query = await self.sides.vector(context, catalog, plan.space, side, where, embedded)
        other = None
        if plan.rerank is not None:
            space = plan.rerank[0]
            other = await self.sides.vector(context, catalog, space, side, where, embedded)
        return Vectors(query, other)

    async def search_many(
        self, context: RequestContext, catalog: Catalog, queries: Sequence[SearchQuery]
    ) -> list[Answer | DomainError]:
        """Many searches in one go, answered in order; a search that fails gets its own domain
        error in its place and the others go on.

        Every search is planned first; then each variant's texts are encoded in one batcher job
        (distinct texts once, re-rank variants' too), images one job each, and the plain
        unfiltered searches of each collection run as one grouped search
        (:func:`service.engine.search.page_executor.run_together`). Refusals that concern the whole
        request (:class:`OverloadedError`, :class:`ShuttingDownError`) are raised."""
        outcome: list[Answer | DomainError | None] = [None] * len(queries)
        plans: dict[int, SearchPlan] = {}
        started = time.perf_counter()
        for position, query in enumerate(queries):
            try:
                plans[position] = self.plan(catalog, query)
            except DomainError as error:
                outcome[position] = error
        context.add_search_ms((time.perf_counter() - started) * 1000.0, started)
        embedded = await self._embed_texts_ahead(context, plans)
        vectors: dict[int, Vectors] = {}
        for position, plan in list(plans.items()):
            try:
                vectors[position] = await self._vectors_of(context, catalog, plan, embedded)
            except (OverloadedError, ShuttingDownError):
                raise
            except DomainError as error:
                outcome[position] = error
                del plans[position]
        started = time.perf_counter()
        try:
            pages = await run_in_threadpool(_pages_of, plans, vectors)
        finally:
            context.add_search_ms((time.perf_counter() - started) * 1000.0, started)
        for position, page in pages.items():
            outcome[position] = (
                page if isinstance(page, DomainError) else Answer.of(plans[position], page)
            )
        answers = [answer for answer in outcome if answer is not None]
        if len(answers) != len(queries):
            raise RuntimeError("a bulk search was neither answered nor refused")
        return answers

    async def _embed_texts_ahead(
        self, context: RequestContext, plans: dict[int, SearchPlan]
    ) -> EmbeddedTexts:
        """The vectors of the planned searches' text sides, in their collection's variant and
        in their re-rank's: one encoder job per variant, distinct texts once. A batch a text of
        which has no finite embedding is embedded text by text, leaving that text out (its own
        search then raises its error)."""
        texts_of: dict[str, tuple[ServedVariant, list[str]]] = {}
        for plan in plans.values():
            side = plan.query.side
            if not isinstance(side, TextSide):
                continue
            spaces = [plan.space] if plan.wants_vector else []
            spaces += [] if plan.rerank is None else [plan.rerank[0]]
            for space in spaces:
                if space.variant is not None:
                    texts_of.setdefault(space.variant.name, (space.variant, []))[1].append(
                        side.text
                    )
        embedded: EmbeddedTexts = {}
        for variant, texts in texts_of.values():
            distinct = list(dict.fromkeys(texts))
            try:
                rows = await self.sides.embed_texts(context, variant, distinct)
            except InvalidQueryError:
                rows_of: dict[str, np.ndarray] = {}
                for text in distinct:
                    with contextlib.suppress(InvalidQueryError):
                        rows_of[text] = (await self.sides.embed_texts(context, variant, [text]))[0]
            else:
                rows_of = dict(zip(distinct, rows, strict=True))
            for text, row in rows_of.items():
                embedded[(variant.name, text)] = row
        return embedded

    # -- score and embed --------------------------------------------------------------------------

    async def vectors(
        self,
        context: RequestContext,
        catalog: Catalog,
        variant: ServedVariant,
        sides: Sequence[QuerySide],
    ) -> tuple[np.ndarray, set[str]]:
        """The vector of each side, float32 ``[len(sides), dim]``, and the bundle versions whose
        stored vectors were used.

        Towers are checked and stored items and client vectors looked up before anything is
        decoded or encoded; each distinct image (same payload) is then decoded and embedded
        once, images before texts, and each distinct text encoded once (CxC pairs reuse the
        same captions heavily)."""
        for side in sides:
            tower = tower_of(side)
            if tower is not None:
                catalog.require_tower(variant, tower, where_of(side, ""))
        started = time.perf_counter()
        versions: set[str] = set()
        given: dict[int, np.ndarray] = {}
        space = VectorSpace(variant, variant.dim)
        for index, side in enumerate(sides):
            if isinstance(side, ItemSide | VectorSide):
                given[index] = self.sides.given(catalog, space, side, versions=versions)
        context.add_search_ms((time.perf_counter() - started) * 1000.0, started)

        first_payload: dict[str | bytes, ImagePayload] = {}
        for side in sides:
            if isinstance(side, ImageSide):
                first_payload.setdefault(side.payload.data, side.payload)
        image_slot = {data: slot for slot, data in enumerate(first_payload)}
        image_vectors = await self.embed_images(context, variant, list(first_payload.values()))
        texts = list(dict.fromkeys(side.text for side in sides if isinstance(side, TextSide)))
        text_slot = {text: slot for slot, text in enumerate(texts)}
        text_vectors = await self.embed_texts(context, variant, texts)

        def vector_of(index: int, side: QuerySide) -> np.ndarray:
            if isinstance(side, TextSide):
                row: np.ndarray = text_vectors[text_slot[side.text]]
            elif isinstance(side, ImageSide):
                row = image_vectors[image_slot[side.payload.data]]
            else:
                row = given[index]
            return row

        rows = [vector_of(index, side) for index, side in enumerate(sides)]
        return np.stack(rows).astype(np.float32, copy=False), versions

    async def embed_texts(
        self, context: RequestContext, variant: ServedVariant, texts: Sequence[str]
    ) -> np.ndarray:
        """Embed ``texts`` (:meth:`SideVectors.embed_texts`)."""
        return await self.sides.embed_texts(context, variant, texts)

    async def embed_images(
        self, context: RequestContext, variant: ServedVariant, payloads: Sequence[ImagePayload]
    ) -> np.ndarray:
        """Decode and embed ``payloads`` (:meth:`SideVectors.embed_images`)."""
        return await self.sides.embed_images(context, variant, payloads)

    def _record_search(
        self, context: RequestContext, plan: SearchPlan, started: float, seconds: float
    ) -> None:
        context.add_search_ms(seconds * 1000.0, started)
        self._metrics.search_seconds.labels(plan.embedded_by or "", plan.collection).observe(
            seconds
        )


def _pages_of(
    plans: dict[int, SearchPlan], vectors: dict[int, Vectors]
) -> dict[int, SearchPage | DomainError]:
    """Blocking: the page of every planned search; plain unfiltered searches of one view and
    batch key run together, as the searches of one encoder batch do (:class:`PageRun`)."""
    found: dict[int, SearchPage | DomainError] = {}
    groups: dict[object, list[int]] = {}
    for position, plan in plans.items():
        group = PageRun(plan).group
        if group is None:
            try:
                found[position] = execute(plan, vectors[position])
            except DomainError as error:
                found[position] = error
        else:
            groups.setdefault(group, []).append(position)
    for positions in groups.values():
        together = [plans[position] for position in positions]
        queries = [cast("np.ndarray", vectors[position].query) for position in positions]
        for position, page in zip(positions, run_together(together, queries), strict=True):
            found[position] = page
    return found

"""The search core: one path from a query to ranked hits, for every kind of query side.

The HTTP layer makes one :class:`~service.engine.query.SearchQuery` of a request and calls
:meth:`Searcher.search` once. Every search takes the same steps: resolve the variant and
collection (:meth:`Searcher.target`, which also checks the variant has the tower the side
needs), check the filter and search parameters, get the side's vector, then search the
collection with the tie rule (:func:`service.engine.knn.nearest`, through
:class:`~service.engine.pages.PageSearch`). A text or an image is embedded through its
tower's batcher, and the search then runs on the batcher's worker thread right after the batch (its
follow-up: one trip off the event loop instead of two); an item's stored vector or a client's vector
is searched on a worker thread. Scores and embeddings use the same steps without the search.
A search of a live collection goes to :mod:`service.engine.live_queries`, and a bundle search
with quality levers (keywords, fusion, re-rank) to :mod:`service.engine.lever_queries`; both
take the Searcher as their embedder.

Each stage adds its time to the request's context (for the ``x-timing-*`` headers, the access
log and ``timings_ms``) and to the stage histograms. Errors are domain errors
(:mod:`service.exceptions`); the HTTP layer maps them to statuses.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import cast

import numpy as np
from PIL.Image import Image
from starlette.concurrency import run_in_threadpool

from encoders.image_decode import ImageLimits
from encoders.variant import Tower
from service.engine.batcher import EncodeResult, FollowUp
from service.engine.catalog import Catalog, ServedCollection, ServedVariant
from service.engine.filtering import check_filter
from service.engine.images import ImagePayload, decode_payload, payload_bytes
from service.engine.lever_queries import EmbeddedTexts, embed_lever_texts, plan_lever_search
from service.engine.live_collections import LiveCollections, LiveEntry
from service.engine.live_queries import search_live, stored_live_vector
from service.engine.pages import PageSearch, SearchPage
from service.engine.query import (
    ImageSide,
    ItemSide,
    PageRequest,
    QuerySide,
    SearchQuery,
    TextSide,
    VectorSide,
    normalised_query_vector,
    tower_of,
    where_of,
)
from service.engine.query_cache import QueryCache
from service.engine.search_params import resolve
from service.exceptions import (
    DimensionMismatchError,
    DomainError,
    ImageRefusedError,
    InvalidQueryError,
    NotFoundError,
    OverloadedError,
    ShuttingDownError,
    quoted,
)
from service.metrics import ServiceMetrics
from service.request_context import RequestContext


def _can_answer(catalog: Catalog, need: QuerySide | Tower, variant: ServedVariant) -> bool:
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

    @classmethod
    def of(cls, variant: ServedVariant, served: ServedCollection, page: SearchPage) -> Answer:
        """The answer of a bundle collection's search."""
        return cls(served.name, variant.name, served.bundle, served.bundle_version, page)


_Plan = tuple[ServedVariant, PageSearch]
"""A bulk search ready to run: its variant, and its page's search (target, filter and search
parameters checked)."""


class Searcher:
    """Searches, scores and embeds for one app, timing each stage.

    ``image_limits`` bound every decoded image; ``faiss_threads`` > 0 caps faiss's OpenMP
    threads on the threads that search (0: faiss's default).
    """

    def __init__(
        self, metrics: ServiceMetrics, image_limits: ImageLimits, faiss_threads: int
    ) -> None:
        self._metrics = metrics
        self._image_limits = image_limits
        self._faiss_threads = faiss_threads
        self.live: LiveCollections | None = None
        """The live collections searches may name (set when the app's lifespan opens them)."""
        self.query_cache: QueryCache | None = None
        """The query-embedding cache (set when ``query_cache_entries`` is above 0)."""

    def vector_dims(self, catalog: Catalog) -> set[int]:
        """The dimensions a client's vector may have: every served variant's and every live
        collection's."""
        dims = {variant.dim for variant in catalog.variants}
        if self.live is not None:
            dims |= {entry.collection.spec.dim for entry in self.live.entries}
        return dims

    def live_entry(self, name: str) -> LiveEntry | None:
        """The live collection called ``name``, if there is one."""
        return None if self.live is None else self.live.get(name)

    # -- search -----------------------------------------------------------------------------------

    @staticmethod
    def target(
        catalog: Catalog,
        variant_name: str | None,
        collection: str,
        need: QuerySide | Tower,
        where: str,
    ) -> tuple[ServedVariant, ServedCollection]:
        """The variant and collection a search names (see :meth:`Catalog.locate`): a bare
        collection name without a variant finds the one served collection whose variant can
        answer ``need`` (a query side, or the tower an upload needs). :class:`NotFoundError` for
        unknown names, :class:`AmbiguousNameError` for an ambiguous name,
        :class:`VariantMismatchError` for a variant that does not embed the collection,
        :class:`TowerMissingError` for a variant without the tower the side needs; ``where``
        names the side in that message."""
        variant, served = catalog.locate(
            variant_name, collection, partial(_can_answer, catalog, need)
        )
        tower = need if isinstance(need, str) else tower_of(need)
        if tower is not None:
            catalog.require_tower(variant, tower, where)
        return variant, served

    @staticmethod
    def variant_for(
        catalog: Catalog, variant_name: str | None, sides: Sequence[QuerySide]
    ) -> ServedVariant:
        """The variant a request of ``sides`` names, or — naming none where there is no
        default — the one variant that can answer every side (see
        :meth:`Catalog.resolve_variant_for`)."""

        def fits(variant: ServedVariant) -> bool:
            return all(_can_answer(catalog, side, variant) for side in sides)

        return catalog.resolve_variant_for(variant_name, fits)

    async def search(self, context: RequestContext, catalog: Catalog, query: SearchQuery) -> Answer:
        """One page of hits for ``query`` (see :func:`service.engine.knn.nearest` for the tie
        rule, exclusion, selection and clamping): its target (:meth:`target`), its filter and
        search parameters are checked before anything is encoded; the search then runs on the
        thread that embedded the side (or the pool's, for an item or a vector), where the
        page's mask is made. Raises :class:`NotFoundError` for an unknown variant, collection
        or item, the refusals of :meth:`target`, :class:`FilterNotApplicableError` for a filter
        that does not fit the collection, :class:`DimensionMismatchError` for a vector of
        another dimension, :class:`InvalidQueryError` for a vector of zero norm or an input
        without a finite embedding, :class:`SearchParamNotApplicableError`
        for search parameters the index does not take, :class:`ImageRefusedError`,
        :class:`OverloadedError` or :class:`ShuttingDownError` as the batchers do."""
        side = query.side
        live = self.live_entry(query.collection)
        if live is not None:
            return await self._search_live(context, catalog, live, query)
        if not query.levers.plain:
            return await self._search_with_levers(context, catalog, query)
        variant, served = self.target(
            catalog, query.variant, query.collection, side, query.side_where
        )
        find = self._page_search(served, query.page)
        cached = self._cached_text(variant, side) if isinstance(side, TextSide) else None
        if isinstance(side, TextSide) and cached is None:
            result = await self._encode(context, variant, "text", [side.text], follow_up=find)
            self._keep_text(variant, side.text, result.rows[0])
        elif isinstance(side, ImageSide):
            result = await self._embed_images(context, variant, [side.payload], follow_up=find)
        else:
            vector = cached if cached is not None else self.given_vector(catalog, variant, side)
            started = time.perf_counter()
            try:
                page = await run_in_threadpool(find, vector[None, :])
            finally:
                self._record_search(context, served, started, time.perf_counter() - started)
            return Answer.of(variant, served, page)
        self._record_search(context, served, result.follow_up_started_s, result.follow_up_s)
        return Answer.of(variant, served, cast("SearchPage", result.follow_up))

    async def _search_with_levers(
        self,
        context: RequestContext,
        catalog: Catalog,
        query: SearchQuery,
        embedded: EmbeddedTexts | None = None,
    ) -> Answer:
        """:meth:`search` with quality levers: everything checked, then the vectors made
        (:func:`service.engine.lever_queries.plan_lever_search`), then the page made on a
        worker thread."""
        variant, served = self.target(
            catalog, query.variant, query.collection, query.side, query.side_where
        )
        search = await plan_lever_search(
            self, context, catalog, (variant, served), query, self._faiss_threads, embedded
        )
        started = time.perf_counter()
        try:
            found = await run_in_threadpool(search)
        finally:
            self._record_search(context, served, started, time.perf_counter() - started)
        return Answer.of(variant, served, found)

    def _page_search(self, served: ServedCollection, page: PageRequest) -> PageSearch:
        """The search of ``page`` in ``served``, its filter and parameters checked (event loop:
        no mask is made here)."""
        if page.filter is not None:
            check_filter(page.filter, served.collection, page.where)
        params = resolve(served.collection, page.override, page.params_where)
        return PageSearch(served, page, self._faiss_threads, params)

    async def search_many(
        self, context: RequestContext, catalog: Catalog, queries: Sequence[SearchQuery]
    ) -> list[Answer | DomainError]:
        """Many searches in one go, answered in order; a search that fails gets its own domain
        error in its place and the others go on.

        Every target, filter and search parameter is checked first; then each variant's texts
        are encoded in one batcher job (distinct texts once), images one job each, and the
        unfiltered searches of each collection run as one faiss call
        (:func:`service.engine.knn.nearest_many`). Refusals that concern the whole request
        (:class:`OverloadedError`, :class:`ShuttingDownError`) are raised."""
        outcome: list[Answer | DomainError | None] = [None] * len(queries)
        planned: dict[int, _Plan] = {}
        vectors: dict[int, np.ndarray] = {}
        started = time.perf_counter()
        one_by_one = [
            p
            for p, q in enumerate(queries)
            if self.live_entry(q.collection) is not None or not q.levers.plain
        ]
        for position, query in enumerate(queries):
            if position in one_by_one:
                continue
            try:
                variant, served = self.target(
                    catalog, query.variant, query.collection, query.side, query.side_where
                )
                find = self._page_search(served, query.page)
                if isinstance(query.side, ItemSide | VectorSide):
                    vectors[position] = self.given_vector(catalog, variant, query.side)
            except DomainError as error:
                outcome[position] = error
                continue
            planned[position] = (variant, find)
        context.add_search_ms((time.perf_counter() - started) * 1000.0, started)
        await self._encode_many(context, queries, planned, vectors, outcome)
        started = time.perf_counter()
        try:
            pages = await run_in_threadpool(self._search_planned, planned, vectors)
        finally:
            context.add_search_ms((time.perf_counter() - started) * 1000.0, started)
        for position, page in pages.items():
            variant, find = planned[position]
            outcome[position] = Answer.of(variant, find.served, page)
        # Live searches and searches with levers run one after the other; the texts of those
        # with levers are embedded first, one encoder job per variant (as the others' are).
        embedded = await self._embed_lever_texts(context, catalog, [queries[p] for p in one_by_one])
        for position in one_by_one:
            outcome[position] = await self._search_alone(
                context, catalog, queries[position], embedded
            )
        answers = [answer for answer in outcome if answer is not None]
        if len(answers) != len(queries):
            raise RuntimeError("a bulk search was neither answered nor refused")
        return answers

    async def _search_alone(
        self,
        context: RequestContext,
        catalog: Catalog,
        query: SearchQuery,
        embedded: EmbeddedTexts,
    ) -> Answer | DomainError:
        """One search of a bulk request on its own (:meth:`search`; a bundle search with levers
        takes its text's vectors from ``embedded``), its domain error in place of its answer;
        refusals of the whole request are raised."""
        try:
            live = self.live_entry(query.collection)
            if query.levers.plain and live is None:
                # A live collection dropped since the request was planned.
                raise NotFoundError(f"unknown collection {quoted(query.collection)}")
            if live is None:
                return await self._search_with_levers(context, catalog, query, embedded)
            return await self.search(context, catalog, query)
        except (OverloadedError, ShuttingDownError):
            raise
        except DomainError as error:
            return error

    async def _embed_lever_texts(
        self, context: RequestContext, catalog: Catalog, queries: Sequence[SearchQuery]
    ) -> EmbeddedTexts:
        """The text vectors of the bundle searches with levers among ``queries``
        (:func:`service.engine.lever_queries.embed_lever_texts`); a search whose target does not
        resolve is left out (its own search raises its error)."""
        searches: list[tuple[SearchQuery, ServedVariant, ServedCollection]] = []
        for query in queries:
            if query.levers.plain or self.live_entry(query.collection) is not None:
                continue
            try:
                variant, served = self.target(
                    catalog, query.variant, query.collection, query.side, query.side_where
                )
            except DomainError:
                continue
            searches.append((query, variant, served))
        return await embed_lever_texts(self, context, catalog, searches)

    async def _encode_many(
        self,
        context: RequestContext,
        queries: Sequence[SearchQuery],
        planned: dict[int, _Plan],
        vectors: dict[int, np.ndarray],
        outcome: list[Answer | DomainError | None],
    ) -> None:
        """Fill ``vectors`` for the planned text and image sides; a side that cannot be
        embedded gets its error in ``outcome`` and leaves the plan."""
        texts_of: dict[str, list[int]] = {}
        for position, (variant, _) in planned.items():
            side = queries[position].side
            if isinstance(side, TextSide):
                texts_of.setdefault(variant.name, []).append(position)
            elif isinstance(side, ImageSide):
                try:
                    rows = await self.embed_images(context, variant, [side.payload])
                except (ImageRefusedError, InvalidQueryError) as error:
                    outcome[position] = error
                else:
                    vectors[position] = rows[0]
        for positions in texts_of.values():
            variant = planned[positions[0]][0]
            texts = list(dict.fromkeys(cast("TextSide", queries[p].side).text for p in positions))
            try:
                rows = await self.embed_texts(context, variant, texts)
                row_of = {text: rows[slot] for slot, text in enumerate(texts)}
            except InvalidQueryError:
                # One text without a finite embedding: find it, and embed the others.
                row_of = {}
                for text in texts:
                    with contextlib.suppress(InvalidQueryError):
                        row_of[text] = (await self.embed_texts(context, variant, [text]))[0]
            for position in positions:
                text = cast("TextSide", queries[position].side).text
                if text in row_of:
                    vectors[position] = row_of[text]
                else:
                    outcome[position] = InvalidQueryError(
                        f"{queries[position].where}.query.text: the text has no finite embedding"
                    )
        for position in [p for p in planned if p not in vectors]:
            del planned[position]

    @staticmethod
    def _search_planned(
        planned: dict[int, _Plan], vectors: dict[int, np.ndarray]
    ) -> dict[int, SearchPage]:
        """Blocking: the page of every planned search; the unfiltered searches of one collection
        run together, as the searches of one encoder batch do (:class:`PageSearch`)."""
        found: dict[int, SearchPage] = {}
        groups: dict[object, list[int]] = {}
        for position, (_, find) in planned.items():
            if find.group is None:
                found[position] = find(vectors[position][None, :])
            else:
                groups.setdefault(find.group, []).append(position)
        for positions in groups.values():
            together = [planned[position][1] for position in positions]
            rows = [vectors[position][None, :] for position in positions]
            pages = together[0].run_together(together, rows)
            for position, page in zip(positions, pages, strict=True):
                found[position] = cast("SearchPage", page)
        return found

    async def _search_live(
        self, context: RequestContext, catalog: Catalog, entry: LiveEntry, query: SearchQuery
    ) -> Answer:
        """:meth:`search` of a live collection (:func:`service.engine.live_queries.search_live`)."""
        seq, page = await search_live(self, self._metrics, context, catalog, entry, query)
        spec = entry.collection.spec
        return Answer(spec.name, spec.variant, spec.name, f"live@{seq}", page)

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
        for index, side in enumerate(sides):
            if isinstance(side, ItemSide | VectorSide):
                given[index] = self.given_vector(catalog, variant, side, versions)
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

    def _cached_text(self, variant: ServedVariant, side: TextSide) -> np.ndarray | None:
        """The query cache's embedding of a search's text (counted), or None."""
        cache = self.query_cache
        if cache is None:
            return None
        row = cache.get(variant.fingerprint, side.text)
        hit = row is not None
        self._metrics.count_query_cache(variant.name, hits=int(hit), misses=int(not hit))
        return row

    def _keep_text(self, variant: ServedVariant, text: str, row: np.ndarray) -> None:
        """Keep a finite embedding of ``text`` in the query cache, where there is one."""
        if self.query_cache is not None and np.isfinite(row).all():
            self.query_cache.put(variant.fingerprint, text, row)

    async def embed_texts(
        self, context: RequestContext, variant: ServedVariant, texts: Sequence[str]
    ) -> np.ndarray:
        """Embed ``texts`` through the variant's text batcher (micro-batched with concurrent
        requests): float32 ``[len(texts), dim]``, L2-normalised."""
        if not texts:
            return np.empty((0, variant.dim), dtype=np.float32)
        cache = self.query_cache
        if cache is None:
            result = await self._encode(context, variant, "text", texts)
            return result.rows
        fingerprint = variant.fingerprint
        rows = np.empty((len(texts), variant.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for slot, text in enumerate(texts):
            cached = cache.get(fingerprint, text)
            if cached is None:
                missing.setdefault(text, []).append(slot)
            else:
                rows[slot] = cached
        misses = sum(len(slots) for slots in missing.values())
        self._metrics.count_query_cache(variant.name, hits=len(texts) - misses, misses=misses)
        if missing:
            to_embed = list(missing)
            embedded = (await self._encode(context, variant, "text", to_embed)).rows
            for text, row in zip(to_embed, embedded, strict=True):
                rows[missing[text]] = row
                self._keep_text(variant, text, row)
        return rows

    async def embed_images(
        self, context: RequestContext, variant: ServedVariant, payloads: Sequence[ImagePayload]
    ) -> np.ndarray:
        """Decode and embed ``payloads`` in order: float32 ``[len(payloads), dim]``.

        Every base64 payload is decoded first, so malformed base64 anywhere is refused before
        any image is decoded. Images are then decoded one by one and encoded in groups holding
        at least ``max_pixels`` decoded pixels (the last group may hold fewer): a request of
        ordinary images is one group — every image decoded, and every bad one refused, before
        the encoder runs — while a request of huge images never holds more than about two
        maximal images' pixels (3 bytes each) at once, however many it sends.
        """
        if not payloads:
            return np.empty((0, variant.dim), dtype=np.float32)
        return (await self._embed_images(context, variant, payloads)).rows

    # -- stages -----------------------------------------------------------------------------------

    def given_vector(
        self,
        catalog: Catalog,
        variant: ServedVariant,
        side: QuerySide,
        versions: set[str] | None = None,
    ) -> np.ndarray:
        """The vector of an item side (its stored vector) or a vector side (normalised;
        :class:`DimensionMismatchError` when its length is not the variant's dimension)."""
        if isinstance(side, ItemSide):
            live = self.live_entry(side.collection)
            if live is not None and live.collection.spec.variant == variant.name:
                seq, stored = stored_live_vector(live, side.item_id)
                if versions is not None:
                    versions.add(f"live@{seq}")
                return stored
            served = catalog.collection(variant, side.collection)
            if versions is not None:
                versions.add(served.bundle_version)
            return catalog.stored_vector(served, catalog.row_of(served, side.item_id))
        assert isinstance(side, VectorSide)
        if len(side.values) != variant.dim:
            # Where served variants differ the document cannot state the length: a conflict
            # with the variant reached (where they agree, the HTTP layer refused it as 422).
            raise DimensionMismatchError(
                f"{side.where}: {len(side.values)} numbers, but the variant's embeddings have "
                f"dimension {variant.dim}"
            )
        return normalised_query_vector(side.values, variant.dim, side.where)

    async def _encode(
        self,
        context: RequestContext,
        variant: ServedVariant,
        tower: Tower,
        inputs: Sequence[object],
        follow_up: FollowUp | None = None,
    ) -> EncodeResult:
        result = await variant.batcher(tower).submit(inputs, context.deadline_s, follow_up)
        started = result.started_s
        context.add_queue_ms(result.queue_s * 1000.0, started - result.queue_s)
        context.add_encode_ms(result.encode_s * 1000.0, started)
        return result

    async def _embed_images(
        self,
        context: RequestContext,
        variant: ServedVariant,
        payloads: Sequence[ImagePayload],
        follow_up: FollowUp | None = None,
    ) -> EncodeResult:
        """Decode and encode ``payloads`` (see :meth:`embed_images`); the result's rows are all
        the images' rows. A ``follow_up`` (single payload only) runs on them on the batcher's
        thread."""
        assert follow_up is None or len(payloads) == 1
        decode_s = 0.0
        results: list[EncodeResult] = []

        def decoded(started: float) -> None:
            # Each decode interval is the context's (and, traced, a span); the metric takes the sum.
            nonlocal decode_s
            elapsed = time.perf_counter() - started
            decode_s += elapsed
            context.add_decode_ms(elapsed * 1000.0, started)

        try:
            started = time.perf_counter()
            try:
                blobs = await run_in_threadpool(_all_bytes, payloads)
            finally:
                decoded(started)
            group: list[Image] = []
            group_pixels = 0
            for payload, blob in zip(payloads, blobs, strict=True):
                started = time.perf_counter()
                try:
                    image = await run_in_threadpool(
                        decode_payload, payload.where, blob, self._image_limits
                    )
                finally:
                    decoded(started)
                group.append(image)
                group_pixels += image.width * image.height
                if group_pixels >= self._image_limits.max_pixels:
                    results.append(await self._encode(context, variant, "image", group, follow_up))
                    group, group_pixels = [], 0
            if group:
                results.append(await self._encode(context, variant, "image", group, follow_up))
        except ImageRefusedError as error:
            self._metrics.images_refused.labels(error.reason).inc()
            raise
        finally:
            self._metrics.image_decode_seconds.observe(decode_s)
        if len(results) == 1:
            return results[0]
        rows = np.concatenate([result.rows for result in results]).astype(np.float32, copy=False)
        return EncodeResult(
            rows,
            queue_s=sum(result.queue_s for result in results),
            encode_s=sum(result.encode_s for result in results),
            batch_inputs=len(payloads),
            batch_requests=1,
        )

    def _record_search(
        self, context: RequestContext, served: ServedCollection, started: float, seconds: float
    ) -> None:
        context.add_search_ms(seconds * 1000.0, started)
        self._metrics.search_seconds.labels(served.variant, served.name).observe(seconds)


def _all_bytes(payloads: Sequence[ImagePayload]) -> list[bytes]:
    return [payload_bytes(payload) for payload in payloads]

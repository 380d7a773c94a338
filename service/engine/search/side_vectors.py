"""The one place a query side becomes a vector: a text through the query cache or its variant's
text batcher, an image decoded (with limits) and embedded by its image batcher, a stored item's
vector (a bundle's, a live collection's or a sharded collection's), or a client's own vector
checked and normalised.
Searches, scores, embeddings and writes all take their vectors here.

Each stage adds its time to the request's context (for the ``x-timing-*`` headers, the access
log and ``timings_ms``) and to the stage histograms.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from PIL.Image import Image
from starlette.concurrency import run_in_threadpool

from encoders.image_decode import ImageLimits
from encoders.variant import Tower
from service.engine.collection.catalog import Catalog, ServedVariant
from service.engine.collection.collection_view import CollectionView
from service.engine.collection.live_collections import LiveCollections
from service.engine.encode.batcher import EncodeResult, FollowUp
from service.engine.encode.query_cache import QueryCache
from service.engine.query.images import ImagePayload, decode_payload, payload_bytes
from service.engine.query.query import (
    ImageSide,
    ItemSide,
    QuerySide,
    TextSide,
    VectorSide,
    normalised_query_vector,
)
from service.engine.search.planner import VectorSpace
from service.exceptions import DimensionMismatchError, ImageRefusedError, NotFoundError, quoted
from service.metrics import ServiceMetrics
from service.request_context import RequestContext

EmbeddedTexts = dict[tuple[str, str], np.ndarray]
"""Text vectors a bulk request embedded ahead, by (variant name, text)."""


class SideVectors:
    """Turns query sides into unit float32 vectors for one app; ``image_limits`` bound every
    decoded image."""

    def __init__(self, metrics: ServiceMetrics, image_limits: ImageLimits) -> None:
        self._metrics = metrics
        self._image_limits = image_limits
        self.live: LiveCollections | None = None
        """The live collections whose stored items a side may name."""
        self.query_cache: QueryCache | None = None
        """The query-embedding cache (set when ``query_cache_entries`` is above 0)."""

    async def vector(
        self,
        context: RequestContext,
        catalog: Catalog,
        space: VectorSpace,
        side: QuerySide,
        where: str,
        embedded: EmbeddedTexts | None = None,
    ) -> np.ndarray:
        """The unit vector of ``side`` (at ``where`` in the request) in ``space``: embedded
        (or found in ``embedded``, a bulk request's texts embedded ahead), stored, or given."""
        variant = space.variant
        if isinstance(side, TextSide) and variant is not None:
            found = None if embedded is None else embedded.get((variant.name, side.text))
            if found is not None:
                return found
            rows = await self.embed_texts(context, variant, [side.text])
        elif isinstance(side, ImageSide) and variant is not None:
            rows = await self.embed_images(context, variant, [side.payload])
        elif isinstance(side, ItemSide) and space.items is not None:
            return await run_in_threadpool(stored_vector, space.items, side, where)
        else:
            return self.given(catalog, space, side, where)
        vector: np.ndarray = rows[0]
        return vector

    async def follow(
        self,
        context: RequestContext,
        variant: ServedVariant,
        side: TextSide | ImageSide,
        follow_up: FollowUp,
    ) -> EncodeResult:
        """Embed a text (not in the cache) or an image with ``follow_up`` run on its row on the
        batcher's thread."""
        if isinstance(side, TextSide):
            result = await self._encode(context, variant, "text", [side.text], follow_up)
            self._keep_text(variant, side.text, result.rows[0])
            return result
        return await self._embed_images(context, variant, [side.payload], follow_up)

    def given(
        self,
        catalog: Catalog,
        space: VectorSpace,
        side: QuerySide,
        where: str = "query.item",
        versions: set[str] | None = None,
    ) -> np.ndarray:
        """The vector of an item side (its stored vector) or a vector side (normalised;
        :class:`DimensionMismatchError` when its length is not the space's dimension). A live
        collection's search takes its own items only; a bundle's, an item of any collection of
        its variant (a live one's too). ``versions`` collects what the stored vectors were read
        from."""
        if isinstance(side, VectorSide):
            if len(side.values) != space.dim:
                # Where served variants differ the document cannot state the length: a
                # conflict with the variant reached (where they agree, HTTP refused it as 422).
                owner = (
                    f"live collection {quoted(space.live)} has"
                    if space.live is not None
                    else "the variant's embeddings have"
                )
                raise DimensionMismatchError(
                    f"{side.where}: {len(side.values)} numbers, but {owner} dimension {space.dim}",
                    param=side.where,
                )
            return normalised_query_vector(side.values, space.dim, side.where)
        assert isinstance(side, ItemSide)
        if space.live is not None and side.collection != space.live:
            raise NotFoundError(
                f"{where}: a search of live collection "
                f"{quoted(space.live)} takes items of that collection, not of "
                f"{quoted(side.collection)}",
                param=f"{side.where}.collection",
            )
        entry = None if self.live is None else self.live.get(side.collection)
        if entry is not None and (
            space.live is not None
            or (space.variant is not None and entry.collection.spec.variant == space.variant.name)
        ):
            view = entry.collection.view()
            row = view.row_of(side.item_id)
            if row is None:
                raise NotFoundError(
                    f"unknown item {quoted(side.item_id)} in collection "
                    f"{quoted(entry.collection.name)}",
                    param=f"{side.where}.id",
                )
            if versions is not None:
                versions.add(f"live@{view.seq}")
            return view.vector(row)
        assert space.variant is not None
        served = catalog.collection(
            space.variant, side.collection, param=f"{side.where}.collection"
        )
        if versions is not None:
            versions.add(served.bundle_version)
        row = catalog.row_of(served, side.item_id, param=f"{side.where}.id")
        return catalog.stored_vector(served, row)

    # -- embedding --------------------------------------------------------------------------

    def cached_text(self, variant: ServedVariant, text: str) -> np.ndarray | None:
        """The query cache's embedding of a search's text (counted), or None."""
        cache = self.query_cache
        if cache is None:
            return None
        row = cache.get(variant.fingerprint, text)
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


def _all_bytes(payloads: Sequence[ImagePayload]) -> list[bytes]:
    return [payload_bytes(payload) for payload in payloads]


def stored_vector(view: CollectionView, side: ItemSide, where: str) -> np.ndarray:
    """The stored vector of the item ``side`` names in ``view`` (the planner checked that it
    names that collection): :class:`NotFoundError` for an item it does not hold. Blocking (the
    view may ask other processes)."""
    del where
    row = view.row_of(side.item_id)
    if row is None:
        raise NotFoundError(
            f"unknown item {quoted(side.item_id)} in collection {quoted(view.name)}",
            param=f"{side.where}.id",
        )
    vector: np.ndarray = view.vectors_of(np.array([row], dtype=np.int64))[0]
    return vector

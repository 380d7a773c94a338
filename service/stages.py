"""The blocking stages of a request — decoding images, encoding, searching — run off the event
loop, timed.

Decoding and searching run in worker threads (Pillow and faiss release the GIL); encoding goes
through the variant's :mod:`service.batcher`, which gathers concurrent requests into one encoder
call on its own thread. Each stage adds its time to the request's context (for the
``x-timing-*`` headers, the access log and ``timings_ms``) and to the stage histograms.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import cast

import faiss
import numpy as np
from PIL.Image import Image
from starlette.concurrency import run_in_threadpool

from encoders.image_decode import ImageLimits
from service.batcher import EncodePool, EncodeResult
from service.images import ImagePayload, ImageRefusedError, decode_payload, payload_bytes
from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from service.store import (
    LiveIndexStore,
    SearchHit,
    ServedCollection,
    ServedVariant,
    checked_embeddings,
)


def _record_encode(context: RequestContext, result: EncodeResult) -> None:
    context.add_queue_ms(result.queue_s * 1000.0)
    context.add_encode_ms(result.encode_s * 1000.0)


async def encode_texts(
    context: RequestContext,
    pool: EncodePool,
    variant: ServedVariant,
    texts: Sequence[str],
) -> np.ndarray:
    """Embed ``texts`` through the variant's text batcher (micro-batched with concurrent
    requests): float32 ``[len(texts), dim]``, L2-normalised.

    Raises ``ServiceError`` overloaded (503) when the queue is full or the request's deadline
    passes while it waits, invalid_input (422) when a text's embedding is not finite.
    """
    result = await pool.texts(variant).submit(texts, context.deadline_s)
    _record_encode(context, result)
    return checked_embeddings(variant.name, "text", result.rows, len(texts), variant.dim)


async def search_text(
    context: RequestContext,
    metrics: ServiceMetrics,
    pool: EncodePool,
    variant: ServedVariant,
    served: ServedCollection,
    text: str,
    k: int,
    exclude: Collection[str],
    faiss_threads: int = 0,
) -> list[SearchHit]:
    """Embed ``text`` through the variant's text batcher and search ``served`` with it on the
    batcher's worker thread, right after the batch (one trip off the event loop instead of
    two); the same hits, refusals and stage timings as :func:`encode_texts` then
    :func:`search`."""

    def search_rows(rows: np.ndarray) -> list[SearchHit]:
        vector = checked_embeddings(variant.name, "text", rows, 1, variant.dim)[0]
        return _search_on_worker(faiss_threads, served, vector, k, exclude)

    result = await pool.texts(variant).submit([text], context.deadline_s, search_rows)
    _record_encode(context, result)
    _record_search(context, metrics, served, result.follow_up_s)
    hits: list[SearchHit] = cast("list[SearchHit]", result.follow_up)
    return hits


async def _encode_images(
    context: RequestContext,
    pool: EncodePool,
    variant: ServedVariant,
    images: Sequence[Image],
) -> np.ndarray:
    """Embed decoded ``images`` through the variant's image batcher: float32
    ``[len(images), dim]``."""
    result = await pool.images(variant).submit(images, context.deadline_s)
    _record_encode(context, result)
    return checked_embeddings(variant.name, "image", result.rows, len(images), variant.dim)


def _all_bytes(payloads: Sequence[ImagePayload]) -> list[bytes]:
    return [payload_bytes(payload) for payload in payloads]


async def embed_images(
    context: RequestContext,
    metrics: ServiceMetrics,
    pool: EncodePool,
    variant: ServedVariant,
    payloads: Sequence[ImagePayload],
    limits: ImageLimits,
) -> np.ndarray:
    """Decode and embed ``payloads`` in order: float32 ``[len(payloads), dim]``, L2-normalised.

    Every base64 payload is decoded first, so malformed base64 anywhere is refused before any
    image is decoded. Images are then decoded one by one and encoded in groups holding at least
    ``limits.max_pixels`` decoded pixels (the last group may hold fewer): a request of ordinary
    images is one group — every image decoded, and every bad one refused, before the encoder
    runs — while a request of huge images never holds more than about two maximal images'
    pixels (3 bytes each) at once, however many it sends.

    Raises :class:`service.images.ImageRefusedError` (413, 415 or 422; counted by reason in
    ``crisscross_images_refused_total``).
    """
    decode_s = 0.0
    rows: list[np.ndarray] = []
    try:
        started = time.perf_counter()
        try:
            blobs = await run_in_threadpool(_all_bytes, payloads)
        finally:
            decode_s += time.perf_counter() - started
        group: list[Image] = []
        group_pixels = 0
        for payload, blob in zip(payloads, blobs, strict=True):
            started = time.perf_counter()
            try:
                image = await run_in_threadpool(decode_payload, payload.where, blob, limits)
            finally:
                decode_s += time.perf_counter() - started
            group.append(image)
            group_pixels += image.width * image.height
            if group_pixels >= limits.max_pixels:
                rows.append(await _encode_images(context, pool, variant, group))
                group, group_pixels = [], 0
        if group:
            rows.append(await _encode_images(context, pool, variant, group))
    except ImageRefusedError as error:
        metrics.images_refused.labels(error.reason).inc()
        raise
    finally:
        context.add_decode_ms(decode_s * 1000.0)
        metrics.image_decode_seconds.observe(decode_s)
    if not rows:
        return np.empty((0, variant.dim), dtype=np.float32)
    return np.concatenate(rows).astype(np.float32, copy=False)


async def search(
    context: RequestContext,
    metrics: ServiceMetrics,
    served: ServedCollection,
    query: np.ndarray,
    k: int,
    exclude: Collection[str],
    faiss_threads: int = 0,
) -> list[SearchHit]:
    """The ``k`` best hits of ``served`` for ``query`` (float32 ``[dim]``); see
    :meth:`LiveIndexStore.search` for the tie rule, exclusion and clamping. ``faiss_threads``
    > 0 caps faiss's OpenMP threads on the worker thread that searches (0: faiss's default)."""
    started = time.perf_counter()
    try:
        return await run_in_threadpool(_search_on_worker, faiss_threads, served, query, k, exclude)
    finally:
        _record_search(context, metrics, served, time.perf_counter() - started)


def _record_search(
    context: RequestContext, metrics: ServiceMetrics, served: ServedCollection, seconds: float
) -> None:
    context.add_search_ms(seconds * 1000.0)
    metrics.search_seconds.labels(served.variant, served.name).observe(seconds)


def _search_on_worker(
    faiss_threads: int,
    served: ServedCollection,
    query: np.ndarray,
    k: int,
    exclude: Collection[str],
) -> list[SearchHit]:
    # OpenMP's thread count is a per-thread setting: set in the main thread it would not reach
    # the pool's workers, whose searches would each spin up a team of one thread per core.
    if faiss_threads > 0:
        faiss.omp_set_num_threads(faiss_threads)
    return LiveIndexStore.search(served, query, k, exclude)

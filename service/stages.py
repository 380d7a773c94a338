"""The blocking stages of a request — encoding and searching — run off the event loop, timed.

Each stage runs in a worker thread (onnxruntime and faiss release the GIL), adds its time to
the request's context (for the ``x-timing-*`` headers, the access log and ``timings_ms``) and to
the stage histograms.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

import numpy as np
from starlette.concurrency import run_in_threadpool

from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from service.store import LiveIndexStore, SearchHit, ServedCollection, ServedVariant


async def encode_texts(
    context: RequestContext,
    metrics: ServiceMetrics,
    variant: ServedVariant,
    texts: Sequence[str],
) -> np.ndarray:
    """Embed ``texts`` in one encoder call: float32 ``[len(texts), dim]``, L2-normalised."""
    started = time.perf_counter()
    try:
        return await run_in_threadpool(LiveIndexStore.encode_texts, variant, texts)
    finally:
        elapsed_s = time.perf_counter() - started
        context.add_encode_ms(elapsed_s * 1000.0)
        metrics.encode_seconds.labels(variant.name).observe(elapsed_s)
        metrics.encode_batch_size.labels(variant.name).observe(len(texts))


async def search(
    context: RequestContext,
    metrics: ServiceMetrics,
    served: ServedCollection,
    query: np.ndarray,
    k: int,
    exclude: Collection[str],
) -> list[SearchHit]:
    """The ``k`` best hits of ``served`` for ``query`` (float32 ``[dim]``); see
    :meth:`LiveIndexStore.search` for the tie rule, exclusion and clamping."""
    started = time.perf_counter()
    try:
        return await run_in_threadpool(LiveIndexStore.search, served, query, k, exclude)
    finally:
        elapsed_s = time.perf_counter() - started
        context.add_search_ms(elapsed_s * 1000.0)
        metrics.search_seconds.labels(served.variant, served.name).observe(elapsed_s)

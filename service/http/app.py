"""Assembles the FastAPI app: state, lifespan, middleware, error handlers and routes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from fastapi import FastAPI
from fastapi.routing import APIRoute

from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest
from service import ast_parse_lock
from service.engine.collection.catalog import Catalog, VariantEncoders
from service.engine.collection.live_collections import LiveCollections
from service.engine.collection.sharded_collections import ShardedCollections
from service.engine.replication.replica_set import ReplicaSet
from service.http.auth import ApiKeyMiddleware, KeyRing
from service.http.errors import install_error_handlers
from service.http.middleware import (
    BodyGateMiddleware,
    BodyLimit,
    ConcurrencyLimitMiddleware,
    CorsMiddleware,
    RequestContextMiddleware,
)
from service.http.openapi import configured_document
from service.http.routes import (
    admin,
    catalog,
    collections,
    embed,
    health,
    openai_compat,
    page,
    replication,
    score,
    search,
)
from service.lifecycle.loading import EncoderFactory, load_catalog, private_copies
from service.lifecycle.reload_broadcast import ReloadBroadcast
from service.lifecycle.reloading import catch_up, follow_reloads
from service.lifecycle.state import STATE_ATTRIBUTE, ServiceState, publish_catalog
from service.metrics import ServiceMetrics
from service.process_layout import ProcessLayout
from service.settings import BULK_ROUTE, UPLOAD_ROUTE, Settings
from service.telemetry.tracing import start_tracing

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

logger = logging.getLogger("crisscross.service")

API_VERSION = "1"
# The routes that encode or search: the in-flight limit counts these.
COLLECTIONS_PREFIX = "/v1/collections/"
"""The write routes of live collections (their body limit is max_write_body_bytes)."""
WORK_ROUTES = frozenset(
    {"/v1/search", UPLOAD_ROUTE, BULK_ROUTE, "/v1/score", "/v1/embed", "/v1/embeddings"}
)
CORS_REQUEST_HEADERS = ["authorization", "x-api-key", "content-type", "x-request-id"]
CORS_EXPOSED_HEADERS = [
    "x-request-id",
    "retry-after",
    "x-timing-decode-ms",
    "x-timing-queue-ms",
    "x-timing-encode-ms",
    "x-timing-search-ms",
    "x-timing-write-ms",
    "x-timing-fsync-ms",
    "x-timing-total-ms",
    "x-replica",
]
CORS_MAX_AGE_S = 600
ROUTERS = (
    collections.router,
    collections.plain_router,
    search.router,
    search.upload_router,
    score.router,
    embed.router,
    openai_compat.router,
    openai_compat.models_router,
    catalog.router,
    admin.router,
    health.router,
    page.router,
    replication.router,
    replication.plain_router,
)


def onnx_encoder_factory(variant_dir: Path, settings: Settings) -> VariantEncoders:
    """The production encoders: one onnxruntime encoder per tower that the folder's
    ``variant.json`` lists (``towers``), providers and threads from settings.

    Raises ``encoders.variant.VariantError`` for a missing or invalid manifest (and whatever the
    encoders raise for files that do not match it); the service then stays not ready.
    """
    towers = load_variant_manifest(variant_dir).towers
    providers, threads = settings.providers, settings.intra_op_threads
    return VariantEncoders(
        text=OnnxTextEncoder(variant_dir, providers, threads) if "text" in towers else None,
        image=OnnxImageEncoder(variant_dir, providers, threads) if "image" in towers else None,
    )


async def _load_in_background(state: ServiceState) -> None:
    """Load bundles and encoders in a worker thread; publish the catalog, or the reason why not.

    Failures are recorded rather than raised: the process stays up, ``/healthz`` answers 200,
    and ``/readyz`` answers 503 with the reason, which is what an orchestrator and an operator
    both need to see.
    """

    sharded = state.searcher.sharded

    def load() -> Catalog:
        needed = {} if sharded is None else sharded.variants
        loaded = load_catalog(
            state.settings,
            state.encoder_factory,
            state.metrics,
            state.copies,
            needed,
            bundles_too=sharded is None,
        )
        if sharded is not None:
            sharded.connect()  # what each shard holds: the planner checks against it
        return catch_up(state, loaded)  # a worker of several: the versions the others serve

    try:
        catalog = await anyio.to_thread.run_sync(load, abandon_on_cancel=True)
    except Exception as exc:  # every failure must reach /readyz, not vanish with the task
        state.load_error = str(exc) or type(exc).__name__
        state.metrics.load_failures.inc()
        logger.exception("refusing to serve: %s", state.load_error)
        return
    publish_catalog(state, catalog)
    await anyio.to_thread.run_sync(state.release_unserved_copies)  # a catch-up's left-overs
    logger.info("ready: serving %d collections", len(catalog.collections))


# How often a worker of several touches its heartbeat file (the supervisor replaces a worker
# whose beats stop) and copies its admission gate into the shared gauges.
TICK_PERIOD_S = 1.0


async def _tick(state: ServiceState) -> None:
    while True:
        state.layout.beat()
        state.metrics.refresh_admission()
        await anyio.sleep(TICK_PERIOD_S)


def create_app(
    settings: Settings,
    *,
    encoder_factory: EncoderFactory | None = None,
    layout: ProcessLayout | None = None,
    span_exporter: SpanExporter | None = None,
    sharded: ShardedCollections | None = None,
) -> FastAPI:
    """Build the service app for ``settings``.

    Bundles and encoders load in the background once the lifespan starts (``/readyz`` is 503 until
    then); a worker of several loads before it takes connections.
    ``encoder_factory(variant_dir, settings)`` builds each variant's encoders (a
    :class:`service.engine.collection.catalog.VariantEncoders` with a text tower, an image tower or
    both); the default is :func:`onnx_encoder_factory`, which reads the towers from
    ``variant.json``. ``layout`` places the app among several worker processes
    (:mod:`service.runtime.workers`): its metrics are then written for all of them to read and its
    reloads reach them all. Nothing else is shared between apps. With ``otlp_endpoint`` set, the app
    traces its requests (:mod:`service.telemetry.tracing`: a provider of this process's own),
    exporting to ``span_exporter`` when one is given (tests), else over OTLP/HTTP. ``sharded``
    makes the app the front door of collections held by shards in other processes
    (:mod:`cluster.served_shards` makes them): it serves them, and no bundle; their variants are
    loaded and the shards are asked what they hold before the app is ready.
    """
    ast_parse_lock.install()  # the app's threads parse .npy headers (see the module)
    layout = layout or ProcessLayout()
    state = ServiceState(
        settings=settings,
        metrics=ServiceMetrics(layout.metrics_dir),
        encoder_factory=encoder_factory or onnx_encoder_factory,
        layout=layout,
        broadcast=None if layout.reload_dir is None else ReloadBroadcast(layout.reload_dir),
    )
    state.searcher.sharded = sharded
    state.metrics.workers.set(layout.workers)
    tracing = start_tracing(settings, span_exporter)  # None unless otlp_endpoint is set

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state.begin_lifespan()
        # Made here, closed below: a load still running at shutdown (abandoned) finds them
        # closed and stops, it never copies into a folder being removed.
        state.copies = private_copies(settings, layout)
        live = LiveCollections(
            settings,
            state.metrics,
            unavailable=(
                f"live collections need one server process; this one is a worker of "
                f"{layout.workers}"
                if layout.workers > 1
                else None
            ),
        )
        opened = await anyio.to_thread.run_sync(live.open_all)
        if opened:
            logger.info("live collections open: %s", ", ".join(opened))
        state.searcher.live = live
        replicas = ReplicaSet(settings, live, state.metrics)
        await replicas.start()
        state.replicas = replicas
        async with anyio.create_task_group() as tasks:
            if state.broadcast is None:  # a single process
                tasks.start_soon(_load_in_background, state)
            else:  # a worker of several
                tasks.start_soon(_tick, state)  # loading runs in a thread: beats go on
                # It loads before uvicorn takes connections: meanwhile the kernel hands them to
                # the workers already serving (a replacement worker never answers "not ready"
                # while the others could answer).
                await _load_in_background(state)
                tasks.start_soon(follow_reloads, state, state.broadcast)
            try:
                yield
            finally:
                # uvicorn has let in-flight requests finish (up to graceful_shutdown_s); work
                # still queued in a batcher is finished too, within the same bound.
                with anyio.CancelScope(shield=True):
                    await replicas.stop()
                    await live.close()
                    state.searcher.live = None
                    if state.catalog is not None:
                        await state.catalog.close(settings.graceful_shutdown_s)
                    if state.copies is not None:
                        await anyio.to_thread.run_sync(state.copies.close)
                    if tracing is not None:  # the spans still queued go out
                        await anyio.to_thread.run_sync(tracing.shutdown)
                tasks.cancel_scope.cancel()

    app = FastAPI(
        title="Crisscross",
        summary="Multimodal vector search over ONNX dual encoders and faiss bundles.",
        version=API_VERSION,
        lifespan=lifespan,
        # FastAPI's own OpenTelemetry hooks ask for a tracer and a meter on every request
        # (2 % of the event loop's time at saturation); the service's metrics are Prometheus.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    setattr(app.state, STATE_ATTRIBUTE, state)
    install_error_handlers(app)
    # Starlette runs the middleware added last first: the context wraps the body gate, so a
    # 413 or 408 still carries a request id, is logged and counted.
    # JSON bodies keep max_body_bytes; the upload route's limit follows max_image_bytes.
    json_limit = BodyLimit(
        settings.max_body_bytes,
        hint=f"send images over about {settings.max_json_image_bytes} bytes as a file to "
        f"{UPLOAD_ROUTE} (multipart/form-data)",
    )
    # OpenAI's clients batch up to 2048 inputs (max_embed_inputs), which long texts overflow.
    embeddings_limit = BodyLimit(
        settings.max_body_bytes,
        hint="send fewer or shorter inputs per request (the openai package, LangChain's "
        "OpenAIEmbeddings: a smaller chunk_size), or raise max_body_bytes",
    )
    upload_limit = BodyLimit(settings.upload_body_limit, setting="max_upload_body_bytes")
    bulk_limit = BodyLimit(settings.max_bulk_body_bytes, setting="max_bulk_body_bytes")
    write_limit = BodyLimit(settings.max_write_body_bytes, setting="max_write_body_bytes")
    # Inside the key check (an unknown client gets 401, not 503), outside everything that reads
    # or parses the body.
    gate = state.admission
    # Read from the gate when /metrics is scraped: nothing to update on the request path.
    state.metrics.watch_admission(gate)
    app.add_middleware(
        ConcurrencyLimitMiddleware,
        gate=gate,
        paths=WORK_ROUTES,
        retry_after_s=settings.overload_retry_after_s,
        metrics=state.metrics,
    )
    # Every body is read whole before admission: a slow or stalled one holds no in-flight slot.
    app.add_middleware(
        BodyGateMiddleware,
        default=json_limit,
        by_path={
            UPLOAD_ROUTE: upload_limit,
            BULK_ROUTE: bulk_limit,
            "/v1/embeddings": embeddings_limit,
        },
        by_prefix={COLLECTIONS_PREFIX: write_limit},
        timeout_s=settings.body_timeout_s,
        route_paths={
            route.path
            for router in ROUTERS
            for route in router.routes
            if isinstance(route, APIRoute) and "{" not in route.path
        },
        on_timeout=lambda: state.metrics.count_client_refusal("body_timeout"),
    )
    # Keys are checked before any body byte is read.
    keys = KeyRing(settings.read_keys, settings.admin_keys, settings.write_keys)
    app.add_middleware(ApiKeyMiddleware, keys=keys, metrics=state.metrics, routes=app.router.routes)
    # CORS outside the key check: preflights carry no key, and refusals need CORS headers for
    # a browser to show them.
    if settings.cors_origins:
        app.add_middleware(
            CorsMiddleware,
            allow_origins=settings.cors_origins,
            allow_credentials=settings.cors_allow_credentials,
            allow_methods=["GET", "POST"],
            allow_headers=CORS_REQUEST_HEADERS,
            expose_headers=CORS_EXPOSED_HEADERS,
            max_age=CORS_MAX_AGE_S,
        )
    app.add_middleware(
        RequestContextMiddleware,
        metrics=state.metrics,
        max_request_id_chars=settings.max_request_id_chars,
        request_timeout_s=settings.request_timeout_s,
        tracing=tracing,
        access_log_format=settings.access_log_format,
        replica=lambda: None if state.replicas is None else state.replicas.answered_by(),
    )
    for router in ROUTERS:
        app.include_router(router)
    _document_as_configured(app, state, keys)
    return app


def _document_as_configured(app: FastAPI, state: ServiceState, keys: KeyRing) -> None:
    """Generate the OpenAPI document with the settings' limits and the key checks this server
    makes (:func:`service.http.openapi.configured_document`): once before the catalog is loaded,
    once more after (the served variants' dimension)."""
    generate = app.openapi
    made_for: tuple[int, ...] | None = None

    def openapi() -> dict[str, Any]:
        nonlocal made_for
        catalog = state.catalog
        dims = tuple(sorted(state.searcher.vector_dims(catalog))) if catalog is not None else ()
        if app.openapi_schema is None or made_for != dims:
            app.openapi_schema = None
            app.openapi_schema = configured_document(
                generate(), state.settings, keys, dims, WORK_ROUTES
            )
            made_for = dims
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

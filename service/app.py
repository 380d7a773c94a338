"""Assembles the FastAPI app: state, lifespan, middleware, error handlers and routes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from fastapi import FastAPI

from encoders.protocols import TextEncoderProtocol
from encoders.text_encoder import OnnxTextEncoder
from service.errors import install_error_handlers
from service.metrics import ServiceMetrics
from service.middleware import BodyLimitMiddleware, RequestContextMiddleware
from service.routes import catalog, embed, health, score, search
from service.settings import Settings
from service.state import STATE_ATTRIBUTE, ServiceState
from service.store import EncoderFactory, load_store

logger = logging.getLogger("crisscross.service")

API_VERSION = "1"


def onnx_encoder_factory(variant_dir: Path, settings: Settings) -> TextEncoderProtocol:
    """The production encoder: onnxruntime over the variant folder, providers from settings."""
    return OnnxTextEncoder(
        variant_dir, providers=settings.providers, intra_op_threads=settings.intra_op_threads
    )


async def _load_in_background(state: ServiceState) -> None:
    """Load bundles and encoders in a worker thread; publish the store, or the reason why not.

    Failures are recorded rather than raised: the process stays up, ``/healthz`` answers 200,
    and ``/readyz`` answers 503 with the reason, which is what an orchestrator and an operator
    both need to see.
    """
    try:
        store = await anyio.to_thread.run_sync(
            load_store, state.settings, state.encoder_factory, abandon_on_cancel=True
        )
    except Exception as exc:  # every failure must reach /readyz, not vanish with the task
        state.load_error = str(exc) or type(exc).__name__
        state.metrics.load_failures.inc()
        logger.exception("refusing to serve: %s", state.load_error)
        return
    state.metrics.record_loaded(
        bundles=sorted({(c.bundle, c.bundle_version, c.variant) for c in store.collections}),
        collections=[
            (c.variant, c.name, c.bundle, c.bundle_version, c.collection.count)
            for c in store.collections
        ],
        variants=[
            (v.name, v.encoder.precision, v.encoder.providers, v.encoder.fingerprint)
            for v in store.variants
        ],
    )
    state.store = store
    logger.info("ready: serving %d collections", len(store.collections))


def create_app(settings: Settings, *, encoder_factory: EncoderFactory | None = None) -> FastAPI:
    """Build the service app for ``settings``.

    Bundles and encoders load in the background once the lifespan starts (``/readyz`` is 503
    until then). ``encoder_factory(variant_dir, settings)`` builds each variant's text encoder;
    the default is :func:`onnx_encoder_factory`. Nothing is shared between apps.
    """
    state = ServiceState(
        settings=settings,
        metrics=ServiceMetrics(),
        encoder_factory=encoder_factory or onnx_encoder_factory,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_load_in_background, state)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()

    app = FastAPI(
        title="Crisscross",
        summary="Multimodal vector search over ONNX dual encoders and faiss bundles.",
        version=API_VERSION,
        lifespan=lifespan,
    )
    setattr(app.state, STATE_ATTRIBUTE, state)
    install_error_handlers(app)
    # Starlette runs the middleware added last first: the context wraps the body limit, so a
    # 413 still carries a request id, is logged and counted.
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(
        RequestContextMiddleware,
        metrics=state.metrics,
        max_request_id_chars=settings.max_request_id_chars,
    )
    for module in (search, score, embed, catalog, health):
        app.include_router(module.router)
    return app

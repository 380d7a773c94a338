"""The service's state on ``app.state``, and the FastAPI dependencies that hand it to routes.

Nothing lives at module level: every app built by ``create_app`` carries its own settings,
metrics and store, so tests can run several apps side by side.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from service.batcher import BatchLimits, EncodePool
from service.errors import ErrorCode, ServiceError, quoted
from service.metrics import ServiceMetrics
from service.request_context import RequestContext, choose_request_id, context_of
from service.settings import Settings
from service.store import EncoderFactory, LiveIndexStore

STATE_ATTRIBUTE = "crisscross"


@dataclass
class ServiceState:
    """What one app serves. ``store`` is None until the lifespan has loaded everything;
    ``load_error`` then says why loading failed, if it did. A reload replaces ``store`` with one
    assignment. ``encode_pool`` holds the encoder batchers, ``reload_lock`` serialises reloads;
    each lifespan gets fresh ones (:meth:`begin_lifespan`)."""

    settings: Settings
    metrics: ServiceMetrics
    encoder_factory: EncoderFactory
    store: LiveIndexStore | None = None
    load_error: str | None = None
    draining: bool = False
    encode_pool: EncodePool = field(init=False)
    reload_lock: asyncio.Lock = field(init=False)

    def __post_init__(self) -> None:
        self.begin_lifespan()

    def begin_lifespan(self) -> None:
        """Fresh batchers and a fresh reload lock for a lifespan that begins (an app may live
        through several, as in tests; the previous lifespan closed its batchers)."""
        settings = self.settings
        limits = BatchLimits(
            max_batch_size=settings.max_batch_size,
            max_wait_s=settings.max_wait_s,
            max_queue_depth=settings.max_queue_depth,
            retry_after_s=settings.overload_retry_after_s,
            workers=settings.encoder_workers,
        )
        self.encode_pool = EncodePool(limits, self.metrics)
        self.reload_lock = asyncio.Lock()

    def start_draining(self) -> None:
        """Called on SIGTERM/SIGINT: readiness answers 503 from now on (and the
        ``crisscross_ready`` gauge reads 0), requests still run."""
        self.draining = True
        self.metrics.ready.set(0)

    def not_ready_error(self) -> ServiceError:
        """The 503 not_ready answered while there is no store."""
        if self.draining:
            reason = "shutting down"
        elif self.load_error is not None:
            reason = f"loading failed: {self.load_error}"
        else:
            reason = "bundles and encoders are still loading"
        return ServiceError(
            ErrorCode.NOT_READY,
            f"not ready: {reason}",
            retry_after_s=self.settings.not_ready_retry_after_s,
        )


def publish_store(state: ServiceState, store: LiveIndexStore) -> None:
    """Serve ``store`` from now on (one reference assignment) and publish what it serves in the
    metrics. Requests that already hold the previous store finish on it."""
    state.store = store
    state.metrics.record_loaded(
        bundles=sorted({(c.bundle, c.bundle_version, c.variant) for c in store.collections}),
        collections=[
            (c.variant, c.name, c.bundle, c.bundle_version, c.collection.count)
            for c in store.collections
        ],
        variants=[
            (v.name, tower, v.precision, providers, v.fingerprint)
            for v in store.variants
            for tower, providers in v.providers_by_tower.items()
        ],
    )


async def service_state(request: Request) -> ServiceState:
    """The app's :class:`ServiceState` (a FastAPI dependency).

    The dependencies here are ``async`` although they never await: FastAPI runs a plain ``def``
    dependency on the thread pool, a thread round trip per dependency per request."""
    state = getattr(request.app.state, STATE_ATTRIBUTE)
    assert isinstance(state, ServiceState)
    return state


async def ready_store(state: Annotated[ServiceState, Depends(service_state)]) -> LiveIndexStore:
    """The live store; ``ServiceError`` not_ready (503 + Retry-After) until it is loaded."""
    store = state.store
    if store is None:
        raise state.not_ready_error()
    return store


async def request_context(request: Request) -> RequestContext:
    """The request's timing context (created here when no middleware made one)."""
    context = context_of(request.scope)
    if context is None:
        context = RequestContext(choose_request_id(None, 64))
    return context


async def require_json(request: Request) -> None:
    """Refuse a body that is not declared JSON with 415 unsupported_media_type.

    Without this, FastAPI would hand non-JSON bodies to validation as raw bytes and answer a
    confusing 422.
    """
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json" and not (
        media_type.startswith("application/") and media_type.endswith("+json")
    ):
        shown = quoted(media_type) if media_type else "none"
        raise ServiceError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"content-type must be application/json (got {shown})",
        )


def require_multipart(request: Request) -> None:
    """Refuse a body that is not declared ``multipart/form-data`` with 415
    unsupported_media_type (the upload route reads its form itself, after this check)."""
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "multipart/form-data":
        shown = quoted(media_type) if media_type else "none"
        raise ServiceError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"content-type must be multipart/form-data (got {shown}); send JSON with base64 "
            "images to /v1/search",
        )


StateDep = Annotated[ServiceState, Depends(service_state)]
StoreDep = Annotated[LiveIndexStore, Depends(ready_store)]
ContextDep = Annotated[RequestContext, Depends(request_context)]

"""The service's state on ``app.state``, and the FastAPI dependencies that hand it to routes.

Nothing lives at module level: every app built by ``create_app`` carries its own settings,
metrics and store, so tests can run several apps side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from service.errors import ErrorCode, ServiceError, quoted
from service.metrics import ServiceMetrics
from service.request_context import RequestContext, choose_request_id, context_of
from service.settings import Settings
from service.store import EncoderFactory, LiveIndexStore

STATE_ATTRIBUTE = "crisscross"


@dataclass
class ServiceState:
    """What one app serves. ``store`` is None until the lifespan has loaded everything;
    ``load_error`` then says why loading failed, if it did."""

    settings: Settings
    metrics: ServiceMetrics
    encoder_factory: EncoderFactory
    store: LiveIndexStore | None = None
    load_error: str | None = None
    draining: bool = False

    def start_draining(self) -> None:
        """Called on SIGTERM/SIGINT: readiness answers 503 from now on, requests still run."""
        self.draining = True

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


def service_state(request: Request) -> ServiceState:
    """The app's :class:`ServiceState` (a FastAPI dependency)."""
    state = getattr(request.app.state, STATE_ATTRIBUTE)
    assert isinstance(state, ServiceState)
    return state


def ready_store(state: Annotated[ServiceState, Depends(service_state)]) -> LiveIndexStore:
    """The live store; ``ServiceError`` not_ready (503 + Retry-After) until it is loaded."""
    store = state.store
    if store is None:
        raise state.not_ready_error()
    return store


def request_context(request: Request) -> RequestContext:
    """The request's timing context (created here when no middleware made one)."""
    context = context_of(request.scope)
    if context is None:
        context = RequestContext(choose_request_id(None, 64))
    return context


def require_json(request: Request) -> None:
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

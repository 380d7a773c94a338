"""The FastAPI dependencies that hand routes the app's state (:mod:`service.lifecycle.state`),
its live catalog and the request's context, and the content-type checks of the body routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from starlette.types import Scope

from service.engine.collection.catalog import Catalog
from service.exceptions import quoted
from service.http.errors import ErrorCode, ServiceError
from service.lifecycle.state import STATE_ATTRIBUTE, ServiceState
from service.request_context import RequestContext, choose_request_id, context_of


def state_of(request: Request) -> ServiceState:
    """The app's :class:`ServiceState`."""
    state = getattr(request.app.state, STATE_ATTRIBUTE)
    assert isinstance(state, ServiceState)
    return state


def ready_catalog_of(state: ServiceState) -> Catalog:
    """The live catalog; ``ServiceError`` not_ready (503 + Retry-After) until it is loaded."""
    catalog = state.catalog
    if catalog is None:
        raise state.not_ready_error()
    return catalog


def request_context_of(scope: Scope) -> RequestContext:
    """The request's timing context (a fresh one when no middleware made one)."""
    context = context_of(scope)
    return context if context is not None else RequestContext(choose_request_id(None, 64))


# The FastAPI dependencies are ``async`` although they never await: FastAPI runs a plain
# ``def`` dependency on the thread pool, a thread round trip per dependency per request.


async def service_state(request: Request) -> ServiceState:
    """The app's :class:`ServiceState` (a FastAPI dependency)."""
    return state_of(request)


async def ready_catalog(state: Annotated[ServiceState, Depends(service_state)]) -> Catalog:
    """The live catalog (a FastAPI dependency); 503 not_ready until it is loaded."""
    return ready_catalog_of(state)


async def request_context(request: Request) -> RequestContext:
    """The request's timing context (a FastAPI dependency)."""
    return request_context_of(request.scope)


async def require_json(request: Request) -> None:
    """Refuse a body that is not declared JSON (a FastAPI dependency): 415; see
    :func:`refuse_unless_json`."""
    refuse_unless_json(request)


def refuse_unless_json(request: Request) -> None:
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
CatalogDep = Annotated[Catalog, Depends(ready_catalog)]
ContextDep = Annotated[RequestContext, Depends(request_context)]
CollectionName = Annotated[str, Path(description="The live collection's name.")]
"""A route's ``{name}`` path parameter: a live collection."""
AnyCollectionName = Annotated[
    str,
    Path(
        description="The collection's name: a live collection, a sharded one, or a bundle "
        "collection (bare, or qualified as <bundle>:<collection>), found as a search finds it."
    ),
]
"""A route's ``{name}`` path parameter where any kind of collection is read (scroll, count)."""
ItemIdParam = Annotated[str, Path(description="The item's id.")]
"""A route's ``{id}`` path parameter: an item of a live collection."""

"""The router's HTTP API: search a sharded collection as one, and see its shards.

Routes:

- ``POST /v1/search`` ``{"query": {"text": ...} | {"vector": [...]}, "k", "offset",
  "include_metadata", "collection"?}`` → the merged page with ``partial`` and
  ``missing_shards``; text queries need the router to hold the variant's text tower.
- ``GET /healthz`` (the router is up), ``GET /readyz`` (every shard answers its health check
  in time, else 503 ``not_ready``), ``GET /v1/shards`` (the shard map and each shard's status).

Errors have the service's one shape, ``{"error": {"code", "message", "request_id", "type",
"param"}}``, through
:func:`service.http.errors.install_error_handlers` (422 invalid input, 413 body too large, 404
unknown route or collection, 503 not_ready); shards that do not answer under the ``fail`` policy are
503 ``shards_unavailable`` + ``Retry-After`` + ``x-missing-shards`` (a code of this app: the
service's table does not know shards). Anything unexpected is a 500 ``internal`` — a bug, never a
shard being down.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Annotated

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cluster.router_settings import RouterSettings
from cluster.shard_router import ShardRouter, ShardsUnavailableError
from cluster.shard_split import ShardMap
from encoders.protocols import TextEncoderProtocol
from service.engine.query.query import normalised_query_vector
from service.http.errors import ErrorCode, ServiceError, install_error_handlers
from service.http.limits import check_page_limits, text_too_long
from service.http.middleware import (
    REQUEST_ID_HEADER,
    BodyGateMiddleware,
    BodyLimit,
    ClientDisconnectedError,
    answer_internal_error,
    open_request_context,
)
from service.http.schemas.error_body import ErrorResponse
from service.http.schemas.queries import TextQuery, VectorQuery
from service.http.schemas.search import SearchResult
from service.http.schemas.wire import JsonInteger, one_key_tag
from service.request_context import RequestIds, request_id_of

logger = logging.getLogger(__name__)

SHARDS_UNAVAILABLE = "shards_unavailable"
"""The error code of a search refused because shards did not answer (503 + Retry-After)."""
MISSING_SHARDS_HEADER = "x-missing-shards"


_query_kind = one_key_tag({"text": TextQuery, "vector": VectorQuery})

RoutedQuery = Annotated[
    Annotated[TextQuery, Tag("text")] | Annotated[VectorQuery, Tag("vector")],
    Discriminator(
        _query_kind,
        custom_error_type="query_kind",
        custom_error_message="give exactly one of 'text' or 'vector'",
    ),
]


class RoutedSearchRequest(BaseModel):
    """``POST /v1/search`` on the router: the ``k`` nearest items of the sharded collection."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    query: RoutedQuery
    collection: str | None = Field(
        default=None,
        description="The sharded collection's name (bare or '<bundle>:<collection>'); optional.",
    )
    k: JsonInteger = Field(default=10, ge=1, description="Results wanted, 1..max_k.")
    offset: JsonInteger = Field(
        default=0, ge=0, description="Skip this many best results (0..max_offset)."
    )
    include_metadata: bool = Field(default=True, description="Return each hit's metadata.")

    def check_limits(self, settings: RouterSettings) -> None:
        """Raise ``ServiceError`` invalid_input when a settings limit is exceeded."""
        check_page_limits(self.k, self.offset, max_k=settings.max_k, max_offset=settings.max_offset)
        if isinstance(self.query, TextQuery) and (
            error := text_too_long("query.text", self.query.text, settings.max_text_chars)
        ):
            raise error


class RoutedTimings(BaseModel):
    """Milliseconds spent per stage."""

    encode: float = Field(description="The text tower (0 for a vector query).")
    search: float = Field(description="Fan-out to the shards, their searches and the merge.")
    total: float


class RoutedSearchResponse(BaseModel):
    """The merged page."""

    results: list[SearchResult]
    collection: str
    variant: str
    bundle: str = Field(description="The bundle the shards were cut from.")
    bundle_version: str
    next_offset: int | None = Field(description="The next page's offset; null at the end.")
    partial: bool = Field(
        description="True when some shards' rows are absent (they did not "
        "answer in time and the policy is 'partial')."
    )
    missing_shards: list[str] = Field(description="The shards absent from this answer.")
    timings_ms: RoutedTimings


class ShardInfo(BaseModel):
    """One shard of ``GET /v1/shards``."""

    name: str
    bundle: str
    version: str
    row_offset: int
    count: int
    status: str = Field(description="'ok' or 'down'.")
    reason: str | None = None


class ShardsResponse(BaseModel):
    """``GET /v1/shards``: the shard map and each shard's status."""

    collection: str
    bundle: str
    bundle_version: str
    variant: str
    total_count: int
    missing_shards_policy: str
    shard_deadline_ms: int
    shards: list[ShardInfo]


class _RequestIdMiddleware:
    """Gives each request an id (echoing a sane ``x-request-id``) that error bodies quote and
    the response carries; an exception that escapes the app is a 500 ``internal``."""

    def __init__(self, app: ASGIApp, *, max_request_id_chars: int) -> None:
        self.app = app
        self.max_request_id_chars = max_request_id_chars
        self.request_ids = RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        context = open_request_context(scope, self.max_request_id_chars, self.request_ids)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = context.request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except ClientDisconnectedError:
            return  # the client left mid-body: nobody to answer
        except Exception:
            logger.exception("unhandled error (request %s)", context.request_id)
            if started:
                raise
            await answer_internal_error(scope, receive, send_with_id, context.request_id)


def shards_unavailable_response(
    error: ShardsUnavailableError, request_id: str, retry_after_s: int
) -> JSONResponse:
    """503 ``shards_unavailable`` in the one error shape, naming the missing shards."""
    return JSONResponse(
        {
            "error": {
                "code": SHARDS_UNAVAILABLE,
                "message": str(error),
                "request_id": request_id,
                "type": "service_unavailable_error",
                "param": None,
            }
        },
        status_code=503,
        headers={
            "Retry-After": str(retry_after_s),
            MISSING_SHARDS_HEADER: ",".join(error.missing),
        },
    )


def create_router_app(
    settings: RouterSettings,
    shard_map: ShardMap,
    router: ShardRouter,
    encoder: TextEncoderProtocol | None = None,
) -> FastAPI:
    """The router's ASGI app over ``router`` (its shards and policy), answering for the
    collection ``shard_map`` describes; ``encoder`` (the variant's text tower) answers text
    queries, without one they are 422."""
    if encoder is not None and encoder.dim != shard_map.dim:
        raise ValueError(
            f"the text encoder has dimension {encoder.dim}, the shards {shard_map.dim}"
        )
    app = FastAPI(
        title="Crisscross shard router",
        responses={422: {"model": ErrorResponse}, 503: {"model": ErrorResponse}},
    )
    install_error_handlers(app)
    names = {shard_map.collection, f"{shard_map.source_bundle}:{shard_map.collection}"}

    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ShardsUnavailableError)
        return shards_unavailable_response(
            exc, request_id_of(request.scope), settings.retry_after_s
        )

    app.add_exception_handler(ShardsUnavailableError, unavailable)

    def query_vector(body: RoutedSearchRequest) -> Callable[[], np.ndarray]:
        query = body.query
        if isinstance(query, VectorQuery):
            vector = normalised_query_vector(query.vector, shard_map.dim, "query.vector")
            return lambda: vector
        if encoder is None:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                "query.text: this router has no text encoder (start it with --variant); "
                "send a vector query",
            )
        text = query.text
        return lambda: np.asarray(encoder.encode_texts([text])[0], dtype=np.float32)

    @app.post("/v1/search", response_model=RoutedSearchResponse)
    async def search(body: RoutedSearchRequest) -> RoutedSearchResponse:
        started = time.perf_counter()
        body.check_limits(settings)
        if body.collection is not None and body.collection not in names:
            raise ServiceError(
                ErrorCode.NOT_FOUND,
                f"unknown collection {body.collection!r}; this router serves "
                f"{shard_map.source_bundle}:{shard_map.collection}",
            )
        make_vector = query_vector(body)
        vector = await asyncio.to_thread(make_vector)
        encoded = time.perf_counter()
        answer = await router.search(
            vector.reshape(1, -1), body.k, body.offset, body.include_metadata
        )
        done = time.perf_counter()
        hits = answer.pages[0]
        end = body.offset + body.k
        return RoutedSearchResponse(
            results=[
                SearchResult(
                    id=hit.item_id,
                    score=hit.score,
                    rank=hit.rank,
                    metadata=dict(hit.metadata) if hit.metadata is not None else None,
                )
                for hit in hits
            ],
            collection=shard_map.collection,
            variant=shard_map.variant_name,
            bundle=shard_map.source_bundle,
            bundle_version=shard_map.source_version,
            next_offset=end if end < shard_map.total_count else None,
            partial=answer.partial,
            missing_shards=list(answer.missing),
            timings_ms=RoutedTimings(
                encode=(encoded - started) * 1000.0,
                search=(done - encoded) * 1000.0,
                total=(done - started) * 1000.0,
            ),
        )

    @app.api_route(
        "/v1/collections/{rest:path}",
        methods=["POST", "PATCH", "DELETE"],
        responses={409: {"model": ErrorResponse}},
        include_in_schema=False,
    )
    @app.post("/v1/collections", responses={409: {"model": ErrorResponse}}, include_in_schema=False)
    async def writes(rest: str = "") -> None:
        del rest  # any path under /v1/collections: every write is refused alike
        raise ServiceError(
            ErrorCode.WRITES_UNAVAILABLE,
            "sharded serving on Ray serves bundles read-only: live collections (create, "
            "upsert, delete) are written on a single-process service with collections_dir; "
            "shard and publish their data as bundles to serve them here",
        )

    @app.get("/healthz")
    async def healthz() -> Mapping[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> Mapping[str, str]:
        statuses = await router.statuses(settings.health_timeout_s)
        down = [status.name for status in statuses if not status.ok]
        if down:
            raise ServiceError(
                ErrorCode.NOT_READY,
                f"shards not answering: {', '.join(down)}",
                retry_after_s=settings.retry_after_s,
            )
        return {"status": "ready"}

    @app.get("/v1/shards", response_model=ShardsResponse)
    async def shards() -> ShardsResponse:
        statuses = {s.name: s for s in await router.statuses(settings.health_timeout_s)}
        return ShardsResponse(
            collection=shard_map.collection,
            bundle=shard_map.source_bundle,
            bundle_version=shard_map.source_version,
            variant=shard_map.variant_name,
            total_count=shard_map.total_count,
            missing_shards_policy=settings.missing_shards,
            shard_deadline_ms=settings.shard_deadline_ms,
            shards=[
                ShardInfo(
                    name=entry.name,
                    bundle=entry.bundle,
                    version=entry.version,
                    row_offset=entry.row_offset,
                    count=entry.count,
                    status="ok" if statuses[entry.name].ok else "down",
                    reason=statuses[entry.name].reason,
                )
                for entry in shard_map.shards
            ],
        )

    # Added last, run first: the request id wraps everything, the body gate the routes.
    app.add_middleware(
        BodyGateMiddleware,
        default=BodyLimit(settings.max_body_bytes),
        timeout_s=settings.body_timeout_s,
        route_paths=("/v1/search",),
    )
    app.add_middleware(_RequestIdMiddleware, max_request_id_chars=settings.max_request_id_chars)
    return app

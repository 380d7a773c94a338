"""Operations: ``GET /healthz`` (liveness), ``GET /readyz`` (readiness), ``GET /metrics``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from service.exceptions import NotReadyError
from service.http.dependencies import StateDep
from service.http.routes import error_responses
from service.http.schemas.health import StatusResponse

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=StatusResponse, summary="Liveness")
async def healthz() -> StatusResponse:
    """200 while the process answers at all, loaded or not."""
    return StatusResponse(status="ok")


@router.get(
    "/readyz",
    response_model=StatusResponse,
    responses=error_responses(503),
    summary="Readiness",
)
async def readyz(state: StateDep) -> StatusResponse:
    """200 once every bundle and encoder is loaded (and, for sharded collections, while their
    shards answer as their policy needs); 503 not_ready with Retry-After before (the message
    says whether loading is still running or failed, and why), while shards are down, and once
    shutdown began."""
    if state.catalog is None or state.draining:
        raise state.not_ready_error()
    sharded = state.searcher.sharded
    reason = None if sharded is None else await sharded.not_ready()
    if reason is not None:
        raise NotReadyError(f"not ready: {reason}", state.settings.not_ready_retry_after_s)
    return StatusResponse(status="ready")


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(state: StateDep) -> Response:
    """This app's metrics in Prometheus text exposition format."""
    return Response(content=state.metrics.exposition(), media_type=state.metrics.content_type)

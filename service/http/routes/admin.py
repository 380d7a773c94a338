"""``POST /v1/admin/reload``: load new bundle versions and swap them in atomically (admin key)."""

from __future__ import annotations

import logging
import time
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Request

from service.exceptions import BundleRejectedError, NotFoundError, quoted
from service.http.dependencies import StateDep
from service.http.errors import ErrorCode, ServiceError, code_of
from service.http.routes import error_responses
from service.http.schemas.admin import ReloadedBundle, ReloadRequest, ReloadResponse
from service.lifecycle.reloading import reload_here

logger = logging.getLogger("crisscross.service")

router = APIRouter(tags=["admin"])


async def _require_json_if_body(request: Request) -> None:
    """A body, when there is one, must be declared JSON (415 otherwise); no body is fine."""
    has_body = request.headers.get("content-length", "0") not in {"", "0"} or (
        "transfer-encoding" in request.headers
    )
    if not has_body:
        return
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        shown = quoted(media_type) if media_type else "none"
        raise ServiceError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE, f"content-type must be application/json (got {shown})"
        )


async def _reload_enabled(state: StateDep) -> None:
    """403 forbidden unless the ``admin_reload`` setting is on."""
    if not state.settings.admin_reload:
        raise ServiceError(
            ErrorCode.FORBIDDEN,
            "reloading is disabled on this server (set CRISSCROSS_ADMIN_RELOAD=true)",
        )


@router.post(
    "/v1/admin/reload",
    response_model=ReloadResponse,
    responses=error_responses(
        401,
        403,
        404,
        409,
        415,
        422,
        503,
        descriptions={
            404: "An unknown bundle, or a version the bundle does not have (not_found).",
            409: "The bundle version is corrupt or does not fit the loaded encoders; the served "
            "version keeps serving (bundle_rejected).",
        },
    ),
    dependencies=[Depends(_reload_enabled), Depends(_require_json_if_body)],
    summary="Load new bundle versions and swap them in atomically (admin key)",
)
async def reload(
    state: StateDep,
    body: Annotated[ReloadRequest | None, Body()] = None,
) -> ReloadResponse:
    """Reads every served bundle's ``CURRENT`` again (no body, or ``{}``), one bundle's
    (``{"bundle"}``) or loads a given version (``{"bundle", "version"}``). New versions are
    loaded and verified off the event loop — file hashes, the variant fingerprint and dimension
    against the loaded encoder — then swapped in with one reference assignment: requests already
    running finish on the version they started with, so each answer comes wholly from one
    version (its ``bundle_version``). Reloads are serialised.

    A corrupt or mismatched version is refused with 409 ``bundle_rejected`` and the served one
    keeps serving; an unknown bundle or version is 404. Needs an admin key and the
    ``admin_reload`` setting (403 otherwise).

    With several worker processes the one reached reloads first, then every other worker loads
    the same versions (not what ``CURRENT`` names by then); the answer comes once they all
    serve them, or after ``reload_broadcast_timeout_s``, and ``workers`` counts those that do.
    """
    started = time.perf_counter()
    request = body or ReloadRequest()
    try:
        changes, workers = await reload_here(state, request.bundle, request.version)
    except (BundleRejectedError, NotFoundError) as error:
        logger.warning("reload refused (%s): %s", code_of(error).value, error.message)
        raise
    return ReloadResponse(
        bundles=[
            ReloadedBundle(
                bundle=change.bundle,
                previous_version=change.previous_version,
                version=change.version,
                changed=change.changed,
            )
            for change in changes
        ],
        load_ms=(time.perf_counter() - started) * 1000.0,
        workers=workers,
    )

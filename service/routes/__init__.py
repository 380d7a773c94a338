"""HTTP routes, one module per concept."""

from __future__ import annotations

from typing import Any

from service.schemas import ErrorResponse

_DESCRIPTIONS = {
    404: "Unknown variant, collection or item (not_found).",
    413: "Body over max_body_bytes (payload_too_large).",
    415: "Body not declared application/json (unsupported_media_type).",
    422: "Invalid input or a limit exceeded (invalid_input).",
    503: "Bundles still loading (not_ready), with Retry-After.",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting the error shape for ``statuses``."""
    return {
        status: {"model": ErrorResponse, "description": _DESCRIPTIONS[status]}
        for status in statuses
    }


JSON_BODY_ERRORS = error_responses(404, 413, 415, 422, 503)

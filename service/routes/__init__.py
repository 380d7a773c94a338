"""HTTP routes, one module per concept."""

from __future__ import annotations

from typing import Any

from service.schemas import ErrorResponse

_DESCRIPTIONS = {
    404: "Unknown variant, collection or item (not_found).",
    413: "Body over its limit, or an image over max_image_bytes or max_image_pixels "
    "(payload_too_large).",
    415: "Body not declared with the route's content type, or an image format that is not "
    "accepted (unsupported_media_type).",
    422: "Invalid input or a limit exceeded, bad base64, bytes that are not an image, or a "
    "variant without the tower the input needs (invalid_input).",
    503: "Bundles still loading (not_ready), with Retry-After.",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting the error shape for ``statuses``."""
    return {
        status: {"model": ErrorResponse, "description": _DESCRIPTIONS[status]}
        for status in statuses
    }


JSON_BODY_ERRORS = error_responses(404, 413, 415, 422, 503)

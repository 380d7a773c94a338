"""HTTP routes, one module per concept."""

from __future__ import annotations

from typing import Any

from service.http.schemas.error_body import ErrorResponse

_DESCRIPTIONS = {
    401: "No API key sent where the server needs one (unauthorized), with WWW-Authenticate.",
    403: "The API key is not valid here, or the route is disabled on this server (forbidden).",
    404: "Unknown variant, collection or item (not_found).",
    413: "Body over its limit, or an image over max_image_bytes or max_image_pixels "
    "(payload_too_large).",
    415: "Body not declared with the route's content type, or an image format that is not "
    "accepted (unsupported_media_type).",
    409: "The bundle version is corrupt or does not fit the loaded encoders; the served "
    "version keeps serving (bundle_rejected).",
    422: "Invalid input or a limit exceeded, bad base64, bytes that are not an image, a vector "
    "of the wrong dimension, not finite or of zero norm, or a variant without the tower the "
    "input needs (invalid_input).",
    503: "Bundles still loading or the server shutting down (not_ready), or the encoder queue "
    "full or the request's deadline passed while it queued (overloaded); with Retry-After.",
}

AUTH_ERRORS = (401, 403)
"""Every route outside the probes, metrics and docs may answer these (see service.http.auth)."""


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting the error shape for ``statuses``."""
    return {
        status: {"model": ErrorResponse, "description": _DESCRIPTIONS[status]}
        for status in sorted(set(statuses))
    }


JSON_BODY_ERRORS = error_responses(*AUTH_ERRORS, 404, 413, 415, 422, 503)

"""HTTP routes, one module per concept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.http.schemas.error_body import ErrorResponse

_DESCRIPTIONS = {
    401: "No API key sent where the server needs one (unauthorized), with WWW-Authenticate.",
    403: "The API key is not valid here, or the route is disabled on this server (forbidden).",
    404: "A well-formed request naming a variant, collection or item that is not served "
    "(not_found).",
    409: "A well-formed request that does not fit what is served; the code says which "
    "conflict: a variant without the tower a side needs (tower_missing), a collection name "
    "several served collections answer to, or no variant named where several are served "
    "without a default (ambiguous_name; the message lists the choices), a qualified "
    "collection with a variant that does not embed it (variant_mismatch), a vector whose "
    "length is not the variant's dimension (dimension_mismatch), a filter naming a field the "
    "collection lacks or comparing it with a value of another type (filter_not_applicable), "
    "search parameters the collection's index does not take (search_param_not_applicable), "
    "keywords on a field without text or a re-rank by a variant that does not serve the "
    "collection (lever_not_applicable).",
    413: "Body over its limit, or an image over max_image_bytes or max_image_pixels "
    "(payload_too_large).",
    415: "Body not declared with the route's content type, or an image format that is not "
    "accepted (unsupported_media_type).",
    422: "Invalid input: the request breaks the schema or a limit the document states, bad "
    "base64, bytes that are not an image, a vector of zero norm, a range no value can "
    "satisfy, an input the encoder gives no finite embedding for (invalid_input).",
    421: "This server follows a leader and takes no writes (not_leader): x-leader names the "
    "leader to send them to, when known.",
    503: "Bundles still loading or the server shutting down (not_ready), or the encoder queue "
    "full or the request's deadline passed while it queued (overloaded); with Retry-After.",
}

AUTH_ERRORS = (401, 403)
"""Every route outside the probes, metrics and docs may answer these (see service.http.auth)."""


def error_responses(
    *statuses: int, descriptions: Mapping[int, str] | None = None
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting the error shape for ``statuses``;
    ``descriptions`` replaces the shared description of a status where a route means
    something else by it (the admin reload's 404 and 409)."""
    described = {**_DESCRIPTIONS, **(descriptions or {})}
    return {
        status: {"model": ErrorResponse, "description": described[status]}
        for status in sorted(set(statuses))
    }


JSON_BODY_ERRORS = error_responses(*AUTH_ERRORS, 404, 409, 413, 415, 422, 503)
"""The errors of a work route that searches, scores or embeds one request's inputs (JSON or
the upload form)."""

"""The one error shape and the one table from error code to HTTP status.

Every error the service answers is ``{"error": {"code", "message", "request_id", "type",
"param"}}``. This is the only place that turns errors into statuses: the domain's errors
(:mod:`service.exceptions`) through :data:`CODE_OF_DOMAIN_ERROR` and
:data:`CODE_OF_IMAGE_REFUSAL`, the HTTP layer's own refusals (:class:`ServiceError`, raised by
routes, schemas and middleware), FastAPI's validation errors and Starlette's HTTP exceptions,
each through :data:`STATUS_OF`; unexpected
exceptions are caught by :class:`service.http.middleware.RequestContextMiddleware` and become
``internal`` (500) — a bug, never something a client can cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from service.exceptions import (
    AmbiguousNameError,
    BundleRejectedError,
    CollectionEmptyError,
    CollectionExistsError,
    CollectionLimitError,
    DimensionMismatchError,
    DomainError,
    FieldMismatchError,
    FilterNotApplicableError,
    ImageRefusedError,
    InvalidQueryError,
    LeverNotApplicableError,
    NoQuorumError,
    NotFoundError,
    NotLeaderError,
    NotReadyError,
    OverloadedError,
    PromotionRefusedError,
    RefusalReason,
    ReplicaBehindError,
    ReplicationTimeoutError,
    SearchParamNotApplicableError,
    ShardsUnavailableError,
    ShuttingDownError,
    TowerMissingError,
    VariantMismatchError,
    WriteFailedError,
    WritesUnavailableError,
)
from service.http.validation_messages import (
    body_schema_of,
    validation_message,
    validation_param,
)
from service.request_context import request_id_of


class ErrorCode(StrEnum):
    """Error codes of the HTTP API (docs/contracts.md)."""

    INVALID_INPUT = "invalid_input"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    TOWER_MISSING = "tower_missing"
    AMBIGUOUS_NAME = "ambiguous_name"
    VARIANT_MISMATCH = "variant_mismatch"
    DIMENSION_MISMATCH = "dimension_mismatch"
    FILTER_NOT_APPLICABLE = "filter_not_applicable"
    FIELD_MISMATCH = "field_mismatch"
    SEARCH_PARAM_NOT_APPLICABLE = "search_param_not_applicable"
    LEVER_NOT_APPLICABLE = "lever_not_applicable"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    REQUEST_TIMEOUT = "request_timeout"
    HEADERS_TOO_LARGE = "headers_too_large"
    BUNDLE_REJECTED = "bundle_rejected"
    COLLECTION_EXISTS = "collection_exists"
    COLLECTION_LIMIT = "collection_limit"
    COLLECTION_EMPTY = "collection_empty"
    WRITES_UNAVAILABLE = "writes_unavailable"
    WRITE_FAILED = "write_failed"
    OVERLOADED = "overloaded"
    NOT_READY = "not_ready"
    SHARDS_UNAVAILABLE = "shards_unavailable"
    NOT_LEADER = "not_leader"
    NO_QUORUM = "no_quorum"
    REPLICATION_TIMEOUT = "replication_timeout"
    REPLICA_BEHIND = "replica_behind"
    PROMOTION_REFUSED = "promotion_refused"
    INTERNAL = "internal"


STATUS_OF: Mapping[ErrorCode, int] = {
    ErrorCode.INVALID_INPUT: 422,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.TOWER_MISSING: 409,
    ErrorCode.AMBIGUOUS_NAME: 409,
    ErrorCode.VARIANT_MISMATCH: 409,
    ErrorCode.DIMENSION_MISMATCH: 409,
    ErrorCode.FILTER_NOT_APPLICABLE: 409,
    ErrorCode.FIELD_MISMATCH: 409,
    ErrorCode.SEARCH_PARAM_NOT_APPLICABLE: 409,
    ErrorCode.LEVER_NOT_APPLICABLE: 409,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.HEADERS_TOO_LARGE: 431,
    ErrorCode.BUNDLE_REJECTED: 409,
    ErrorCode.COLLECTION_EXISTS: 409,
    ErrorCode.COLLECTION_LIMIT: 409,
    ErrorCode.COLLECTION_EMPTY: 409,
    ErrorCode.WRITES_UNAVAILABLE: 409,
    ErrorCode.WRITE_FAILED: 503,
    ErrorCode.OVERLOADED: 503,
    ErrorCode.NOT_READY: 503,
    ErrorCode.SHARDS_UNAVAILABLE: 503,
    ErrorCode.NOT_LEADER: 421,
    ErrorCode.NO_QUORUM: 503,
    ErrorCode.REPLICATION_TIMEOUT: 503,
    ErrorCode.REPLICA_BEHIND: 503,
    ErrorCode.PROMOTION_REFUSED: 409,
    ErrorCode.INTERNAL: 500,
}

CODE_OF_DOMAIN_ERROR: Mapping[type[DomainError], ErrorCode] = {
    NotFoundError: ErrorCode.NOT_FOUND,
    InvalidQueryError: ErrorCode.INVALID_INPUT,
    TowerMissingError: ErrorCode.TOWER_MISSING,
    AmbiguousNameError: ErrorCode.AMBIGUOUS_NAME,
    VariantMismatchError: ErrorCode.VARIANT_MISMATCH,
    DimensionMismatchError: ErrorCode.DIMENSION_MISMATCH,
    FilterNotApplicableError: ErrorCode.FILTER_NOT_APPLICABLE,
    FieldMismatchError: ErrorCode.FIELD_MISMATCH,
    SearchParamNotApplicableError: ErrorCode.SEARCH_PARAM_NOT_APPLICABLE,
    LeverNotApplicableError: ErrorCode.LEVER_NOT_APPLICABLE,
    OverloadedError: ErrorCode.OVERLOADED,
    ShuttingDownError: ErrorCode.NOT_READY,
    NotReadyError: ErrorCode.NOT_READY,
    ShardsUnavailableError: ErrorCode.SHARDS_UNAVAILABLE,
    BundleRejectedError: ErrorCode.BUNDLE_REJECTED,
    CollectionExistsError: ErrorCode.COLLECTION_EXISTS,
    CollectionLimitError: ErrorCode.COLLECTION_LIMIT,
    CollectionEmptyError: ErrorCode.COLLECTION_EMPTY,
    WritesUnavailableError: ErrorCode.WRITES_UNAVAILABLE,
    WriteFailedError: ErrorCode.WRITE_FAILED,
    NotLeaderError: ErrorCode.NOT_LEADER,
    NoQuorumError: ErrorCode.NO_QUORUM,
    ReplicationTimeoutError: ErrorCode.REPLICATION_TIMEOUT,
    ReplicaBehindError: ErrorCode.REPLICA_BEHIND,
    PromotionRefusedError: ErrorCode.PROMOTION_REFUSED,
}
"""The error code of each domain error (its status then comes from :data:`STATUS_OF`).

422 says the request itself is wrong (what the OpenAPI document states, and what no served
state could make right); a well-formed request that does not fit what is served is 404 when it
names something unknown (variant, collection, item) and 409 when the things it names exist but
conflict with what is served (a tower the variant lacks, a name several served collections
answer to, a vector of another dimension, a filter field the collection lacks, a search
parameter its index does not take)."""

CODE_OF_IMAGE_REFUSAL: Mapping[RefusalReason, ErrorCode] = {
    "too_many_bytes": ErrorCode.PAYLOAD_TOO_LARGE,
    "too_many_pixels": ErrorCode.PAYLOAD_TOO_LARGE,
    "unsupported_format": ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    "invalid_image": ErrorCode.INVALID_INPUT,
    "invalid_base64": ErrorCode.INVALID_INPUT,
}
"""The error code of each :class:`service.exceptions.ImageRefusedError` reason (its status then
comes from :data:`STATUS_OF`): over a limit → 413, a refused format → 415, not an image or not
base64 → 422."""

# Starlette raises HTTPException with a bare status (404 no route, 405 wrong method, ...): each
# status whose meaning is one code alone. 409 and 503 have several, and no Starlette answer.
_CODE_OF_STATUS: Mapping[int, ErrorCode] = {
    status: code
    for code, status in STATUS_OF.items()
    if list(STATUS_OF.values()).count(status) == 1
}


class ServiceError(Exception):
    """An error the API answers with its documented status and the one error shape.

    ``retry_after_s`` adds a ``Retry-After`` header (used with the 503 codes); ``param`` names
    the one request field at fault, where there is one (the body's ``param``).
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retry_after_s: int | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s
        self.param = param

    @property
    def status_code(self) -> int:
        """The HTTP status that :data:`STATUS_OF` assigns to this error's code."""
        return STATUS_OF[self.code]


def code_of(error: DomainError) -> ErrorCode:
    """The error code of a domain error (its class, or the nearest base in the table)."""
    if isinstance(error, ImageRefusedError):
        return CODE_OF_IMAGE_REFUSAL[error.reason]
    for cls in type(error).__mro__:
        code = CODE_OF_DOMAIN_ERROR.get(cls)
        if code is not None:
            return code
    return ErrorCode.INVALID_INPUT


def retry_after_of(error: DomainError) -> int | None:
    """The ``Retry-After`` seconds a domain error asks for (overload, shutdown), if any."""
    if isinstance(
        error,
        OverloadedError
        | ShuttingDownError
        | NotReadyError
        | WriteFailedError
        | ShardsUnavailableError
        | NoQuorumError
        | ReplicationTimeoutError
        | ReplicaBehindError,
    ):
        return error.retry_after_s
    return None


MISSING_SHARDS_HEADER = "x-missing-shards"
LEADER_HEADER = "x-leader"
"""On 421 not_leader: the URL of the leader to send the write to."""
SEQ_HEADER = "x-seq"
"""On 503 replication_timeout: the sequence number the write holds on the leader."""
"""Names the shards a 503 ``shards_unavailable`` went without, comma-separated."""


def headers_of(error: DomainError) -> dict[str, str] | None:
    """The headers a domain error's answer carries: ``Retry-After`` where it asks for one,
    ``x-missing-shards`` naming the shards that did not answer."""
    headers = {}
    retry_after_s = retry_after_of(error)
    if retry_after_s is not None:
        headers["Retry-After"] = str(retry_after_s)
    if isinstance(error, ShardsUnavailableError):
        headers[MISSING_SHARDS_HEADER] = ",".join(error.missing)
    leader = error.leader if isinstance(error, NotLeaderError) else None
    if leader and leader.isascii() and leader.isprintable():  # a header value is Latin-1
        headers[LEADER_HEADER] = leader
    if isinstance(error, ReplicationTimeoutError):
        headers[SEQ_HEADER] = str(error.seq)
    return headers or None


MAX_MESSAGE_CHARS = 2000


def _printable(message: str) -> str:
    # A message may quote client text holding lone surrogates ("\ud800" is valid JSON), which
    # cannot be encoded as UTF-8: the response would fail with a 500. Escape them instead.
    text = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "…"


_KIND_OF_STATUS: Mapping[int, str] = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    500: "server_error",
    503: "service_unavailable_error",
}
"""OpenAI's error ``type`` of each status that has its own; every other 4xx is
``invalid_request_error``."""


def error_kind(code: ErrorCode) -> str:
    """The error's ``type`` in OpenAI's terms (the ``openai`` package and its peers read it)."""
    return _KIND_OF_STATUS.get(STATUS_OF[code], "invalid_request_error")


def error_body(
    code: ErrorCode, message: str, request_id: str, *, param: str | None = None
) -> dict[str, dict[str, str | None]]:
    """The JSON body of every error response (the message made safe to encode as UTF-8):
    ``code``, ``message`` and ``request_id``, and OpenAI's ``type`` and ``param`` (the request
    field at fault, where one is)."""
    return {
        "error": {
            "code": code.value,
            "message": _printable(message),
            "request_id": request_id,
            "type": error_kind(code),
            "param": param,
        }
    }


def item_error(error: DomainError) -> tuple[int, dict[str, str | None]]:
    """The status and ``{"code", "message", "param"}`` of a domain error answered inside a 200
    (one search of a bulk request), the message made safe to encode as UTF-8."""
    code = code_of(error)
    body = {"code": code.value, "message": _printable(str(error)), "param": error.param}
    return STATUS_OF[code], body


def error_response(
    code: ErrorCode,
    message: str,
    request_id: str,
    *,
    headers: Mapping[str, str] | None = None,
    param: str | None = None,
) -> JSONResponse:
    """A complete error response: status from :data:`STATUS_OF`, body from :func:`error_body`."""
    return JSONResponse(
        error_body(code, message, request_id, param=param),
        status_code=STATUS_OF[code],
        headers=headers,
    )


async def _service_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else None
    return error_response(
        exc.code, exc.message, request_id_of(request.scope), headers=headers, param=exc.param
    )


async def _domain_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    return error_response(
        code_of(exc),
        exc.message,
        request_id_of(request.scope),
        headers=headers_of(exc),
        param=exc.param,
    )


async def _validation_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    body = body_schema_of(request.scope.get("route"))
    return error_response(
        ErrorCode.INVALID_INPUT,
        validation_message(errors, body),
        request_id_of(request.scope),
        param=validation_param(errors, body),
    )


async def _http_exception_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    request_id = request_id_of(request.scope)
    code = _CODE_OF_STATUS.get(exc.status_code)
    if code is None:
        # A status outside the table (e.g. FastAPI's 400 "error parsing the body") is still the
        # client's doing: answer it as invalid input rather than inventing a new shape.
        code = ErrorCode.INVALID_INPUT if exc.status_code < 500 else ErrorCode.INTERNAL
    if code is ErrorCode.NOT_FOUND:
        message = f"no route {request.url.path}"
    elif code is ErrorCode.METHOD_NOT_ALLOWED:
        message = f"{request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    # Headers of Starlette's and our own HTTP exceptions (Allow, Connection) are server-made.
    headers = dict(exc.headers or {})
    if code is ErrorCode.METHOD_NOT_ALLOWED:
        headers["Allow"] = _allowed_methods(request)
    return error_response(code, message, request_id, headers=headers or None)


def _allowed_methods(request: Request) -> str:
    """The methods of the most specific path template that matches the request's path (the one
    with the fewest parameters: ``POST .../items/delete`` over ``PATCH .../items/{id}``), every
    route of that template counted — Starlette's own 405 names only the first route that
    matches, where several share a path (GET and POST /v1/collections)."""
    path = request.scope.get("path", "")
    by_template: dict[str, set[str]] = {}
    pending: list[Any] = list(request.app.router.routes)
    while pending:
        route = pending.pop()
        included = getattr(route, "original_router", None)  # FastAPI's included routers
        if included is not None:
            pending.extend(included.routes)
            continue
        route_methods = getattr(route, "methods", None)
        path_regex = getattr(route, "path_regex", None)
        if route_methods and path_regex is not None and path_regex.match(path):
            by_template.setdefault(route.path, set()).update(route_methods)
    if not by_template:
        return ""
    fewest = min(template.count("{") for template in by_template)
    methods = {
        method
        for template, allowed in by_template.items()
        if template.count("{") == fewest
        for method in allowed
    }
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    """Route every error FastAPI or Starlette can raise into the one error shape."""
    app.add_exception_handler(ServiceError, _service_error_handler)
    app.add_exception_handler(DomainError, _domain_error_handler)
    app.add_exception_handler(RequestValidationError, _validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, _http_exception_handler)

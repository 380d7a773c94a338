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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter
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
    NotFoundError,
    NotReadyError,
    OverloadedError,
    RefusalReason,
    SearchParamNotApplicableError,
    ShardsUnavailableError,
    ShuttingDownError,
    TowerMissingError,
    VariantMismatchError,
    WriteFailedError,
    WritesUnavailableError,
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
        | ShardsUnavailableError,
    ):
        return error.retry_after_s
    return None


MISSING_SHARDS_HEADER = "x-missing-shards"
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


_LOCATION_KINDS = frozenset({"body", "query", "path", "header", "cookie"})
_NOT_JSON = "body is not valid JSON"

_VALIDATOR_NAME = re.compile(r"^[a-z][a-z-]*\[.*\]$", re.DOTALL)
"""A pydantic-core validator's name (``function-after[_check(), Range]``, ``list[int]``): the
label pydantic puts in a location for a branch of a union, never a request field."""

_SCALAR_BRANCH_OF_TYPE: Mapping[str, str] = {
    "none_required": "none",
    "string_type": "str",
    "int_type": "int",
    "float_type": "float",
    "bool_type": "bool",
    "list_type": "list",
    "dict_type": "dict",
}
"""The label of the union branch an error of each type comes from (``("eq", "int")``)."""


def _location(loc: Sequence[Any]) -> str:
    """``("body", "query", "text")`` → ``query.text``; the leading ``body`` says nothing new."""
    parts = [str(part) for part in loc]
    if parts and parts[0] in _LOCATION_KINDS and len(parts) > 1:
        parts = parts[1:]
    # A tagged union puts its tag before the member's own field, and each tag is the name of
    # that field (``query.text.text``, ``texts.texts.0``): say it once.
    parts = [part for index, part in enumerate(parts) if index == 0 or part != parts[index - 1]]
    return ".".join(parts) or "body"


Schema = Mapping[str, Any]
"""A pydantic-core schema (``TypeAdapter(...).core_schema``), read as plain data."""

_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "json-or-python": ("json_schema", "python_schema"),
    "lax-or-strict": ("strict_schema", "lax_schema"),
}
_SEQUENCES = frozenset({"list", "set", "frozenset", "generator", "tuple"})
_MAX_WALKED_PARTS = 200


def _references(schema: Schema) -> dict[str, Schema]:
    """Every schema of ``schema``'s tree that carries a ``ref``, by that ref (what a
    ``definition-ref`` names)."""
    found: dict[str, Schema] = {}
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            ref = node.get("ref")
            if isinstance(ref, str) and isinstance(node.get("type"), str):
                found.setdefault(ref, node)
            pending.extend(node.values())
        elif isinstance(node, list | tuple):
            pending.extend(node)
    return found


def _walk(schema: Schema, loc: Sequence[Any], refs: Mapping[str, Schema]) -> list[Any] | None:
    """``loc`` (a location pydantic reported under ``schema``) with pydantic's own parts left
    out: a tagged union's tag, a union branch's label (``function-after[...]``, ``none``);
    request fields, list indexes and dict keys stay. None when ``loc`` cannot lie under
    ``schema`` (the caller then tries another branch)."""
    if not loc:
        return []
    kind = schema.get("type")
    part, rest = loc[0], loc[1:]
    if kind == "definition-ref":
        target = refs.get(str(schema.get("schema_ref")))
        return list(loc) if target is None else _walk(target, loc, refs)
    if kind in _ALTERNATIVES or kind == "chain":
        keys = _ALTERNATIVES.get(str(kind), ())
        options = [schema[key] for key in keys if key in schema] or list(schema.get("steps", ()))
        return next(
            (found for option in options if (found := _walk(option, loc, refs)) is not None), None
        )
    if kind in ("model-fields", "typed-dict", "dataclass-args"):
        fields = schema.get("fields", {})
        named = fields.values() if isinstance(fields, Mapping) else fields
        names = fields.keys() if isinstance(fields, Mapping) else [f.get("name") for f in fields]
        for name, field in zip(names, named, strict=True):
            alias = field.get("validation_alias")
            if part == (alias if isinstance(alias, str) else name):
                below = _walk(field["schema"], rest, refs)
                return None if below is None else [part, *below]
        # A field the model does not declare (``extra_forbidden``): nothing lies below it.
        return [part] if not rest else None
    if kind == "tagged-union":
        choices = schema.get("choices", {})
        choice = choices.get(part)
        while isinstance(choice, str | int):  # a tag standing for another tag's choice
            choice = choices.get(choice)
        return None if choice is None else _walk(choice, rest, refs)
    if kind == "union":
        for choice in schema.get("choices", ()):
            if isinstance(choice, tuple):
                choice_schema, label = choice
                if label != part:
                    continue
            else:
                choice_schema = choice
            found = _walk(choice_schema, rest, refs)
            if found is not None:
                return found
        return None
    if kind in _SEQUENCES:
        items = schema.get("items_schema")
        if not isinstance(part, int):
            return None
        if isinstance(items, list):  # a tuple's positions
            items = items[min(part, len(items) - 1)] if items else None
        below = [] if items is None else _walk(items, rest, refs)
        return None if below is None else [part, *below]
    if kind == "dict":
        if rest and rest[0] == "[key]":
            return [part]
        values = schema.get("values_schema")
        below = list(rest) if values is None else _walk(values, rest, refs)
        return None if below is None else [part, *below]
    if kind == "any":
        return list(loc)
    inner = schema.get("schema")
    if isinstance(inner, Mapping):
        # models, fields, defaults, nullables, validator functions, definitions
        return _walk(inner, loc, refs)
    return None


@dataclass(frozen=True)
class BodySchema:
    """A request body type's pydantic-core schema and the schemas its references name: what
    :func:`clean_errors` reads to tell the request's fields from pydantic's own location parts."""

    schema: Schema
    refs: Mapping[str, Schema]


@lru_cache(maxsize=64)
def _cached_body_schema(annotation: Any) -> BodySchema | None:
    return _made_body_schema(annotation)


def _made_body_schema(annotation: Any) -> BodySchema | None:
    try:
        schema: Schema = TypeAdapter(annotation).core_schema
    except Exception:  # a type FastAPI took that pydantic will not adapt: no schema to read
        return None
    return BodySchema(schema, _references(schema))


def body_schema(annotation: Any) -> BodySchema | None:
    """The :class:`BodySchema` of a body type (made once per type); None where pydantic makes
    none."""
    try:
        return _cached_body_schema(annotation)
    except TypeError:  # an unhashable annotation
        return _made_body_schema(annotation)


_ANNOTATED: Any = Annotated  # subscripted with a type and metadata known only at run time


def body_schema_of(route: object) -> BodySchema | None:
    """The :class:`BodySchema` of a FastAPI route's JSON body (its ``body_field``), or None."""
    field_info = getattr(getattr(route, "body_field", None), "field_info", None)
    annotation = getattr(field_info, "annotation", None)
    if annotation is None:
        return None
    metadata = tuple(getattr(field_info, "metadata", ()))  # a discriminator, constraints
    return body_schema(_ANNOTATED[(annotation, *metadata)] if metadata else annotation)


def _pydantic_parts_dropped(loc: Sequence[Any], error_type: str) -> list[Any]:
    """Without a schema to read: drop what can only be pydantic's (a validator's name, the
    scalar branch an error's type names at the end)."""
    parts = [part for part in loc if not (isinstance(part, str) and _VALIDATOR_NAME.match(part))]
    if parts and parts[-1] == _SCALAR_BRANCH_OF_TYPE.get(error_type):
        parts = parts[:-1]
    return parts


def _clean_location(loc: Sequence[Any], error_type: str, body: BodySchema | None) -> str:
    """Where an error is, in the request's own words (``filter.and.0.range``)."""
    parts = list(loc)
    kind = parts[0] if parts and parts[0] in _LOCATION_KINDS else None
    below = parts[1:] if kind is not None else parts
    cleaned: list[Any] | None = None
    if body is not None and kind in (None, "body") and len(below) <= _MAX_WALKED_PARTS:
        try:
            cleaned = _walk(body.schema, below, body.refs)
        except RecursionError:
            cleaned = None
    if cleaned is None:
        cleaned = _pydantic_parts_dropped(below, error_type)
    head = [] if kind is None else [kind]
    return _location([*head, *cleaned])


def clean_errors(
    errors: Sequence[Mapping[str, Any]], body: BodySchema | None = None
) -> list[tuple[str, str]]:
    """Each error's location and text, as a client reads them: locations without pydantic's own
    parts (see :func:`_walk`; ``body`` is the body's schema, where known), pydantic's
    ``Value error, `` left off a validator's own message, an error repeated at one location
    said once, and the ``Input should be None`` of an optional union's ``None`` branch dropped
    where another branch failed at or below that location (it says nothing the client can act
    on: the document never offers null there)."""
    located: list[tuple[str, str, str]] = []
    for error in errors:
        error_type = str(error.get("type", ""))
        if error_type == "json_invalid":
            located.append(("body", error_type, _NOT_JSON))
            continue
        message = str(error.get("msg", "invalid"))
        if error_type == "value_error":
            message = message.removeprefix("Value error, ")
        located.append(
            (_clean_location(error.get("loc", ()), error_type, body), error_type, message)
        )

    def below(location: str, other: str) -> bool:
        return other == location or other.startswith(location + ".") or location == "body"

    kept: list[tuple[str, str]] = []
    for index, (location, error_type, message) in enumerate(located):
        if error_type == "none_required" and any(
            below(location, other)
            for n, (other, other_type, _) in enumerate(located)
            if n != index and other_type != "none_required"
        ):
            continue
        if (location, message) not in kept:
            kept.append((location, message))
    return kept


def validation_message(errors: Sequence[Mapping[str, Any]], body: BodySchema | None = None) -> str:
    """A message built from each error's location and text only (see :func:`clean_errors`).

    The rejected input is never echoed: it may hold NaN, bytes or a client's private text, and
    FastAPI's own handler crashes serialising the first two.
    """
    cleaned = clean_errors(errors, body)
    if not cleaned:
        return "invalid request"
    parts = [
        message if message == _NOT_JSON else f"{location}: {message}"
        for location, message in cleaned[:5]
    ]
    if len(cleaned) > 5:
        parts.append(f"and {len(cleaned) - 5} more")
    return "; ".join(parts)


def validation_param(
    errors: Sequence[Mapping[str, Any]], body: BodySchema | None = None
) -> str | None:
    """The request field a validation error names first (the body's ``param``); None where it
    names the whole body."""
    cleaned = clean_errors(errors, body)
    location = cleaned[0][0] if cleaned else "body"
    return None if location == "body" else location


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

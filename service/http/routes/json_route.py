"""The route class of the JSON work routes (search, bulk, embed, score): documented by FastAPI
like any route, served by a short handler.

FastAPI's per-request machinery (two exit stacks, telemetry hooks, the endpoint's context for
error messages, a MIME parser for the content type, ``json.loads`` and then a validation of
the resulting dict, the generic dependency solver, the response model validated again) took
about 40 % of the event loop's time per search at 800 requests/s. A :class:`JsonRoute`
validates its body once, in pydantic's core, straight from the bytes
(``TypeAdapter.validate_json``), and hands the endpoint the few dependencies a work route
takes (:data:`~service.http.dependencies.StateDep`, :data:`~service.http.dependencies.CatalogDep`,
:data:`~service.http.dependencies.ContextDep`), with the checks in FastAPI's order, so answers and
errors are the same:

1. a body not declared JSON: 415 (:func:`~service.http.dependencies.require_json`);
2. a body that is not JSON: 422 ``body is not valid JSON``;
3. not ready: 503 (the catalog dependency);
4. a body that does not fit the schema: 422 naming each field, as FastAPI's handler would;
5. a body over a settings limit: 422 or 413 (:func:`service.http.limits.check_limits`), before
   the endpoint runs, so no endpoint checks limits itself.

The signature is checked once, when the route is built: an endpoint that takes anything else
fails the app's construction, never a request.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any, get_type_hints

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from service.http.consistency import (
    AcksParam,
    IdempotencyKey,
    MinSeqHeader,
    acks_of_request,
    idempotency_key_of,
    min_seq_of,
)
from service.http.dependencies import (
    AnyCollectionName,
    CatalogDep,
    CollectionName,
    ContextDep,
    ItemIdParam,
    StateDep,
    ready_catalog_of,
    refuse_unless_json,
    request_context_of,
    require_json,
    state_of,
)
from service.http.limits import check_limits
from service.lifecycle.state import ServiceState

_MEDIA_TYPE = "application/json"
Resolver = Callable[[Request, ServiceState], Any]
_RESOLVERS: dict[object, Resolver] = {
    StateDep: lambda _request, state: state,
    CatalogDep: lambda _request, state: ready_catalog_of(state),
    ContextDep: lambda request, _state: request_context_of(request.scope),
    CollectionName: lambda request, _state: str(request.path_params["name"]),
    AnyCollectionName: lambda request, _state: str(request.path_params["name"]),
    ItemIdParam: lambda request, _state: str(request.path_params["id"]),
    AcksParam: lambda request, _state: acks_of_request(request),
    IdempotencyKey: lambda request, _state: idempotency_key_of(request),
    MinSeqHeader: lambda request, _state: min_seq_of(request),
}
# FastAPI's error for a missing body, kept word for word.
_MISSING_BODY = [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]


def _body_errors(error: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors with FastAPI's ``body`` location prefix, input left out."""
    return [
        {
            "type": detail["type"],
            "loc": ("body", *detail["loc"]),
            "msg": detail["msg"],
            "input": None,
        }
        for detail in error.errors(include_url=False, include_input=False)
    ]


def _validated(adapter: TypeAdapter[Any], raw: bytes) -> Any:
    """The body validated from its bytes; ``ValidationError`` when it does not fit the schema,
    ``RequestValidationError`` (422 ``body is not valid JSON``) when it is not JSON.

    pydantic's parser refuses a few texts that ``json.loads`` (what FastAPI uses) reads: lone
    surrogate escapes (valid JSON, refused later with a clear message, or a 404 for an id),
    ``NaN`` and ``Infinity`` tokens, UTF-16 and UTF-32. Those are read as FastAPI read them,
    so every body gets the answer it got before.
    """
    try:
        return adapter.validate_json(raw)
    except ValidationError as error:
        if not any(detail["type"] == "json_invalid" for detail in error.errors()):
            raise
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error", "input": {}}]
        ) from None
    return adapter.validate_python(document)


class JsonRoute(APIRoute):
    """An :class:`~fastapi.routing.APIRoute` whose endpoint takes one JSON body and any of the
    state, catalog and context dependencies, and returns a ``Response`` or a pydantic model
    (written as JSON as it is: the endpoint builds it, so it is valid)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The handler FastAPI wraps and calls for this route (per included router too)."""
        body_name, adapter, resolvers = self._plan()
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            refuse_unless_json(request)
            state = state_of(request)
            raw = await request.body()
            body: Any = None
            schema_errors: list[dict[str, Any]] = []
            if not raw:
                schema_errors = _MISSING_BODY
            else:
                try:
                    body = _validated(adapter, raw)
                except ValidationError as error:
                    schema_errors = _body_errors(error)
            arguments = {name: resolve(request, state) for name, resolve in resolvers.items()}
            if schema_errors:
                raise RequestValidationError(schema_errors)
            check_limits(body, state.settings)
            result = await endpoint(**{body_name: body}, **arguments)
            if isinstance(result, Response):
                return result
            assert isinstance(result, BaseModel)
            return Response(result.model_dump_json(), media_type=_MEDIA_TYPE)

        return handler

    def _plan(self) -> tuple[str, TypeAdapter[Any], dict[str, Resolver]]:
        """The body parameter's name and validator, and a resolver per other parameter;
        ``TypeError`` for an endpoint this route cannot call."""
        for dependency in self.dependencies:
            if dependency.dependency is not require_json:
                raise TypeError(f"{self.path}: a JsonRoute runs no dependency but require_json")
        hints = get_type_hints(self.endpoint, include_extras=True)
        body_name: str | None = None
        resolvers: dict[str, Resolver] = {}
        for name in inspect.signature(self.endpoint).parameters:
            hint = hints.get(name)
            resolver = _RESOLVERS.get(hint)
            if resolver is not None:
                resolvers[name] = resolver
            elif body_name is None and self.body_field is not None:
                body_name = name
            else:
                raise TypeError(f"{self.path}: a JsonRoute cannot supply parameter {name!r}")
        if body_name is None or not inspect.iscoroutinefunction(self.endpoint):
            raise TypeError(f"{self.path}: a JsonRoute needs an async endpoint with a JSON body")
        return body_name, TypeAdapter(hints[body_name]), resolvers

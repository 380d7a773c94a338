"""API keys: who may call which route.

Keys come from the settings (``read_keys``, ``admin_keys``) and arrive as
``Authorization: Bearer <key>`` or ``x-api-key: <key>`` (a request presenting a key and any
wrong or foreign credential beside it is refused). Every route needs a key except the open
ones (probes, metrics, the API docs): deny by default, so a route added later is protected
without anyone remembering to. With no read keys configured the read routes are open (the
settings allow that only on a loopback host, or when told so explicitly); admin routes
(``/v1/admin/...``) always need an admin key.

A key is compared as its SHA-256 digest against every configured key's digest with
``hmac.compare_digest``, all of them, whatever matched: neither timing nor length tells a client
how close it came. Keys are never logged, never echoed, never put in metrics.

The check is pure ASGI middleware, so it runs before the body is read: an unauthenticated client
cannot make the service parse (or buffer) anything.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import SecretStr
from starlette.datastructures import Headers
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from service.http.errors import ErrorCode, error_response
from service.metrics import ServiceMetrics
from service.request_context import request_id_of

Role = Literal["read", "write", "manage", "admin"]
"""What a route needs: ``read`` (searches, reads), ``write`` (a live collection's writes: a
write or admin key), ``manage`` (creating, dropping or compacting a live collection: an admin
key), each only where read keys are configured; ``admin`` (``/v1/admin/...``): an admin key,
always."""
_RANK: dict[str, int] = {"read": 0, "write": 1, "admin": 2}

# The search page and its assets (service.http.routes.page): the page asks for a key itself.
PAGE_ASSETS_PREFIX = "/ui/"
OPEN_PATHS = frozenset(
    {
        "/",
        "/healthz",
        "/readyz",
        "/metrics",
        "/docs",
        "/docs/oauth2-redirect",
        "/redoc",
        "/openapi.json",
    }
)
"""Paths anyone may call: the search page, probes, Prometheus, and the API's documentation."""
ADMIN_PREFIX = "/v1/admin/"
COLLECTIONS_PATH = "/v1/collections"
READ_POSTS = ("/items/get", "/items/scroll", "/items/count")
"""The POST routes under ``/v1/collections/`` that read (any key): a body, no write."""
REPLICATION_PATH = "/v1/replication"
REPLICATION_READS = ("/v1/replication", "/v1/replication/position")
"""The replication routes any read key may call (the set's state); the others (a follower's
fetches, a base, promotion, votes, follow) need an admin key."""
API_KEY_HEADER = "x-api-key"
BEARER_SCHEME = "bearer"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="crisscross"'}


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


class KeyRing:
    """The configured keys, as digests, with the role each grants."""

    def __init__(
        self,
        read_keys: Iterable[SecretStr],
        admin_keys: Iterable[SecretStr],
        write_keys: Iterable[SecretStr] = (),
    ) -> None:
        self._keys: list[tuple[bytes, Role]] = (
            [(_digest(key.get_secret_value()), "read") for key in read_keys]
            + [(_digest(key.get_secret_value()), "write") for key in write_keys]
            + [(_digest(key.get_secret_value()), "admin") for key in admin_keys]
        )
        self.read_required = any(role == "read" for _, role in self._keys)
        self.admin_configured = any(role == "admin" for _, role in self._keys)

    def role_of(self, presented: str) -> Role | None:
        """The strongest role ``presented`` grants (admin over write over read), or None.
        Compares against every key, in constant time per key."""
        digest = _digest(presented)
        granted: Role | None = None
        for key, role in self._keys:
            if hmac.compare_digest(digest, key) and (
                granted is None or _RANK[role] > _RANK[granted]
            ):
                granted = role
        return granted


def presented_keys(headers: Headers) -> list[str]:
    """The keys a request presents: the ``Authorization: Bearer`` token and ``x-api-key``.
    Another ``Authorization`` scheme presents nothing."""
    keys = []
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() == BEARER_SCHEME and token.strip():
            keys.append(token.strip())
    api_key = headers.get(API_KEY_HEADER)
    if api_key and api_key.strip():
        keys.append(api_key.strip())
    return keys


def foreign_authorization(headers: Headers) -> bool:
    """Whether the ``Authorization`` header holds something other than a Bearer key."""
    authorization = headers.get("authorization")
    if not authorization:
        return False
    scheme, _, token = authorization.strip().partition(" ")
    return scheme.lower() != BEARER_SCHEME or not token.strip()


def required_role(path: str, method: str = "GET") -> Role | None:
    """The role a request needs: None for :data:`OPEN_PATHS`, ``admin`` under ``/v1/admin/``,
    ``manage`` to create, drop, compact or snapshot a live collection or to replicate one
    (:data:`REPLICATION_READS` aside), ``write`` for the writes
    of one (every PATCH under ``/v1/collections/``, and every POST but the reads of
    :data:`READ_POSTS`), ``read`` for every other path (unknown ones included)."""
    if path in OPEN_PATHS or path.startswith(PAGE_ASSETS_PREFIX):
        return None
    if path.startswith(ADMIN_PREFIX) or path == ADMIN_PREFIX.rstrip("/"):
        return "admin"
    method = method.upper()
    if path.startswith(f"{REPLICATION_PATH}/") and path not in REPLICATION_READS:
        return "manage"
    under = path.startswith(f"{COLLECTIONS_PATH}/")
    if (
        (path == COLLECTIONS_PATH and method == "POST")
        or (under and method == "DELETE")
        or (under and method == "POST" and path.endswith(("/compact", "/snapshots")))
    ):
        return "manage"
    if under and (method == "PATCH" or (method == "POST" and not path.endswith(READ_POSTS))):
        return "write"
    return "read"


def _app_path(scope: Scope) -> str:
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


_KEY_NAMES: dict[Role, str] = {
    "read": "an API key",
    "write": "a write or admin key",
    "manage": "an admin key",
    "admin": "an admin key",
}


class ApiKeyMiddleware:
    """Answers 401 ``unauthorized`` (no key; with ``WWW-Authenticate: Bearer``) or 403
    ``forbidden`` (a wrong key, or a read key on an admin route) before the app sees the
    request; counts refusals in ``crisscross_requests_refused_total``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: KeyRing,
        metrics: ServiceMetrics,
        routes: Iterable[BaseRoute] = (),
    ) -> None:
        self.app = app
        self.keys = keys
        self.metrics = metrics
        self.routes = routes

    def _method_not_allowed(self, scope: Scope) -> bool:
        """Whether a route has this path but not this method: the router answers 405 then,
        whoever asks (no key is needed to learn which methods a documented path takes)."""
        matches = [route.matches(scope)[0] for route in self.routes]
        return Match.PARTIAL in matches and Match.FULL not in matches

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        needed = required_role(_app_path(scope), str(scope.get("method", "GET")))
        refusal = None if needed is None else self._refusal(scope, needed)
        # Routes are matched only for a request about to be refused, off the common path.
        if refusal is None or self._method_not_allowed(scope):
            await self.app(scope, receive, send)
            return
        code, message, headers = refusal
        await self._refuse(scope, receive, send, code, message, headers=headers)

    def _refusal(
        self, scope: Scope, needed: Role
    ) -> tuple[ErrorCode, str, dict[str, str] | None] | None:
        """Why a request needing ``needed`` is refused (code, message, headers), or None."""
        if needed != "admin" and not self.keys.read_required:
            return None
        if needed == "admin" and not self.keys.admin_configured:
            return (
                ErrorCode.FORBIDDEN,
                "admin routes are disabled on this server: no admin_keys are configured",
                None,
            )
        headers = Headers(scope=scope)
        presented = presented_keys(headers)
        if not presented:
            return (
                ErrorCode.UNAUTHORIZED,
                f"this route needs {_KEY_NAMES[needed]}: send "
                "'Authorization: Bearer <key>' or 'x-api-key: <key>'",
                _CHALLENGE,
            )
        roles = {self.keys.role_of(key) for key in presented}
        if None in roles or foreign_authorization(headers):
            # A wrong key is refused even beside a right one: credentials that disagree say the
            # client is confused or probing, and the answer must not depend on which one wins.
            return ErrorCode.FORBIDDEN, "the API key is not valid", None
        if "admin" in roles or needed == "read" or (needed == "write" and "write" in roles):
            return None
        return ErrorCode.FORBIDDEN, f"this route needs {_KEY_NAMES[needed]}", None

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        code: ErrorCode,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.metrics.refused.labels(code.value).inc()
        headers = dict(headers or {})
        request_headers = Headers(scope=scope)
        if request_headers.get("content-length", "0") != "0" or (
            "transfer-encoding" in request_headers
        ):
            # The body is left unread: close rather than let the client stream it for nothing.
            headers["Connection"] = "close"
        response = error_response(code, message, request_id_of(scope), headers=headers)
        await response(scope, receive, send)


_ROLE_NAMES = (
    "A requirement's role names say which key: none, any configured key (read_keys, write_keys "
    "or admin_keys); 'write', a write or admin key; 'admin', an admin key."
)
SECURITY_SCHEMES: dict[str, Any] = {
    "bearerKey": {
        "type": "http",
        "scheme": "bearer",
        "description": f"An API key as 'Authorization: Bearer <key>'. {_ROLE_NAMES}",
    },
    "apiKeyHeader": {
        "type": "apiKey",
        "in": "header",
        "name": API_KEY_HEADER,
        "description": f"An API key as 'x-api-key: <key>'. {_ROLE_NAMES}",
    },
}
_REQUIRED_ROLES: dict[Role, list[str]] = {
    "read": [],
    "write": ["write"],
    "manage": ["admin"],
    "admin": ["admin"],
}


def document_security(schema: dict[str, Any], keys: KeyRing) -> dict[str, Any]:
    """Declare in an OpenAPI document the ways a key is sent (``components.securitySchemes``,
    always) and the key checks this server really makes: on each operation that needs a key
    here, a ``security`` requirement accepting either scheme, with the role the key must have
    (OpenAPI 3.1's role names: none for any key, ``write``, ``admin``) — read and write routes
    only where read keys are configured, admin routes where admin keys are. With no keys
    configured no operation requires one. Returns ``schema``, changed in place."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            role = required_role(path, method)
            if role is None or (role != "admin" and not keys.read_required):
                continue
            if role == "admin" and not keys.admin_configured:
                continue
            roles = _REQUIRED_ROLES[role]
            operation["security"] = [{name: list(roles)} for name in SECURITY_SCHEMES]
    schema.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    return schema

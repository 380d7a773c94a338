"""Pure ASGI middleware: the request context (id, timing headers, access log, trace, metrics,
the last-resort 500), the in-flight limit at the door, the body size limit, and CORS in the one
error shape.

Pure ASGI rather than ``BaseHTTPMiddleware`` so the body can be counted as it streams in and
so an exception anywhere below still answers in the one error shape.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import anyio
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.engine.encode.admission import AdmissionGate, Refusal
from service.http.errors import ErrorCode, error_response
from service.metrics import UNMATCHED_ROUTE, ServiceMetrics
from service.request_context import (
    SCOPE_KEY,
    RequestContext,
    RequestIds,
    choose_request_id,
    request_id_of,
)
from service.settings import AccessLogFormat
from service.telemetry.access_log import ACCESS_LOGGER, AccessEntry, json_line
from service.telemetry.traceparent import TRACEPARENT_HEADER, TraceIds, parse_traceparent

if TYPE_CHECKING:  # the tracing module is imported where tracing is on (app.py), not here
    from service.telemetry.tracing import RequestTrace, Tracing

access_logger = logging.getLogger(ACCESS_LOGGER)
logger = logging.getLogger("crisscross.service")

REQUEST_ID_HEADER = "x-request-id"
REPLICA_HEADER = "x-replica"
"""On every answer of a server that keeps live collections: which replica answered (its URL,
role and term)."""
CLIENT_CLOSED_REQUEST = 499
"""The status logged and counted for a request whose client went away before it could be
answered (nginx's convention); nothing is sent."""
_QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})
# HTTP allows any token as a method; unknown ones share one label so clients cannot mint series.
_KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


ROUTE_KEY = "crisscross.route"
"""Scope key naming the route of a request refused before routing (a fixed path)."""


def _route_template(scope: Scope) -> str:
    """The matched route's path template (``/v1/items/{collection}/{id}``), never the raw path:
    raw paths hold item ids, which would explode metric cardinality and leak into logs. A
    request refused at the door before routing is named by :data:`ROUTE_KEY`, if at all."""
    route = scope.get("route")
    if route is None:
        return str(scope.get(ROUTE_KEY, UNMATCHED_ROUTE))
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return str(template) if template else UNMATCHED_ROUTE


def _app_path(scope: Scope) -> str:
    """The request path as the app's routes see it (without a proxy's ``root_path``)."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def open_request_context(
    scope: Scope, max_request_id_chars: int, request_ids: RequestIds, timeout_s: float = math.inf
) -> RequestContext:
    """The request's :class:`RequestContext`, stored in ``scope``: its id echoes a sane
    ``x-request-id`` header, else is a fresh one from ``request_ids``."""
    offered = Headers(scope=scope).get(REQUEST_ID_HEADER)
    context = RequestContext(
        choose_request_id(offered, max_request_id_chars, request_ids), timeout_s=timeout_s
    )
    scope[SCOPE_KEY] = context
    return context


async def answer_internal_error(
    scope: Scope, receive: Receive, send: Send, request_id: str
) -> None:
    """The last-resort answer to an exception that escaped the app: 500 ``internal`` in the one
    error shape, quoting ``request_id``."""
    response = error_response(
        ErrorCode.INTERNAL, "internal error; quote the request_id when reporting it", request_id
    )
    await response(scope, receive, send)


def _ms(value: float) -> str:
    return f"{value:.3f}"


class RequestContextMiddleware:
    """Gives every HTTP request an id and a :class:`RequestContext`; on the way out adds
    ``x-request-id`` and ``x-timing-*-ms`` headers, writes one access log line (no bodies, no
    texts; ``access_log_format`` text or json) and records request metrics. An exception that
    escapes the app becomes a 500 ``internal`` error in the one shape, logged with its
    traceback.

    With ``tracing`` (None: off, and nothing of it runs) each request also gets a server span,
    ended when the request is done, whose stage children the context records."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: ServiceMetrics,
        max_request_id_chars: int,
        request_timeout_s: float = math.inf,
        tracing: Tracing | None = None,
        access_log_format: AccessLogFormat = "text",
        replica: Callable[[], str | None] | None = None,
    ) -> None:
        self.app = app
        self.replica = replica
        self.metrics = metrics
        self.max_request_id_chars = max_request_id_chars
        self.request_timeout_s = request_timeout_s
        self.request_ids = RequestIds()
        self.tracing = tracing
        self.json_log = access_log_format == "json"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        context = open_request_context(
            scope, self.max_request_id_chars, self.request_ids, self.request_timeout_s
        )
        request_trace = None if self.tracing is None else self.tracing.begin(scope, context)
        status = 500
        response_started = False
        bytes_sent = 0

        async def send_with_headers(message: Message) -> None:
            nonlocal status, response_started, bytes_sent
            if message["type"] == "http.response.body":
                bytes_sent += len(message.get("body", b""))
            elif message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                headers = MutableHeaders(scope=message)
                headers[REQUEST_ID_HEADER] = context.request_id
                if context.decode_ms is not None:
                    headers["x-timing-decode-ms"] = _ms(context.decode_ms)
                if context.queue_ms is not None:
                    headers["x-timing-queue-ms"] = _ms(context.queue_ms)
                if context.encode_ms is not None:
                    headers["x-timing-encode-ms"] = _ms(context.encode_ms)
                if context.search_ms is not None:
                    headers["x-timing-search-ms"] = _ms(context.search_ms)
                if context.write_ms is not None:
                    headers["x-timing-write-ms"] = _ms(context.write_ms)
                if context.fsync_ms is not None:
                    headers["x-timing-fsync-ms"] = _ms(context.fsync_ms)
                headers["x-timing-total-ms"] = _ms(context.elapsed_ms())
                if self.replica is not None and (answered_by := self.replica()) is not None:
                    headers[REPLICA_HEADER] = answered_by
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except ClientDisconnectedError:
            status = CLIENT_CLOSED_REQUEST  # nobody to answer; not the service's failure
        except Exception:
            logger.exception(
                "unhandled error in %s %s (request %s)",
                scope.get("method"),
                _route_template(scope),
                context.request_id,
            )
            if response_started:
                raise  # Too late to answer; the server closes the connection.
            await answer_internal_error(scope, receive, send_with_headers, context.request_id)
        finally:
            self._record(scope, context, status, request_trace, bytes_sent)

    def _record(
        self,
        scope: Scope,
        context: RequestContext,
        status: int,
        request_trace: RequestTrace | None,
        bytes_sent: int,
    ) -> None:
        route = _route_template(scope)
        method = str(scope.get("method", ""))
        if method not in _KNOWN_METHODS:
            method = "OTHER"
        ended_s = time.perf_counter()
        total_ms = (ended_s - context.started_s) * 1000.0
        self.metrics.observe_request(route, method, status, total_ms / 1000.0)
        if request_trace is not None:
            matched = None if route == UNMATCHED_ROUTE else route
            request_trace.end(matched, status, context.request_id, ended_s)
        # Probes and scrapes arrive every few seconds; at INFO they would drown the real traffic.
        level = logging.DEBUG if route in _QUIET_ROUTES and status < 400 else logging.INFO
        if self.json_log:
            if access_logger.isEnabledFor(level):
                ids = _trace_ids(scope, context, request_trace)
                entry = AccessEntry(
                    method=method,
                    path=_app_path(scope),
                    route=route,
                    status=status,
                    duration_ms=total_ms,
                    client=_client(scope),
                    bytes_sent=bytes_sent,
                    trace_id=None if ids is None else ids.trace_id,
                    span_id=None if ids is None else ids.span_id,
                )
                access_logger.log(level, "%s", json_line(entry, context, time.time()))
            return
        access_logger.log(
            level,
            "request_id=%s method=%s route=%s status=%d decode_ms=%s queue_ms=%s encode_ms=%s "
            "search_ms=%s total_ms=%s",
            context.request_id,
            method,
            route,
            status,
            _ms(context.decode_ms) if context.decode_ms is not None else "-",
            _ms(context.queue_ms) if context.queue_ms is not None else "-",
            _ms(context.encode_ms) if context.encode_ms is not None else "-",
            _ms(context.search_ms) if context.search_ms is not None else "-",
            _ms(total_ms),
        )


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def _trace_ids(
    scope: Scope, context: RequestContext, request_trace: RequestTrace | None
) -> TraceIds | None:
    """The trace and span a request's log line names: its server span's when it was recorded
    (sampled: its context held it), else its caller's (an incoming ``traceparent``), else
    none — never a span that exists nowhere."""
    if request_trace is not None and context.spans is request_trace:
        return TraceIds(request_trace.trace_id, request_trace.span_id)
    return parse_traceparent(Headers(scope=scope).get(TRACEPARENT_HEADER))


class ConcurrencyLimitMiddleware:
    """Admits work on ``paths`` through an :class:`~service.engine.encode.admission.AdmissionGate`
    and refuses the rest with 503 ``overloaded`` and ``Retry-After``, before a byte of the body is
    read.

    A refusal here costs no parsing, validation or encoding, so it stays fast when the service
    is saturated; and since under overload at most ``gate.overload_limit`` requests share the
    encoder and the search threads, the admitted ones keep their latency instead of queueing
    behind the excess (TEI's ``max_concurrent_requests``, made to shrink under overload).
    Bursts below saturation wait briefly in the gate's waiting room instead of being refused.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        gate: AdmissionGate,
        paths: frozenset[str],
        retry_after_s: int,
        metrics: ServiceMetrics,
    ) -> None:
        self.app = app
        self.gate = gate
        self.paths = paths
        self.retry_after_s = retry_after_s
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _app_path(scope) not in self.paths:
            await self.app(scope, receive, send)
            return
        gate = self.gate
        refusal = await gate.acquire()
        if refusal is not None:
            self.metrics.refused.labels(refusal).inc()
            limit = (
                f"overload_concurrent_requests={gate.overload_limit}"
                if gate.overloaded
                else f"max_concurrent_requests={gate.limit}"
            )
            response = error_response(
                ErrorCode.OVERLOADED,
                f"overloaded: {gate.in_flight} requests are in flight ({limit}) and "
                f"{_REFUSALS[refusal]}; retry later",
                request_id_of(scope),
                headers={"Retry-After": str(self.retry_after_s)},
            )
            await response(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            gate.release()


_REFUSALS: Final[Mapping[Refusal, str]] = {
    "in_flight": "arrivals outpace completions, so none may wait",
    "waiting_room_full": "the waiting room is full (max_waiting_requests)",
    "queue_timeout": "no slot freed up within admission_wait_ms",
}


@dataclass(frozen=True)
class BodyLimit:
    """A body size limit: ``max_bytes``, the ``setting`` that sets it (named in the 413
    message) and a ``hint`` appended to that message (where to send larger bodies)."""

    max_bytes: int
    setting: str = "max_body_bytes"
    hint: str = ""

    def message(self) -> str:
        """The 413 message: which limit was hit, and the hint."""
        text = f"request body is larger than {self.setting}={self.max_bytes}"
        return f"{text}; {self.hint}" if self.hint else text


class ClientDisconnectedError(Exception):
    """The client went away before its request's body was all in: nobody is left to answer."""


def has_body(headers: Headers) -> bool:
    """Whether a request head announces a body (a non-zero ``Content-Length`` or chunks)."""
    declared = headers.get("content-length")
    if declared is not None:
        return declared.strip() != "0"
    return "transfer-encoding" in headers


class BodyGateMiddleware:
    """Reads every request body whole at the door, before anything behind it runs: within its
    size limit (413 ``payload_too_large``) and within ``timeout_s`` of the head
    (408 ``request_timeout``), then hands it on in one piece.

    What stands behind — the admission gate, parsing, encoding — therefore never waits on a
    client: a body that arrives slowly or stops halfway holds no in-flight slot, only its own
    connection (bounded by ``max_connections``) and the bytes it really sent. A refusal closes
    the connection (the rest of the body is unread). A client that disconnects mid-body ends
    the request with :class:`ClientDisconnectedError` (logged as status 499, no answer).

    ``default`` applies to every path except those in ``by_path`` (exact route paths, without
    a proxy's ``root_path``; e.g. the multipart upload route, whose limit follows
    ``max_image_bytes`` rather than the JSON limit), and ``by_prefix`` to the paths under each
    prefix (the write routes of live collections). Bytes are counted as they arrive —
    chunked uploads declare no length and a declared length can lie — and a ``Content-Length``
    over the limit is refused before any body byte is taken. A request refused here (or whose
    client left) whose path is one of ``route_paths`` (routes without path parameters) is
    counted and logged under it; ``on_timeout`` counts a body deadline that passed.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        default: BodyLimit,
        by_path: Mapping[str, BodyLimit] | None = None,
        by_prefix: Mapping[str, BodyLimit] | None = None,
        timeout_s: float = math.inf,
        route_paths: Iterable[str] = (),
        on_timeout: Callable[[], None] = lambda: None,
    ) -> None:
        self.app = app
        self.default = default
        self.by_path = dict(by_path or {})
        self.by_prefix = dict(by_prefix or {})
        self.timeout_s = timeout_s
        self.route_paths = frozenset(route_paths)
        self.on_timeout = on_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not has_body(headers):
            await self.app(scope, receive, send)
            return
        path = _app_path(scope)
        if path in self.route_paths:  # a refusal or a disconnect below is counted under it
            scope[ROUTE_KEY] = path
        limit = self.by_path.get(path) or next(
            (limit for prefix, limit in self.by_prefix.items() if path.startswith(prefix)),
            self.default,
        )
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit.max_bytes:
            await self._refuse(scope, receive, send, ErrorCode.PAYLOAD_TOO_LARGE, limit.message())
            return
        chunks: list[bytes] = []
        received = 0
        try:
            with anyio.fail_after(self.timeout_s if math.isfinite(self.timeout_s) else None):
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise ClientDisconnectedError
                    chunk = message.get("body", b"")
                    received += len(chunk)
                    if received > limit.max_bytes:
                        await self._refuse(
                            scope, receive, send, ErrorCode.PAYLOAD_TOO_LARGE, limit.message()
                        )
                        return
                    if chunk:
                        chunks.append(chunk)
                    more = bool(message.get("more_body", False))
        except TimeoutError:
            self.on_timeout()
            await self._refuse(
                scope,
                receive,
                send,
                ErrorCode.REQUEST_TIMEOUT,
                f"the request body did not arrive within body_timeout_s={self.timeout_s:g} "
                f"({received} bytes came)",
            )
            return
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()  # after the body: the disconnect, when it comes
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, code: ErrorCode, message: str
    ) -> None:
        response = error_response(
            code, message, request_id_of(scope), headers={"Connection": "close"}
        )
        await response(scope, receive, send)


class CorsMiddleware(CORSMiddleware):
    """Starlette's CORS middleware, except that a refused preflight (an origin, method or header
    not allowed) answers 403 ``forbidden`` in the one error shape instead of a plain-text 400.
    Browsers act on the missing ``Access-Control-Allow-Origin`` either way."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            headers = Headers(scope=scope)
            if "origin" in headers and "access-control-request-method" in headers:
                response = self.preflight_response(request_headers=headers)
                if response.status_code != 200:
                    kept = {
                        name: value
                        for name, value in response.headers.items()
                        if name.startswith("access-control-") or name == "vary"
                    }
                    reason = bytes(response.body).decode("utf-8", "replace")
                    response = error_response(
                        ErrorCode.FORBIDDEN,
                        f"CORS preflight refused: {reason}",
                        request_id_of(scope),
                        headers=kept,
                    )
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

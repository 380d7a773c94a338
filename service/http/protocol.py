"""The HTTP/1.1 connection: uvicorn's httptools protocol with the door's limits on clients.

uvicorn bounds none of what a hostile client can hold open for free: a connection that never
sends a byte, a request head sent one line every few seconds (slowloris), a head of megabytes or
of thousands of header lines, a body that stops halfway, or thousands of such connections at
once. Each costs the attacker a few bytes and would hold a file descriptor, parser memory and,
once the head is in, a request's place in the service. :class:`GuardedHttpProtocol` closes them
at the connection, before a request exists:

- **the head deadline**: from the connection's opening (or the first byte of the next request on
  a kept-alive connection) to the end of the request head, ``head_timeout_s``; past it the
  client gets 408 ``request_timeout`` and the connection is closed;
- **the head's size**: the request line and headers together at most ``max_header_bytes``, and
  at most ``max_header_count`` header lines; over either: 431 ``headers_too_large``, closed —
  counted as the bytes arrive, so an endless header line is refused at the limit, not buffered;
- **open connections**: at most ``max_connections`` per process; one more is answered 503
  ``overloaded`` with ``Retry-After`` and closed as it is accepted;
- **an unread body**: an answer sent before its request's body was fully received (a 401, a 413)
  closes the connection, so a client cannot keep it open by dribbling the rest of that body.

The body's own deadline and size are the app's door
(:class:`service.http.middleware.BodyGateMiddleware`), which reads every body whole before
admission, so a slow body holds no in-flight slot. Idle kept-alive connections close after uvicorn's
``timeout_keep_alive`` (the ``keep_alive_timeout_s`` setting).

Every refusal is counted (:meth:`service.metrics.ServiceMetrics.count_client_refusal`) and
logged at debug level only: an attack must not flood the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from service.http.errors import STATUS_OF, ErrorCode, error_body
from service.request_context import new_request_id

logger = logging.getLogger("crisscross.service")


@dataclass(frozen=True)
class ClientLimits:
    """What one connection may cost: see the module. Times in seconds."""

    head_timeout_s: float
    max_header_bytes: int
    max_header_count: int
    max_connections: int
    retry_after_s: int

    def __post_init__(self) -> None:
        if (
            self.head_timeout_s <= 0
            or self.max_header_bytes < 1
            or self.max_header_count < 1
            or self.max_connections < 1
        ):
            raise ValueError(f"bad client limits: {self}")


RefusalCounter = Callable[[str], None]
"""Counts one refusal at the connection by reason (head_timeout, headers_too_large,
too_many_headers, connection_limit, body_unread)."""
ConnectionGauge = Callable[[int], None]
"""Moves the open-connections gauge by +1 or -1."""


def refusal_bytes(code: ErrorCode, message: str, extra_headers: tuple[str, ...] = ()) -> bytes:
    """A whole HTTP/1.1 error response in the one error shape, closing the connection."""
    request_id = new_request_id()
    body = json.dumps(error_body(code, message, request_id)).encode("utf-8")
    status = STATUS_OF[code]
    head = [
        STATUS_LINE[status],
        b"content-type: application/json\r\n",
        b"x-request-id: %s\r\n" % request_id.encode("ascii"),
        b"content-length: %d\r\n" % len(body),
        b"connection: close\r\n",
        *(f"{header}\r\n".encode("latin-1") for header in extra_headers),
        b"\r\n",
    ]
    return b"".join(head) + body


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of :class:`ClientLimits` (see the module).
    Subclass it with :func:`guarded_protocol`, which binds the limits and the metrics."""

    limits: ClientLimits
    count_refusal: RefusalCounter
    move_open_connections: ConnectionGauge

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._head_timer: asyncio.TimerHandle | None = None
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._refused = False
        self._counted = False

    # The connection ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self.transport = transport
            self._refuse(
                "connection_limit",
                ErrorCode.OVERLOADED,
                f"overloaded: {len(self.connections)} connections are open "
                f"(max_connections={self.limits.max_connections}); retry later",
                (f"retry-after: {self.limits.retry_after_s}",),
            )
            return
        super().connection_made(transport)
        self._counted = True
        self.move_open_connections(1)
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        if not self._counted:  # refused as it was accepted: nothing of uvicorn's to undo
            return
        self._counted = False
        self.move_open_connections(-1)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Still in the head after this chunk: every byte so far is head.
        if self._in_head and not self._refused and self._head_bytes > self.limits.max_header_bytes:
            self._refuse_head_size()

    # The parser's callbacks --------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._refused:
            return
        if self._head_timer is None:  # the next request of a kept-alive connection
            self._start_head_timer()
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        if not self._refused:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._refused:
            return
        self._header_count += 1
        if self._header_count > self.limits.max_header_count:
            self._refuse(
                "too_many_headers",
                ErrorCode.HEADERS_TOO_LARGE,
                f"the request has more than max_header_count={self.limits.max_header_count} "
                "header lines",
            )
            return
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        self._stop_head_timer()
        self._in_head = False
        # The exact size: the request line's target and every header line as sent.
        head = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if head > self.limits.max_header_bytes:
            self._refuse_head_size()
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0

    def on_response_complete(self) -> None:
        # Answered before its request's body was all in: the rest would keep the connection open
        # for as long as the client dribbles it (uvicorn drops it, unread, byte by byte).
        if not self._in_head and not self._refused and not self.transport.is_closing():
            self.count_refusal("body_unread")
            self.transport.close()
        super().on_response_complete()

    # Refusals -----------------------------------------------------------------------------------

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.limits.head_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._refused or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # A pipelined head stalled while the request before it is answered: no room for a
            # 408 in between.
            self._refused = True
            self.count_refusal("head_timeout")
            self.transport.close()
            return
        self._refuse(
            "head_timeout",
            ErrorCode.REQUEST_TIMEOUT,
            f"the request head did not arrive within head_timeout_s={self.limits.head_timeout_s:g}",
        )

    def _refuse_head_size(self) -> None:
        self._refuse(
            "headers_too_large",
            ErrorCode.HEADERS_TOO_LARGE,
            f"the request line and headers are larger than max_header_bytes="
            f"{self.limits.max_header_bytes}",
        )

    def _refuse(
        self, reason: str, code: ErrorCode, message: str, extra_headers: tuple[str, ...] = ()
    ) -> None:
        """Answer ``code`` and close: nothing more of this connection is read."""
        self._refused = True
        self._stop_head_timer()
        self.count_refusal(reason)
        logger.debug("connection from %s refused: %s", self.client, reason)
        if not self.transport.is_closing():
            self.transport.write(refusal_bytes(code, message, extra_headers))
            self.transport.close()


def guarded_protocol(
    limits: ClientLimits, count_refusal: RefusalCounter, move_open_connections: ConnectionGauge
) -> type[GuardedHttpProtocol]:
    """A :class:`GuardedHttpProtocol` class bound to ``limits`` and the metrics' callbacks, for
    ``uvicorn.Config(http=...)``."""
    return type(
        "BoundGuardedHttpProtocol",
        (GuardedHttpProtocol,),
        {
            "limits": limits,
            "count_refusal": staticmethod(count_refusal),
            "move_open_connections": staticmethod(move_open_connections),
        },
    )

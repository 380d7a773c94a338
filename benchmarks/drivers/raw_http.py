"""A deliberately small HTTP/1.1 client on raw asyncio streams, for load generation.

A general client (httpx) spends tens to hundreds of microseconds of Python per request on
request building, header models and response decoding; on a 2-core machine that shares its CPU
with the service under test, that can be half a core. The load path needs none of it: the
request bytes are serialised once, ahead of the run (:func:`build_request`), and an answer is
parsed only as far as HTTP framing requires — the status line, ``Content-Length`` (or chunked
framing, should a server use it), ``Connection: close`` — and the body is read but not decoded.

One :class:`RawConnection` is one keep-alive TCP connection, used by one request at a time
(no pipelining). It connects lazily, reconnects when the server closed it, and resends once when
a *reused* connection fails before any byte of the answer arrived (the server closed an idle
keep-alive connection while the request was on its way — what every HTTP client does).
Anything else that goes wrong raises :class:`~benchmarks.drivers.sender.TransportFailure` with
a short ``kind`` (``connect``, ``connection``, ``timeout``, ``protocol``) that load reports count
by. :class:`RawSender` puts a connection behind the drivers' one interface,
:class:`~benchmarks.drivers.sender.Sender`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from benchmarks.drivers.sender import TransportFailure

# Longest status line + header block accepted, bytes (the service's headers are < 1 KiB).
MAX_HEADER_BYTES = 64 * 1024
# StreamReader buffer limit, bytes; also caps one chunk-size line.
STREAM_LIMIT = 1 << 20


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: host, TCP port and the path prefix of the service root.

    Attributes:
        host: host name or address to connect to (load tests use ``127.0.0.1``).
        port: TCP port.
        base_path: path of the service root without a trailing slash (usually ``""``).
    """

    host: str
    port: int
    base_path: str = ""

    @classmethod
    def from_url(cls, url: str) -> Endpoint:
        """Parse ``http://host[:port][/prefix]`` (``https`` is refused: no TLS here).

        Raises:
            ValueError: not an ``http`` URL with a host.
        """
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"expected an http://host[:port] URL, got {url!r}")
        return cls(parts.hostname, parts.port or 80, parts.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        """The ``Host`` header value (``host:port``)."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class RawResponse:
    """An answer as the load path sees it.

    Attributes:
        status: HTTP status code.
        body: the raw body bytes (not decoded).
    """

    status: int
    body: bytes


def build_request(
    endpoint: Endpoint,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    content_type: str = "application/json",
) -> bytes:
    """Serialise one HTTP/1.1 keep-alive request (request line, headers, body) to bytes.

    Args:
        endpoint: the target; its ``base_path`` is prepended to ``path``.
        method: ``GET``, ``POST``, ...
        path: absolute path under the service root, e.g. ``/v1/search``.
        body: the request body (sent with ``Content-Length``), or ``None``.
        content_type: ``Content-Type`` of a body.
    """
    lines = [
        f"{method} {endpoint.base_path}{path} HTTP/1.1",
        f"Host: {endpoint.host_header}",
        "Connection: keep-alive",
        "Accept: application/json",
    ]
    if body is not None:
        lines += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    return head + (body or b"")


def _parse_head(head: bytes) -> tuple[int, int | None, bool, bool]:
    """(status, content length or None, chunked, keep-alive) of a status line + header block."""
    lines = head.split(b"\r\n")
    status_line = lines[0]
    if not status_line.startswith(b"HTTP/1.") or len(status_line) < 12:
        raise TransportFailure("protocol", f"bad status line {status_line[:80]!r}")
    try:
        status = int(status_line[9:12])
    except ValueError as error:
        raise TransportFailure("protocol", f"bad status line {status_line[:80]!r}") from error
    keep_alive = status_line[7:8] == b"1"  # HTTP/1.1 defaults to keep-alive, 1.0 to close
    length: int | None = None
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError as error:
                raise TransportFailure("protocol", f"bad Content-Length {value!r}") from error
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            token = value.strip().lower()
            if token == b"close":
                keep_alive = False
            elif token == b"keep-alive":
                keep_alive = True
    return status, length, chunked, keep_alive


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError as error:
            raise TransportFailure("protocol", f"bad chunk size {size_line[:40]!r}") from error
        if size == 0:
            # Trailers (rare), then the blank line ending the message.
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


class RawConnection:
    """One keep-alive HTTP/1.1 connection to ``endpoint``; one request at a time.

    Args:
        endpoint: where to connect.
        timeout_s: the longest a request may take, seconds, connecting and resending included.
        connect_timeout_s: the longest a TCP connect may take, seconds.

    Attributes:
        connects: TCP connections opened so far (1 for a connection that was never dropped).
        resends: requests resent after a reused connection turned out closed.
    """

    def __init__(
        self, endpoint: Endpoint, *, timeout_s: float = 30.0, connect_timeout_s: float = 5.0
    ) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.connects = 0
        self.resends = 0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @property
    def connected(self) -> bool:
        """Whether a TCP connection is open and the server has not closed it."""
        return (
            self._reader is not None
            and self._writer is not None
            and not self._reader.at_eof()
            and not self._writer.is_closing()
        )

    async def connect(self) -> None:
        """Open the TCP connection now (it is otherwise opened by the first request).

        Raises:
            TransportFailure: ``connect``.
        """
        self._drop()
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                self._reader, self._writer = await asyncio.open_connection(
                    self.endpoint.host, self.endpoint.port, limit=STREAM_LIMIT
                )
        except (OSError, TimeoutError) as error:
            self._drop()
            raise TransportFailure("connect", str(error) or type(error).__name__) from error
        self.connects += 1

    def _drop(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def aclose(self) -> None:
        """Close the connection (idempotent)."""
        writer = self._writer
        self._drop()
        if writer is not None:
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def request(self, data: bytes) -> RawResponse:
        """Send pre-serialised request bytes and read the whole answer.

        Args:
            data: one request from :func:`build_request`.

        Raises:
            TransportFailure: no complete answer (the connection is dropped and reopened by
                the next request).
        """
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._exchange(data)
        except TimeoutError as error:
            self._drop()
            raise TransportFailure("timeout", f"no answer within {self.timeout_s:g} s") from error
        except asyncio.CancelledError:
            self._drop()  # the answer may still arrive: this connection's framing is lost
            raise

    async def _exchange(self, data: bytes) -> RawResponse:
        reused = self.connected
        if not reused:
            await self.connect()
        try:
            return await self._send_and_read(data)
        except _ClosedBeforeAnswerError as closed:
            self._drop()
            if not reused:
                raise TransportFailure("connection", str(closed)) from closed
        # A reused keep-alive connection the server had closed: resend once on a fresh one.
        self.resends += 1
        await self.connect()
        try:
            return await self._send_and_read(data)
        except _ClosedBeforeAnswerError as closed:
            self._drop()
            raise TransportFailure("connection", str(closed)) from closed

    async def _send_and_read(self, data: bytes) -> RawResponse:
        reader, writer = self._reader, self._writer
        assert reader is not None
        assert writer is not None
        try:
            writer.write(data)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as error:
            if not error.partial:
                raise _ClosedBeforeAnswerError("closed before answering") from error
            self._drop()
            raise TransportFailure("connection", "closed inside the answer's headers") from error
        except (ConnectionError, BrokenPipeError) as error:
            raise _ClosedBeforeAnswerError(str(error) or type(error).__name__) from error
        except asyncio.LimitOverrunError as error:
            self._drop()
            raise TransportFailure("protocol", "header block too long") from error
        except OSError as error:
            self._drop()
            raise TransportFailure("connection", str(error) or type(error).__name__) from error
        try:
            status, length, chunked, keep_alive = _parse_head(head)
            if chunked:
                body = await _read_chunked(reader)
            elif length is not None:
                body = await reader.readexactly(length) if length else b""
            elif status in (204, 304) or 100 <= status < 200:
                body = b""
            else:  # no framing: the body runs to the end of the connection
                body = await reader.read()
                keep_alive = False
        except TransportFailure:
            self._drop()
            raise
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as error:
            self._drop()
            raise TransportFailure("connection", f"answer cut short: {error}") from error
        if not keep_alive:
            self._drop()
        return RawResponse(status, body)


class _ClosedBeforeAnswerError(Exception):
    """The connection closed before any byte of the answer arrived."""


class RawSender:
    """A :class:`~benchmarks.drivers.sender.Sender` over one :class:`RawConnection`.

    Args:
        connection: the keep-alive connection.
        payloads: pre-serialised requests; request ``i`` sends ``payloads[i % len(payloads)]``.
    """

    def __init__(self, connection: RawConnection, payloads: Sequence[bytes]) -> None:
        if not payloads:
            raise ValueError("need at least one request payload")
        self.connection = connection
        self.payloads = payloads

    async def send(self, index: int) -> int:
        """Send payload ``index`` and return the answer's status (the body is read, not parsed)."""
        response = await self.connection.request(self.payloads[index % len(self.payloads)])
        return response.status

    async def aclose(self) -> None:
        """Close the connection."""
        await self.connection.aclose()

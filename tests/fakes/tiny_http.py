"""A tiny HTTP/1.1 server on asyncio streams, for testing the raw load client and drivers.

It serves in the test's own event loop on a free loopback port. A handler maps each request
to a :class:`Reply`, which can delay, answer chunked, ask to close, close without answering, or
send raw bytes. The server counts connections and requests.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Request:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int  # 1-based connection number
    number: int  # 1-based request number on the server


@dataclass(frozen=True)
class Reply:
    """What to answer.

    Attributes:
        status: status code.
        body: body bytes.
        headers: extra headers.
        delay_s: wait before answering, seconds.
        chunked: frame the body with ``Transfer-Encoding: chunked`` (two chunks).
        close: send ``Connection: close`` and close after answering.
        drop: close the connection without answering.
        drop_after: answer normally, then close without saying so.
        raw: bytes to send instead of a built answer.
    """

    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunked: bool = False
    close: bool = False
    drop: bool = False
    drop_after: bool = False
    raw: bytes | None = None


Handler = Callable[[Request], Awaitable[Reply]]

REASONS: Mapping[int, str] = MappingProxyType(
    {200: "OK", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable"}
)


def json_reply(status: int, payload: object, **kwargs: object) -> Reply:
    """A JSON reply."""
    return Reply(status, json.dumps(payload).encode(), **kwargs)  # type: ignore[arg-type]


def _encode(reply: Reply) -> bytes:
    lines = [f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, 'Status')}"]
    lines.append("Content-Type: application/json")
    lines += [f"{name}: {value}" for name, value in reply.headers.items()]
    if reply.close:
        lines.append("Connection: close")
    if reply.chunked:
        lines.append("Transfer-Encoding: chunked")
        half = len(reply.body) // 2
        parts = [reply.body[:half], reply.body[half:]]
        body = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts if p)
        body += b"0\r\n\r\n"
    else:
        lines.append(f"Content-Length: {len(reply.body)}")
        body = reply.body
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class TinyServer:
    """A running server: its URL, port and counters."""

    port: int
    connections: int = 0
    requests: list[Request] = field(default_factory=list)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[TinyServer]:
    """Serve ``handler`` on a free loopback port until the block ends."""
    tasks: set[asyncio.Task[None]] = set()
    state = TinyServer(port=0)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        state.connections += 1
        number = state.connections
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Request(method, path, headers, body, number, len(state.requests) + 1)
                state.requests.append(request)
                reply = await handler(request)
                if reply.delay_s:
                    await asyncio.sleep(reply.delay_s)
                if reply.drop:
                    return
                writer.write(reply.raw if reply.raw is not None else _encode(reply))
                await writer.drain()
                if reply.close or reply.drop_after or headers.get("connection") == "close":
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            tasks.discard(task)

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


@contextlib.contextmanager
def serve_in_thread(handler: Handler) -> Iterator[TinyServer]:
    """:func:`serve` on its own event loop in a daemon thread (for code that runs
    ``asyncio.run`` itself, like the CLI)."""
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future[TinyServer] = concurrent.futures.Future()
    stop = threading.Event()

    async def main() -> None:
        async with serve(handler) as server:
            started.set_result(server)
            while not stop.is_set():
                await asyncio.sleep(0.01)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    try:
        yield started.result(timeout=10.0)
    finally:
        stop.set()
        thread.join(timeout=10.0)
        loop.close()

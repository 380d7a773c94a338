"""The service's app on a real socket: uvicorn with the production configuration
(:func:`service.runtime.server.server_config`: the guarded protocol, its client limits) in a thread
of the test process, and raw-socket exchanges with it — for what no in-process client can send (a
stalled body, a head that never ends)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import uvicorn
from fastapi import FastAPI

from service.lifecycle.state import STATE_ATTRIBUTE, ServiceState
from service.runtime.server import server_config
from service.settings import Settings

START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SocketServer:
    """A served app: its port and state."""

    port: int
    state: ServiceState

    def connect(self, timeout_s: float = 10.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout_s)

    def exchange(self, data: bytes, timeout_s: float = 10.0) -> httpx.Response:
        """Send ``data`` on a fresh connection, read until the server closes it, and parse the
        first answer."""
        with self.connect(timeout_s) as sock:
            sock.sendall(data)
            return parse_response(read_until_closed(sock, timeout_s))


def read_until_closed(sock: socket.socket, timeout_s: float = 10.0) -> bytes:
    """Everything the server sends until it closes the connection (or ``timeout_s`` passes)."""
    sock.settimeout(timeout_s)
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def parse_response(raw: bytes) -> httpx.Response:
    """The first HTTP/1.1 answer in ``raw`` (framed by its Content-Length)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = [tuple(line.split(": ", 1)) for line in lines[1:] if ": " in line]
    length = next((int(value) for name, value in headers if name.lower() == "content-length"), 0)
    return httpx.Response(status, headers=headers, content=rest[:length])


@contextmanager
def serve_on_socket(app: FastAPI, settings: Settings) -> Iterator[SocketServer]:
    """Serve ``app`` (made from ``settings``) on a free loopback port until the block ends, once
    its catalog is loaded."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    state = getattr(app.state, STATE_ATTRIBUTE)
    assert isinstance(state, ServiceState)
    server = uvicorn.Server(server_config(app, settings, state.metrics))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while (not server.started or state.catalog is None) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started, "uvicorn did not start"
        assert state.catalog is not None, f"not ready: {state.load_error}"
        yield SocketServer(listener.getsockname()[1], state)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()

"""GuardedHttpProtocol: a real uvicorn server in a thread, spoken to over raw sockets."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from service.http.protocol import ClientLimits, guarded_protocol

LIMITS = ClientLimits(
    head_timeout_s=0.5,
    max_header_bytes=2048,
    max_header_count=20,
    max_connections=8,
    retry_after_s=3,
)


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers at once with how many body bytes it read; ``/early`` answers without reading."""
    if scope["type"] != "http":
        return
    received = 0
    if scope["path"] != "/early":
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            received += len(message.get("body", b""))
            more = message.get("more_body", False)
    body = json.dumps({"received": received}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@dataclass
class Door:
    port: int
    refusals: Counter[str]
    open_connections: list[int]

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)


@pytest.fixture
def door() -> Iterator[Door]:
    refusals: Counter[str] = Counter()
    open_connections = [0]

    def count(reason: str) -> None:
        refusals[reason] += 1

    def move(delta: int) -> None:
        open_connections[0] += delta

    protocol = guarded_protocol(LIMITS, count, move)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(echo_app, http=protocol, ws="none", lifespan="off", log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield Door(port, refusals, open_connections)
    server.should_exit = True
    thread.join(timeout=10)
    listener.close()


def read_all(sock: socket.socket, timeout_s: float = 5.0) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(timeout_s)
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def status_and_body(response: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def get(path: str = "/", extra: bytes = b"") -> bytes:
    return b"GET " + path.encode() + b" HTTP/1.1\r\nhost: x\r\n" + extra + b"\r\n"


def test_an_honest_request_is_answered_and_the_connection_kept(door: Door) -> None:
    with door.connect() as sock:
        sock.sendall(get())
        first = sock.recv(65536)
        sock.sendall(get())
        second = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    assert second.startswith(b"HTTP/1.1 200")
    assert not door.refusals


def test_a_connection_that_sends_nothing_gets_408_within_the_head_deadline(door: Door) -> None:
    with door.connect() as sock:
        started = time.monotonic()
        response = read_all(sock)
        waited = time.monotonic() - started
    status, body = status_and_body(response)
    assert status == 408
    assert body["error"]["code"] == "request_timeout"  # type: ignore[index]
    assert b"connection: close" in response.lower()
    assert 0.4 <= waited < 2.0
    assert door.refusals == Counter({"head_timeout": 1})


def test_a_slowloris_head_is_cut_at_the_deadline_however_often_it_sends(door: Door) -> None:
    with door.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n")
        started = time.monotonic()
        closed_after = None
        for line in range(20):
            time.sleep(0.1)
            try:
                sock.sendall(f"x-line-{line}: y\r\n".encode())
            except OSError:
                closed_after = time.monotonic() - started
                break
        response = read_all(sock)
    assert response.startswith(b"HTTP/1.1 408")
    assert closed_after is None or closed_after < 1.5
    assert door.refusals["head_timeout"] == 1


def test_the_head_deadline_restarts_for_the_next_request_of_a_kept_alive_connection(
    door: Door,
) -> None:
    with door.connect() as sock:
        for _ in range(3):  # together longer than one deadline, each well within it
            sock.sendall(b"GET / HTTP/1.1\r\n")
            time.sleep(0.2)
            sock.sendall(b"host: x\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    assert not door.refusals


def test_a_head_over_the_size_limit_gets_431_before_it_ends(door: Door) -> None:
    with door.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 4096)  # never ends
        response = read_all(sock)
    status, body = status_and_body(response)
    assert status == 431
    assert "max_header_bytes=2048" in body["error"]["message"]  # type: ignore[index]
    assert door.refusals == Counter({"headers_too_large": 1})


def test_a_whole_head_over_the_size_limit_gets_431(door: Door) -> None:
    with door.connect() as sock:
        sock.sendall(get(extra=b"x-big: " + b"a" * 3000 + b"\r\n"))
        response = read_all(sock)
    assert status_and_body(response)[0] == 431


def test_too_many_header_lines_get_431(door: Door) -> None:
    lines = b"".join(b"x-h%d: v\r\n" % n for n in range(30))
    with door.connect() as sock:
        sock.sendall(get(extra=lines))
        response = read_all(sock)
    status, body = status_and_body(response)
    assert status == 431
    assert "max_header_count=20" in body["error"]["message"]  # type: ignore[index]
    assert door.refusals == Counter({"too_many_headers": 1})


def test_a_connection_beyond_the_limit_gets_503_at_accept(door: Door) -> None:
    held = [door.connect() for _ in range(LIMITS.max_connections)]
    try:
        deadline = time.monotonic() + 5
        while door.open_connections[0] < LIMITS.max_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        with door.connect() as extra:
            response = read_all(extra)
        status, body = status_and_body(response)
        assert status == 503
        assert body["error"]["code"] == "overloaded"  # type: ignore[index]
        assert b"retry-after: 3" in response.lower()
        assert door.refusals["connection_limit"] == 1
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while door.open_connections[0] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert door.open_connections[0] == 0
    with door.connect() as sock:  # room again
        sock.sendall(get())
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_an_answer_that_left_the_body_unread_closes_the_connection(door: Door) -> None:
    with door.connect() as sock:
        sock.sendall(b"POST /early HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n0123456789")
        response = read_all(sock)  # the answer, then the close: no waiting for the rest
    assert response.startswith(b"HTTP/1.1 200")
    assert door.refusals == Counter({"body_unread": 1})


def test_a_body_read_whole_keeps_the_connection(door: Door) -> None:
    with door.connect() as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n0123456789")
        first = sock.recv(65536)
        sock.sendall(get())
        second = sock.recv(65536)
    assert b'{"received": 10}' in first
    assert second.startswith(b"HTTP/1.1 200")
    assert not door.refusals

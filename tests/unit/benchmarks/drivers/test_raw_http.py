"""The raw asyncio HTTP/1.1 client against a tiny local asyncio HTTP server."""

from __future__ import annotations

import asyncio
import socket

import pytest

from benchmarks.drivers.raw_http import Endpoint, RawConnection, build_request
from benchmarks.drivers.sender import TransportFailure
from tests.fakes.tiny_http import Reply, Request, serve


def _search(endpoint: Endpoint, text: str = "a dog") -> bytes:
    body = f'{{"query":{{"text":"{text}"}},"k":10}}'.encode()
    return build_request(endpoint, "POST", "/v1/search", body)


def test_endpoint_and_request_bytes() -> None:
    endpoint = Endpoint.from_url("http://127.0.0.1:8123/api/")
    assert endpoint == Endpoint("127.0.0.1", 8123, "/api")
    data = build_request(endpoint, "POST", "/v1/search", b'{"k":1}')
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /api/v1/search HTTP/1.1"
    assert "Host: 127.0.0.1:8123" in lines
    assert "Connection: keep-alive" in lines
    assert "Content-Length: 7" in lines
    assert body == b'{"k":1}'
    assert b"Content-Length" not in build_request(endpoint, "GET", "/readyz")
    with pytest.raises(ValueError, match="http://"):
        Endpoint.from_url("https://example.org")


def test_keep_alive_reuses_one_connection_and_reads_content_length() -> None:
    async def handler(request: Request) -> Reply:
        return Reply(200, b'{"echo":' + str(len(request.body)).encode() + b"}")

    async def scenario() -> None:
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            connection = RawConnection(endpoint, timeout_s=5.0)
            try:
                answers = [await connection.request(_search(endpoint, f"q{i}")) for i in range(5)]
            finally:
                await connection.aclose()
            assert [answer.status for answer in answers] == [200] * 5
            sent = _search(endpoint, "q0").partition(b"\r\n\r\n")[2]
            assert answers[0].body == b'{"echo":' + str(len(sent)).encode() + b"}"
            assert server.connections == 1
            assert connection.connects == 1
            assert {request.connection for request in server.requests} == {1}
            assert server.requests[0].headers["content-type"] == "application/json"

    asyncio.run(scenario())


def test_503_and_other_statuses_are_answers_not_failures() -> None:
    statuses = iter([503, 500, 422, 200])

    async def handler(_request: Request) -> Reply:
        status = next(statuses)
        return Reply(status, b'{"error":{"code":"overloaded"}}', headers={"Retry-After": "1"})

    async def scenario() -> None:
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            connection = RawConnection(endpoint)
            try:
                got = [(await connection.request(_search(endpoint))).status for _ in range(4)]
            finally:
                await connection.aclose()
            assert got == [503, 500, 422, 200]
            assert server.connections == 1  # an error answer keeps the connection

    asyncio.run(scenario())


def test_chunked_answer_and_connection_close() -> None:
    replies = iter(
        [
            Reply(200, b'{"results":[1,2,3]}', chunked=True),
            Reply(200, b"closing", close=True),
            Reply(200, b"fresh"),
        ]
    )

    async def handler(_request: Request) -> Reply:
        return next(replies)

    async def scenario() -> None:
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            connection = RawConnection(endpoint)
            try:
                first = await connection.request(_search(endpoint))
                second = await connection.request(_search(endpoint))
                assert not connection.connected
                third = await connection.request(_search(endpoint))
            finally:
                await connection.aclose()
            assert first.body == b'{"results":[1,2,3]}'
            assert second.body == b"closing"
            assert third.body == b"fresh"
            assert connection.connects == 2
            assert server.connections == 2

    asyncio.run(scenario())


def test_server_closing_an_idle_keep_alive_connection_is_not_an_error() -> None:
    async def handler(_request: Request) -> Reply:
        return Reply(200, b"ok", drop_after=True)  # answers, then closes without saying so

    async def scenario() -> None:
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            connection = RawConnection(endpoint)
            try:
                statuses = []
                for _ in range(3):
                    statuses.append((await connection.request(_search(endpoint))).status)
            finally:
                await connection.aclose()
            assert statuses == [200, 200, 200]
            assert server.connections == 3
            assert connection.connects + connection.resends >= 3

    asyncio.run(scenario())


def test_connection_errors_are_counted_by_kind() -> None:
    replies = iter(
        [
            Reply(drop=True),  # closed without an answer on a fresh connection
            Reply(raw=b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"),  # cut short
            Reply(raw=b"garbage\r\n\r\n"),
            Reply(200, b"fine"),
        ]
    )

    async def handler(_request: Request) -> Reply:
        reply = next(replies)
        if reply.raw is not None and b"short" in reply.raw:
            return Reply(raw=reply.raw, drop_after=True)
        return reply

    async def scenario() -> list[str]:
        kinds: list[str] = []
        async with serve(handler) as server:
            endpoint = Endpoint.from_url(server.url)
            connection = RawConnection(endpoint)
            try:
                for _ in range(3):
                    with pytest.raises(TransportFailure) as caught:
                        await connection.request(_search(endpoint))
                    kinds.append(caught.value.kind)
                assert (await connection.request(_search(endpoint))).body == b"fine"
            finally:
                await connection.aclose()
        return kinds

    assert asyncio.run(scenario()) == ["connection", "connection", "protocol"]


def test_refused_connection_and_timeout() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    async def slow(_request: Request) -> Reply:
        return Reply(200, b"late", delay_s=0.5)

    async def scenario() -> tuple[str, str, int]:
        refused = RawConnection(Endpoint("127.0.0.1", closed_port))
        with pytest.raises(TransportFailure) as caught_refused:
            await refused.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        async with serve(slow) as server:
            endpoint = Endpoint.from_url(server.url)
            connection = RawConnection(endpoint, timeout_s=0.1)
            try:
                with pytest.raises(TransportFailure) as caught_timeout:
                    await connection.request(_search(endpoint))
                assert not connection.connected
                connection.timeout_s = 2.0
                answer = await connection.request(_search(endpoint))
            finally:
                await connection.aclose()
        return caught_refused.value.kind, caught_timeout.value.kind, answer.status

    assert asyncio.run(scenario()) == ("connect", "timeout", 200)

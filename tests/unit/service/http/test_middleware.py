"""BodyGateMiddleware on bare ASGI calls: the whole body before the app, within size and time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from service.http.middleware import (
    BodyGateMiddleware,
    BodyLimit,
    ClientDisconnectedError,
    has_body,
)


def scope_for(path: str = "/v1/search", headers: dict[str, str] | None = None) -> Scope:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in (headers or {}).items()],
    }


class App:
    """Records what reached it: each message its receive gave, in one call."""

    def __init__(self) -> None:
        self.calls = 0
        self.first_message: Message | None = None

    async def __call__(self, _scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        self.first_message = await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def messages(*items: Message) -> Callable[[], Awaitable[Message]]:
    queue = list(items)

    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()  # a client that stopped sending
        raise AssertionError("unreachable")

    return receive


class Sent:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.messages[0]["headers"]}

    @property
    def error(self) -> dict[str, str]:
        return dict(json.loads(self.messages[1]["body"])["error"])


def gate(app: App, timeout_s: float = 5.0, timeouts: list[int] | None = None) -> BodyGateMiddleware:
    counted = timeouts if timeouts is not None else []
    return BodyGateMiddleware(
        app,
        default=BodyLimit(100),
        by_path={"/big": BodyLimit(1000, setting="max_big")},
        timeout_s=timeout_s,
        on_timeout=lambda: counted.append(1),
    )


def test_a_body_in_chunks_reaches_the_app_as_one_message() -> None:
    app, sent = App(), Sent()
    receive = messages(
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"", "more_body": True},
        {"type": "http.request", "body": b"cd", "more_body": False},
    )
    asyncio.run(gate(app)(scope_for(headers={"transfer-encoding": "chunked"}), receive, sent))
    assert app.first_message == {"type": "http.request", "body": b"abcd", "more_body": False}
    assert sent.status == 200


def test_a_request_without_a_body_passes_untouched() -> None:
    app, sent = App(), Sent()
    receive = messages({"type": "http.request", "body": b"", "more_body": False})
    asyncio.run(gate(app)(scope_for(), receive, sent))
    assert app.calls == 1
    assert sent.status == 200


def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    app, sent = App(), Sent()

    async def never_read() -> Message:
        raise AssertionError("the body must not be read")

    asyncio.run(gate(app)(scope_for(headers={"content-length": "101"}), never_read, sent))
    assert app.calls == 0
    assert sent.status == 413
    assert sent.error["code"] == "payload_too_large"
    assert "max_body_bytes=100" in sent.error["message"]
    assert sent.headers["connection"] == "close"


def test_an_undeclared_body_is_refused_once_it_passes_the_limit() -> None:
    app, sent = App(), Sent()
    receive = messages(
        {"type": "http.request", "body": b"x" * 60, "more_body": True},
        {"type": "http.request", "body": b"x" * 60, "more_body": True},
    )
    asyncio.run(gate(app)(scope_for(headers={"transfer-encoding": "chunked"}), receive, sent))
    assert app.calls == 0
    assert sent.status == 413


def test_a_path_of_its_own_has_its_own_limit() -> None:
    app, sent = App(), Sent()
    receive = messages({"type": "http.request", "body": b"x" * 500, "more_body": False})
    asyncio.run(gate(app)(scope_for("/big", {"content-length": "500"}), receive, sent))
    assert sent.status == 200
    app, sent = App(), Sent()
    asyncio.run(gate(app)(scope_for("/big", {"content-length": "1001"}), receive, sent))
    assert "max_big=1000" in sent.error["message"]


def test_a_stalled_body_gets_408_at_the_deadline_and_never_reaches_the_app() -> None:
    app, sent = App(), Sent()
    timeouts: list[int] = []
    middleware = gate(app, timeout_s=0.05, timeouts=timeouts)
    receive = messages({"type": "http.request", "body": b"0123456789", "more_body": True})
    asyncio.run(middleware(scope_for(headers={"content-length": "100"}), receive, sent))
    assert app.calls == 0
    assert sent.status == 408
    assert sent.error["code"] == "request_timeout"
    assert "body_timeout_s=0.05 (10 bytes came)" in sent.error["message"]
    assert sent.headers["connection"] == "close"
    assert timeouts == [1]


def test_a_client_gone_mid_body_ends_the_request_without_an_answer() -> None:
    app, sent = App(), Sent()
    receive = messages(
        {"type": "http.request", "body": b"01234", "more_body": True},
        {"type": "http.disconnect"},
    )
    with pytest.raises(ClientDisconnectedError):
        asyncio.run(gate(app)(scope_for(headers={"content-length": "100"}), receive, sent))
    assert app.calls == 0
    assert sent.messages == []


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, False),
        ({"content-length": "0"}, False),
        ({"content-length": "12"}, True),
        ({"transfer-encoding": "chunked"}, True),
    ],
)
def test_has_body(headers: dict[str, str], expected: bool) -> None:
    assert has_body(Headers(headers)) is expected

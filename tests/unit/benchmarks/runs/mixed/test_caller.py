"""The mixed run's caller: 503 + Retry-After retried and counted, everything else classified."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest

from benchmarks.drivers.http_client import retry_policy
from benchmarks.runs.mixed.caller import Caller, Outcome

Handler = Callable[[httpx.Request], httpx.Response]


def call(handler: Handler, body: bytes | dict[str, object] = b"{}", retries: int = 5) -> Outcome:
    async def go() -> Outcome:
        async with Caller(
            "http://fake/",
            timeout_s=5.0,
            max_connections=2,
            retry=retry_policy(max_retries=retries, max_wait_s=0.01),
            transport=httpx.MockTransport(handler),
        ) as caller:
            return await caller.post("/v1/search", body)

    return asyncio.run(go())


def sequence(*responses: httpx.Response) -> Handler:
    answers = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:  # noqa: ARG001 - any request
        return answers.pop(0)

    return handler


def busy(retry_after: str | None = "0") -> httpx.Response:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return httpx.Response(503, json={"error": {"code": "overloaded"}}, headers=headers)


def test_a_2xx_json_object_is_ok() -> None:
    outcome = call(sequence(httpx.Response(200, json={"results": []})))
    assert outcome.ok
    assert outcome.status == "200"
    assert outcome.body == {"results": []}
    assert outcome.retries == 0
    assert outcome.latency_ms >= 0.0


def test_a_503_with_retry_after_is_retried_and_counted() -> None:
    outcome = call(sequence(busy(), busy(), httpx.Response(200, json={"seq": 3})))
    assert outcome.ok
    assert outcome.retries == 2


def test_retries_stop_at_the_policy_and_the_503_is_the_status() -> None:
    outcome = call(sequence(busy(), busy(), busy()), retries=2)
    assert not outcome.ok
    assert (outcome.status, outcome.retries) == ("503", 2)


def test_a_503_without_retry_after_is_not_retried() -> None:
    outcome = call(sequence(busy(None)))
    assert (outcome.status, outcome.retries, outcome.body) == ("503", 0, None)


@pytest.mark.parametrize(
    ("response", "status"),
    [
        (httpx.Response(422, json={"error": {"code": "invalid_input"}}), "422"),
        (httpx.Response(500, text="boom"), "500"),
        (httpx.Response(200, text="not json"), "bad_response"),
        (httpx.Response(200, json=[1, 2]), "bad_response"),
    ],
)
def test_other_answers_end_the_request(response: httpx.Response, status: str) -> None:
    outcome = call(sequence(response))
    assert (outcome.ok, outcome.status, outcome.retries) == (False, status, 0)


@pytest.mark.parametrize(
    ("error", "status"),
    [(httpx.ReadTimeout("slow"), "timeout"), (httpx.ConnectError("refused"), "connection")],
)
def test_transport_failures_are_classified(error: httpx.TransportError, status: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:  # noqa: ARG001 - any request
        raise error

    assert call(handler).status == status


def test_bodies_go_out_as_json_bytes_either_way() -> None:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        assert request.headers["content-type"] == "application/json"
        return httpx.Response(200, json={})

    call(handler, {"ids": ["a"]})
    call(handler, b'{"ids": ["b"]}')
    assert [json.loads(raw) for raw in seen] == [{"ids": ["a"]}, {"ids": ["b"]}]

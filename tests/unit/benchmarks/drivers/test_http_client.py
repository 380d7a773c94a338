"""The HTTP client against httpx.MockTransport handlers."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from benchmarks.drivers.http_client import (
    CrisscrossClient,
    SearchResponse,
    ServiceNotReadyError,
    retry_after_seconds,
    retry_policy,
    search_body,
)
from benchmarks.drivers.query_sides import item_ref, text_query
from crisscross_client import ClientTimeoutError, CrisscrossError


def _client(transport: httpx.MockTransport, **kwargs: object) -> CrisscrossClient:
    return CrisscrossClient("http://svc", transport=transport, **kwargs)  # type: ignore[arg-type]


def _error(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code} happened", "request_id": "r-1"}}
    return httpx.Response(status, json=body, headers=headers)


def test_error_body_is_in_the_exception() -> None:
    async def scenario() -> None:
        transport = httpx.MockTransport(lambda _request: _error(422, "invalid_input"))
        async with _client(transport) as client:
            await client.search(text_query("a dog"), "captions", 5000)

    with pytest.raises(CrisscrossError) as caught:
        asyncio.run(scenario())
    error = caught.value
    assert error.status == 422
    assert error.code == "invalid_input"
    assert error.request_id == "r-1"
    assert "invalid_input happened" in str(error)
    assert "/v1/search" in str(error)


def test_non_json_error_body_is_kept_as_text() -> None:
    async def scenario() -> None:
        transport = httpx.MockTransport(lambda _request: httpx.Response(502, text="bad gateway"))
        async with _client(transport) as client:
            await client.collections()

    with pytest.raises(CrisscrossError, match="bad gateway"):
        asyncio.run(scenario())


def test_503_with_retry_after_is_retried_then_succeeds() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) < 3:
            return _error(503, "overloaded", {"Retry-After": "0"})
        return httpx.Response(200, json={"scores": [0.5], "variant": "v", "bundle_version": "b"})

    async def scenario() -> list[float]:
        async with _client(httpx.MockTransport(handler)) as client:
            answer = await client.score([(text_query("x"), item_ref("captions", "c1"))])
            return answer.scores

    assert asyncio.run(scenario()) == [0.5]
    assert len(calls) == 3


def test_retries_are_bounded_and_503_without_retry_after_is_not_retried() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if request.url.path == "/v1/collections":
            return _error(503, "not_ready")
        return _error(503, "overloaded", {"Retry-After": "0"})

    async def scenario(path: str) -> None:
        async with _client(httpx.MockTransport(handler), retry=retry_policy(max_retries=2)) as c:
            if path == "search":
                await c.search(text_query("x"), "captions", 10)
            else:
                await c.collections()

    with pytest.raises(CrisscrossError, match="overloaded"):
        asyncio.run(scenario("search"))
    assert calls.count("/v1/search") == 3
    with pytest.raises(CrisscrossError, match="not_ready"):
        asyncio.run(scenario("collections"))
    assert calls.count("/v1/collections") == 1


def test_search_request_body_and_parsed_answer() -> None:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(
            200,
            json={
                "results": [{"id": "c2", "score": 0.9, "rank": 1, "metadata": {}}],
                "collection": "captions",
                "variant": "v1",
                "bundle_version": "b1",
                "timings_ms": {"total": 1.5},
            },
        )

    async def scenario() -> None:
        async with _client(httpx.MockTransport(handler)) as client:
            answer = await client.search(
                text_query("a dog"), "captions", 7, exclude=["c1"], variant="v1"
            )
            assert answer.ids == ["c2"]
            assert answer.scores == [0.9]
            assert answer.variant == "v1"
            assert answer.bundle_version == "b1"
            assert answer.timings_ms == {"total": 1.5}

    asyncio.run(scenario())
    body = httpx.Response(200, content=seen[0]).json()
    assert body == {
        "query": {"text": "a dog"},
        "collection": "captions",
        "k": 7,
        "exclude": ["c1"],
        "variant": "v1",
    }


def test_score_count_mismatch_is_an_error() -> None:
    transport = httpx.MockTransport(lambda _request: httpx.Response(200, json={"scores": []}))

    async def scenario() -> None:
        async with _client(transport) as client:
            await client.score([(text_query("a"), text_query("b"))])

    with pytest.raises(CrisscrossError, match="asked for 1 scores"):
        asyncio.run(scenario())


def test_bulk_search_answers_each_search_or_its_error() -> None:
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        hit = {"id": "c2", "score": 0.5, "rank": 1, "metadata": None}
        result = {"results": [hit], "collection": "captions", "variant": "v", "bundle": "b"}
        refused = {"code": "not_found", "message": "unknown item"}
        return httpx.Response(
            200,
            json={
                "responses": [
                    {"status": 200, "result": {**result, "bundle_version": "1"}, "error": None},
                    {"status": 404, "result": None, "error": refused},
                ],
                "timings_ms": {"total": 2.0},
            },
        )

    searches = [
        search_body(text_query("a dog"), "captions", 5, include_metadata=False),
        search_body(item_ref("captions", "nope"), "captions", 5, exclude=["nope"], variant="v"),
    ]

    async def scenario() -> list[SearchResponse | CrisscrossError]:
        async with _client(httpx.MockTransport(handler)) as client:
            return await client.search_bulk(searches)

    found, refused = asyncio.run(scenario())
    assert isinstance(found, SearchResponse)
    assert (found.ids, found.scores, found.bundle_version) == (["c2"], [0.5], "1")
    assert isinstance(refused, CrisscrossError)
    assert (refused.status, refused.code, refused.message) == (
        404,
        "not_found",
        "unknown item",
    )
    assert httpx.Response(200, content=sent[0]).json() == {"searches": searches}
    assert searches[0] == {
        "query": {"text": "a dog"},
        "collection": "captions",
        "k": 5,
        "include_metadata": False,
    }
    assert searches[1]["exclude"] == ["nope"]


def test_bulk_search_with_a_wrong_answer_count_is_an_error() -> None:
    transport = httpx.MockTransport(lambda _request: httpx.Response(200, json={"responses": []}))

    async def scenario() -> None:
        async with _client(transport) as client:
            await client.search_bulk([search_body(text_query("a"), "captions", 1)])

    with pytest.raises(CrisscrossError, match="asked 1 searches"):
        asyncio.run(scenario())


def test_wait_ready_polls_until_ready_and_times_out() -> None:
    polls = []

    def handler(request: httpx.Request) -> httpx.Response:
        polls.append(request.url.path)
        if len(polls) == 1:
            raise httpx.ConnectError("refused", request=request)
        if len(polls) < 4:
            return _error(503, "not_ready", {"Retry-After": "1"})
        return httpx.Response(200, json={"status": "ready"})

    async def ready() -> None:
        async with _client(httpx.MockTransport(handler)) as client:
            await client.wait_ready(timeout_s=5.0, interval_s=0.0)

    asyncio.run(ready())
    assert polls == ["/readyz"] * 4

    async def never() -> None:
        transport = httpx.MockTransport(lambda _request: _error(503, "not_ready"))
        async with _client(transport) as client:
            await client.wait_ready(timeout_s=0.05, interval_s=0.01)

    with pytest.raises(ServiceNotReadyError, match="did not answer 200"):
        asyncio.run(never())


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds(" 0.5 ") == 0.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:10 GMT", now=now) == 10.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_the_harness_client_is_the_project_client_with_the_harness_rule() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/variants":
            raise httpx.ReadTimeout("slow", request=request)
        return _error(503, "overloaded", {"Retry-After": "0"})

    async def scenario() -> None:
        client = CrisscrossClient(
            "http://svc", transport=httpx.MockTransport(handler), api_key="k" * 16
        )
        async with client:
            with pytest.raises(ClientTimeoutError) as timed_out:
                await client.variants()
            assert isinstance(timed_out.value.__cause__, httpx.ReadTimeout)
            with pytest.raises(CrisscrossError, match="overloaded"):
                await client.search(text_query("x"), "captions", 1, retry=False)
            info = client.api.last_response
            assert info is not None
            assert info.attempts == 1

    asyncio.run(scenario())
    assert [request.url.path for request in seen] == ["/v1/variants", "/v1/search"]
    assert seen[0].headers["authorization"] == "Bearer " + "k" * 16
    policy = retry_policy(max_retries=2, max_wait_s=4.0)
    assert (policy.max_retries, policy.max_retry_after_s) == (2, 4.0)
    assert policy.statuses == frozenset({503})
    assert policy.require_retry_after
    assert not policy.retry_connection_errors


def test_a_search_carries_more_fields_and_reads_the_mode() -> None:
    levers = {"mode": "hybrid", "fusion": {"method": "rrf", "k": 30}, "window": 100}
    body = search_body(text_query("a dog"), "captions", 5, variant="v", fields=levers)
    assert body == {
        "query": {"text": "a dog"},
        "collection": "captions",
        "k": 5,
        "variant": "v",
        **levers,
    }
    assert search_body(text_query("a"), "captions", 5, fields={}) == search_body(
        text_query("a"), "captions", 5
    )
    with pytest.raises(ValueError, match=r"\['k', 'variant'\] are set by their own arguments"):
        search_body(text_query("a"), "captions", 5, fields={"k": 9, "variant": "w"})
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        answer = {"results": [], "collection": "captions", "variant": "v", "mode": "hybrid"}
        return httpx.Response(200, json=answer)

    async def scenario() -> None:
        async with _client(httpx.MockTransport(handler)) as client:
            answer = await client.search(text_query("a"), "captions", 5, fields=levers)
            assert answer.mode == "hybrid"

    asyncio.run(scenario())
    assert {key: seen[0][key] for key in levers} == levers

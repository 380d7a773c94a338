"""Retries: which failures are retried, the waits (Retry-After, backoff with jitter), and that
a write that may have been applied is retried only when it is idempotent (item writes are:
each carries an Idempotency-Key; see test_replicas.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

import crisscross_client as cc

OK_STATUS = {"status": "ok"}
UPSERTED = {"seq": 1, "upserted": 1}


def _error(status: int, code: str = "x", retry_after: str | None = None) -> httpx.Response:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    body = {"error": {"code": code, "message": code, "request_id": "r"}}
    return httpx.Response(status, json=body, headers=headers)


class Script:
    """Answers from a list, one per request (an exception is raised as a transport error)."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, _request: httpx.Request) -> httpx.Response:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if isinstance(answer, Exception):
            raise answer
        return answer


def _client(script: Script, waits: list[float], **kwargs: object) -> cc.Client:
    policy = cc.RetryPolicy(jitter=lambda: 0.5, **kwargs)  # type: ignore[arg-type]
    return cc.Client(
        "http://svc", transport=httpx.MockTransport(script), retry=policy, sleep=waits.append
    )


@pytest.mark.parametrize("status", [408, 429, 502, 503, 504])
def test_retryable_statuses_are_retried_with_exponential_backoff(status: int) -> None:
    script = Script(_error(status), _error(status), httpx.Response(200, json=OK_STATUS))
    waits: list[float] = []
    with _client(script, waits) as client:
        assert client.health().status == "ok"
        info = client.last_response
    assert script.calls == 3
    # backoff 0.5 s doubling; half of each step fixed, the other half times the jitter (0.5)
    assert waits == [0.375, 0.75]
    assert info is not None
    assert (info.attempts, info.retries) == (3, 2)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422, 500])
def test_other_statuses_are_not_retried(status: int) -> None:
    script = Script(_error(status), httpx.Response(200, json=OK_STATUS))
    waits: list[float] = []
    with _client(script, waits) as client, pytest.raises(cc.CrisscrossError):
        client.health()
    assert script.calls == 1
    assert waits == []


def test_retry_after_is_honoured_and_capped() -> None:
    script = Script(
        _error(503, "overloaded", "2"),
        _error(429, retry_after="120"),
        httpx.Response(200, json=OK_STATUS),
    )
    waits: list[float] = []
    with _client(script, waits, max_retry_after_s=10.0) as client:
        client.health()
    assert waits == [2.0, 10.0]


def test_retry_after_as_an_http_date() -> None:
    now = datetime(2026, 11, 28, 6, 0, 0, tzinfo=UTC)
    assert cc.retry_after_seconds("Sat, 28 Nov 2026 06:00:05 GMT", now) == 5.0
    assert cc.retry_after_seconds("Sat, 28 Nov 2026 05:00:00 GMT", now) == 0.0
    assert cc.retry_after_seconds("soon", now) is None
    assert cc.retry_after_seconds(None) is None
    assert cc.retry_after_seconds(" 1.5 ") == 1.5


def test_retries_are_bounded_and_the_last_error_is_raised() -> None:
    script = Script(_error(503, "overloaded", "0"))
    waits: list[float] = []
    with _client(script, waits, max_retries=2) as client, pytest.raises(cc.Overloaded) as caught:
        client.health()
    assert script.calls == 3
    assert caught.value.retry_after == 0.0
    assert client.last_response is not None
    assert client.last_response.attempts == 3


def test_backoff_is_capped_and_jittered() -> None:
    policy = cc.RetryPolicy(backoff_s=1.0, max_backoff_s=4.0, jitter=lambda: 1.0)
    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    low = cc.RetryPolicy(backoff_s=1.0, max_backoff_s=4.0, jitter=lambda: 0.0)
    assert [low.backoff(n) for n in range(1, 4)] == [0.5, 1.0, 2.0]


def test_connection_errors_are_retried_and_then_raised() -> None:
    refused = httpx.ConnectError("refused")
    script = Script(refused, refused, httpx.Response(200, json=OK_STATUS))
    waits: list[float] = []
    with _client(script, waits) as client:
        assert client.health().status == "ok"
    assert len(waits) == 2
    script = Script(httpx.ReadTimeout("slow"))
    with _client(script, [], max_retries=1) as client, pytest.raises(cc.Timeout) as caught:
        client.health()
    assert script.calls == 2
    assert caught.value.status is None
    assert isinstance(caught.value, cc.ConnectionFailed)
    assert client.last_response is not None
    assert client.last_response.status is None


def test_an_idempotent_write_is_retried_whatever_failed() -> None:
    script = Script(httpx.ReadTimeout("slow"), _error(502), httpx.Response(200, json=UPSERTED))
    with _client(script, []) as client:
        assert client.upsert("notes", [{"id": "a", "text": "t"}]).upserted == 1
    assert script.calls == 3
    deleted = {"seq": 2, "deleted": 1}
    script = Script(_error(504), httpx.Response(200, json=deleted))
    with _client(script, []) as client:
        assert client.delete_items("notes", ids=["a"]).deleted == 1
    assert script.calls == 2
    # A delete by filter carries an Idempotency-Key too: the service applies it once.
    script = Script(httpx.ReadTimeout("slow"), httpx.Response(200, json=deleted))
    with _client(script, []) as client:
        assert client.delete_items("notes", filter={"field": "k", "eq": 1}).deleted == 1
    assert script.calls == 2


@pytest.mark.parametrize(
    "failure",
    [httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("reset"), _error(502), _error(504)],
    ids=["read-timeout", "reset", "502", "504"],
)
def test_a_write_that_may_have_been_applied_is_not_retried(
    failure: httpx.Response | Exception,
) -> None:
    created = httpx.Response(201, json={"name": "n"})
    calls: list[Callable[[cc.Client], object]] = [
        lambda c: c.create_collection("notes", dim=4),
        lambda c: c.compact("notes"),
        lambda c: c.snapshot("notes"),
        lambda c: c.delete_collection("notes"),
        lambda c: c.reload(),
    ]
    for call in calls:
        script = Script(failure, created)
        with _client(script, []) as client, pytest.raises(cc.CrisscrossError):
            call(client)
        assert script.calls == 1


@pytest.mark.parametrize(
    "refusal",
    [
        httpx.ConnectError("refused"),
        _error(503, "overloaded", "0"),
        _error(503, "not_ready"),
        _error(429),
        _error(408),
    ],
    ids=["connect", "overloaded", "not-ready", "429", "408"],
)
def test_a_write_the_service_certainly_refused_is_retried(
    refusal: httpx.Response | Exception,
) -> None:
    dropped = httpx.Response(200, json={"dropped": "notes"})
    script = Script(refusal, dropped)
    with _client(script, []) as client:
        assert client.delete_collection("notes").dropped == "notes"
    assert script.calls == 2


def test_a_503_write_failure_of_a_non_idempotent_write_is_not_retried() -> None:
    script = Script(_error(503, "write_failed", "1"), httpx.Response(200, json={"dropped": "n"}))
    with _client(script, []) as client, pytest.raises(cc.ServiceUnavailable):
        client.delete_collection("notes")
    assert script.calls == 1


def test_a_policy_can_ask_for_retry_after_and_limit_statuses() -> None:
    script = Script(_error(503, "not_ready"), httpx.Response(200, json=OK_STATUS))
    strict = {"statuses": frozenset({503}), "require_retry_after": True}
    with _client(script, [], **strict) as client, pytest.raises(cc.NotReady):
        client.health()
    assert script.calls == 1
    script = Script(httpx.ConnectError("refused"), httpx.Response(200, json=OK_STATUS))
    no_reconnect = _client(script, [], retry_connection_errors=False)
    with no_reconnect as client, pytest.raises(cc.ConnectionFailed):
        client.health()


def test_max_retries_zero_never_retries() -> None:
    script = Script(_error(503, "overloaded", "0"), httpx.Response(200, json=OK_STATUS))
    once = cc.Client("http://svc", max_retries=0, transport=httpx.MockTransport(script))
    with once as client, pytest.raises(cc.Overloaded):
        client.health()
    assert script.calls == 1


def test_the_async_client_retries_the_same_way() -> None:
    script = Script(
        _error(503, "overloaded", "1"), _error(502), httpx.Response(200, json=OK_STATUS)
    )
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def scenario() -> str:
        async with cc.AsyncClient(
            "http://svc",
            transport=httpx.MockTransport(script),
            retry=cc.RetryPolicy(jitter=lambda: 0.0),
            sleep=sleep,
        ) as client:
            return (await client.health()).status

    assert asyncio.run(scenario()) == "ok"
    assert waits == [1.0, 0.5]

"""A client's options: the service and key from the environment, per-call timeouts (per
attempt), ``with_options`` copies sharing the pool, and reprs that never show the key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

import crisscross_client as cc
from crisscross_client import models as m
from tests.fakes.tiny_http import Reply, Request, json_reply, serve, serve_in_thread

STATUS_OK = {"status": "ok"}


class Seen:
    """A MockTransport handler answering every request ``{"status": "ok"}`` (or an embed
    answer), recording each request's URL, headers and read timeout."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path == "/v1/embed":
            texts = json.loads(request.content)["texts"]
            return httpx.Response(
                200, json={"embeddings": [[1.0]] * len(texts), "dim": 1, "variant": "v"}
            )
        return httpx.Response(200, json=STATUS_OK)

    @property
    def read_timeouts(self) -> list[float]:
        return [request.extensions["timeout"]["read"] for request in self.requests]


def _sync(seen: Seen, base_url: str | None = "http://svc", **kwargs: Any) -> cc.Client:
    return cc.Client(base_url, transport=httpx.MockTransport(seen), **kwargs)


# --- the environment ----------------------------------------------------------------------------


def test_the_url_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_URL", "https://search.example:9443/prefix/")
    monkeypatch.setenv("CRISSCROSS_API_KEY", "env-key")
    seen = Seen()
    with _sync(seen, None) as client:
        assert client.base_url == "https://search.example:9443/prefix"
        client.health()
    request = seen.requests[0]
    assert str(request.url) == "https://search.example:9443/prefix/healthz"
    assert request.headers["authorization"] == "Bearer env-key"


def test_explicit_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_URL", "http://env-host:1")
    monkeypatch.setenv("CRISSCROSS_API_KEY", "env-key")
    seen = Seen()
    with _sync(seen, "http://given:2", api_key="given-key") as client:
        client.health()
    assert str(seen.requests[0].url) == "http://given:2/healthz"
    assert seen.requests[0].headers["authorization"] == "Bearer given-key"
    # An Authorization header given is a key given: the environment's does not replace it.
    with _sync(seen, headers={"Authorization": "Bearer header-key"}) as client:
        client.health()
    assert seen.requests[-1].headers["authorization"] == "Bearer header-key"


def test_without_the_environment_the_defaults_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_API_KEY", "")  # set but empty: no key
    seen = Seen()
    with _sync(seen, None) as client:
        assert client.base_url == "http://127.0.0.1:8000"
        client.health()
    assert "authorization" not in seen.requests[0].headers


@pytest.mark.parametrize(
    "value", ["", "   ", "localhost:8000", "ftp://host", "http://", "http://h?q=1"]
)
@pytest.mark.parametrize("kind", [cc.Client, cc.AsyncClient])
def test_an_empty_or_malformed_url_in_the_environment_is_named(
    monkeypatch: pytest.MonkeyPatch, kind: type[Any], value: str
) -> None:
    monkeypatch.setenv("CRISSCROSS_URL", value)
    with pytest.raises(ValueError, match="CRISSCROSS_URL"):
        kind()


def test_a_malformed_base_url_argument_is_named() -> None:
    with pytest.raises(ValueError, match="base_url"):
        cc.Client("search.example")
    with pytest.raises(ValueError, match="base_url is empty"):
        cc.Client("")


def test_the_async_client_reads_the_environment_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_URL", "http://env-host:3")
    monkeypatch.setenv("CRISSCROSS_API_KEY", "env-key")
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=STATUS_OK)

    async def scenario() -> None:
        async with cc.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await client.health()

    asyncio.run(scenario())
    assert str(seen[0].url) == "http://env-host:3/healthz"
    assert seen[0].headers["authorization"] == "Bearer env-key"


# --- timeouts -----------------------------------------------------------------------------------


def test_a_calls_timeout_overrides_the_clients_for_each_of_its_requests() -> None:
    seen = Seen()
    with _sync(seen, timeout=30.0) as client:
        client.health()
        client.health(timeout=2.5)
        client.embed_texts(["t"] * 5000, timeout=4)  # three requests
        client.request("GET", "/anything", timeout=1.5)
        client.health()
    assert seen.read_timeouts == [30.0, 2.5, 4.0, 4.0, 4.0, 1.5, 30.0]


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_a_timeout_must_be_a_positive_number(timeout: float) -> None:
    with _sync(Seen()) as client:
        with pytest.raises(ValueError, match="timeout"):
            client.health(timeout=timeout)
        with pytest.raises(ValueError, match="timeout"):
            client.with_options(timeout=timeout)
    with pytest.raises(ValueError, match="timeout"):
        cc.Client("http://svc", timeout=timeout)


async def _slow(request: Request) -> Reply:
    """Answers after 0.3 s."""
    del request
    return json_reply(200, STATUS_OK, delay_s=0.3)


def test_a_call_times_out_on_a_slow_server_per_attempt() -> None:
    waits: list[float] = []
    with (
        serve_in_thread(_slow) as server,
        cc.Client(server.url, timeout=10.0, max_retries=2, sleep=waits.append) as client,
    ):
        with pytest.raises(cc.Timeout):
            client.health(timeout=0.05)
        assert client.last_response is not None
        assert client.last_response.attempts == 3  # each attempt had its 0.05 s
        assert len(server.requests) == 3
        assert client.health().status == "ok"  # the client's own 10 s


def test_the_async_client_times_out_the_same_way() -> None:
    async def scenario() -> None:
        async with (
            serve(_slow) as server,
            cc.AsyncClient(server.url, timeout=10.0, max_retries=0) as client,
        ):
            with pytest.raises(cc.Timeout):
                await client.health(timeout=0.05)
            assert (await client.health()).status == "ok"
            with pytest.raises(cc.Timeout):
                await client.with_options(timeout=0.05).health()

    asyncio.run(scenario())


# --- with_options -------------------------------------------------------------------------------


def test_with_options_is_a_copy_sharing_the_pool() -> None:
    seen = Seen()
    policy = cc.RetryPolicy(max_retries=3, backoff_s=0.1, statuses=frozenset({503}))
    with _sync(seen, api_key="k", timeout=30.0, retry=policy) as client:
        fast = client.with_options(timeout=2.0, max_retries=0)
        assert type(fast) is cc.Client
        assert fast._http is client._http
        assert (fast.timeout, client.timeout) == (2.0, 30.0)
        assert fast.retry_policy == cc.RetryPolicy(
            max_retries=0, backoff_s=0.1, statuses=frozenset({503})
        )
        assert client.retry_policy.max_retries == 3
        assert client.with_options().timeout == 30.0
        fast.health()
        client.health()
        fast.health(timeout=7.0)
        assert client.last_response is fast.last_response  # one record, shared
    assert seen.read_timeouts == [2.0, 30.0, 7.0]
    assert {request.headers["authorization"] for request in seen.requests} == {"Bearer k"}
    with pytest.raises(ValueError, match="max_retries"):
        client.with_options(max_retries=-1)


def test_with_options_of_the_async_client_retries_as_told() -> None:
    attempts: list[int] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        del request
        attempts.append(1)
        return httpx.Response(503, json={"error": {"code": "overloaded", "message": "busy"}})

    async def no_wait(seconds: float) -> None:
        del seconds

    async def scenario() -> None:
        async with cc.AsyncClient(
            "http://svc", transport=httpx.MockTransport(handler), sleep=no_wait
        ) as client:
            once = client.with_options(max_retries=1)
            assert isinstance(once, cc.AsyncClient)
            with pytest.raises(cc.Overloaded):
                await once.health()
            assert len(attempts) == 2
            with pytest.raises(cc.Overloaded):
                await client.health()
            assert len(attempts) == 2 + 4

    asyncio.run(scenario())


# --- reprs --------------------------------------------------------------------------------------


def test_a_clients_repr_shows_its_options_never_its_key() -> None:
    with cc.Client("http://svc:8000/", api_key="very-secret-key") as client:
        shown = repr(client)
        assert shown == (
            "Client(base_url='http://svc:8000', api_key='***', timeout=30.0, max_retries=3)"
        )
        assert "very-secret-key" not in repr(client.with_options(timeout=5))
        assert repr(client.with_options(timeout=5, max_retries=0)) == (
            "Client(base_url='http://svc:8000', api_key='***', timeout=5.0, max_retries=0)"
        )

    async def scenario() -> str:
        async with cc.AsyncClient("http://svc", timeout=3) as client:
            return repr(client)

    assert asyncio.run(scenario()) == (
        "AsyncClient(base_url='http://svc', api_key=None, timeout=3.0, max_retries=3)"
    )


def test_model_reprs_shorten_vectors_and_long_strings() -> None:
    answer = m.EmbedResponse(embeddings=[[0.5] * 384] * 100, dim=384, variant="v")
    shown = repr(answer)
    assert shown.startswith("EmbedResponse(embeddings=[[0.5, 0.5, 0.5, 0.5, ... 384 numbers], ")
    assert "... 100 vectors], dim=384, variant='v')" in shown
    assert len(shown) < 300
    item = m.WriteItem(id="a", image="A" * 100_000, metadata={"kind": "x"})
    assert repr(item) == f"WriteItem(id='a', image='{'A' * 80}'... (100000 chars), " + (
        "metadata={'kind': 'x'})"
    )
    short = m.ScoreResponse.model_validate(
        {
            "scores": [0.5, 0.25],
            "variant": "v",
            "bundle_version": None,
            "timings_ms": {"encode": 1.0, "search": 1.0, "total": 2.0},
        }
    )
    assert repr(short).startswith("ScoreResponse(scores=[0.5, 0.25], variant='v', ")

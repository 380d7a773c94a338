"""The harness's view of the Crisscross v1 API (``docs/contracts.md``), over the project's
Python client (:class:`crisscross_client.AsyncClient`, ``clients/python``).

One client with a keep-alive connection pool serves every concurrent request of a run. The
harness has no retry loop or error classes of its own: it uses the client's. Its rule, retry
only a ``503`` that carries ``Retry-After`` (overloaded / not ready), a bounded number of times,
sleeping what the header asks (capped), is the client's :class:`crisscross_client.RetryPolicy`
made by :func:`retry_policy`. A failed request raises the client's
:class:`crisscross_client.CrisscrossError`: the subclass of a non-2xx answer's status carrying
the service's error body (``{"error": {"code", "message", "request_id", ...}}``),
:class:`crisscross_client.ConnectionFailedError` (:class:`crisscross_client.ClientTimeoutError`)
for a request that got no answer, :class:`crisscross_client.BadResponseError` for a 2xx body the
harness cannot read. Answers are read leniently (only the fields the harness uses), so a
report's numbers depend on the service's answers alone. A call of the client can be put behind
the drivers' one interface with :mod:`benchmarks.drivers.client_sender`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx

import crisscross_client
from crisscross_client import retry_after_seconds as retry_after_seconds
from crisscross_client.errors import error_class

logger = logging.getLogger(__name__)

JsonObject = dict[str, Any]


class ServiceNotReadyError(RuntimeError):
    """``GET /readyz`` did not answer 200 within the allowed time."""


def retry_policy(max_retries: int = 5, max_wait_s: float = 30.0) -> crisscross_client.RetryPolicy:
    """The harness's retry rule as the client's policy: a 503 with ``Retry-After`` only,
    waiting what it asks (at most ``max_wait_s``), at most ``max_retries`` times (0: never);
    no backoff of its own, a request that got no answer not retried."""
    return crisscross_client.RetryPolicy(
        max_retries=max_retries,
        max_retry_after_s=max_wait_s,
        statuses=frozenset({503}),
        require_retry_after=True,
        retry_connection_errors=False,
    )


@dataclass(frozen=True)
class SearchResponse:
    """The parts of a ``POST /v1/search`` answer the harness uses.

    Attributes:
        ids: result ids in rank order (tie rule applied by the service).
        scores: result scores, same order and length as ``ids``.
        variant: the encoder variant that answered.
        bundle_version: the bundle version that answered.
        timings_ms: the service's own timings (``encode``, ``search``, ``total``), ms.
        mode: the mode the search ran in (``dense``, ``lexical``, ``hybrid``); ``None`` from a
            service that does not say.
    """

    ids: list[str]
    scores: list[float]
    variant: str | None
    bundle_version: str | None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    mode: str | None = None


@dataclass(frozen=True)
class ScoreResponse:
    """A ``POST /v1/score`` answer: one similarity per pair, in request order."""

    scores: list[float]
    variant: str | None
    bundle_version: str | None


def search_body(
    query: JsonObject,
    collection: str,
    k: int,
    *,
    offset: int = 0,
    exclude: Sequence[str] | None = None,
    variant: str | None = None,
    include_metadata: bool = True,
    fields: Mapping[str, Any] | None = None,
) -> JsonObject:
    """The body of one search (``POST /v1/search``, or one entry of a bulk search).

    Args:
        query: a query side (:mod:`benchmarks.drivers.query_sides`).
        collection: the target collection (``"captions"``, ``"images"``).
        k: number of results (1..the service's ``max_k``).
        offset: skip this many best results (the page holds ranks ``offset+1..offset+k``).
        exclude: ids removed from the ranking.
        variant: encoder variant; the service default when ``None``.
        include_metadata: ask for each hit's metadata; evaluation replays turn it off since
            they need ids and scores only (a k=1000 answer shrinks several-fold).
        fields: more fields of the search, as the API names them (``mode``, ``lexical``,
            ``fusion``, ``window``, ``rerank``, ``search_params``); none of the above.
    """
    body: JsonObject = {"query": query, "collection": collection, "k": k}
    if offset:
        body["offset"] = offset
    if not include_metadata:
        body["include_metadata"] = False
    if exclude:
        body["exclude"] = list(exclude)
    if variant is not None:
        body["variant"] = variant
    if fields:
        clash = sorted(set(fields) & {*body, "offset", "exclude", "variant", "include_metadata"})
        if clash:
            raise ValueError(f"search fields {clash} are set by their own arguments")
        body.update(fields)
    return body


def _bad_response(
    message: str, method: str, url: str, *, status: int = 200, request_id: str | None = None
) -> crisscross_client.BadResponseError:
    """The client's error for a 2xx answer the harness cannot read."""
    return crisscross_client.BadResponseError(
        message,
        status=status,
        code="bad_response",
        request_id=request_id,
        method=method,
        url=url,
    )


def _search_response(answer: JsonObject) -> SearchResponse:
    results = answer.get("results", [])
    return SearchResponse(
        ids=[str(result["id"]) for result in results],
        scores=[float(result["score"]) for result in results],
        variant=answer.get("variant"),
        bundle_version=answer.get("bundle_version"),
        timings_ms=answer.get("timings_ms") or {},
        mode=answer.get("mode"),
    )


class CrisscrossClient:
    """Async client of one Crisscross service (a :class:`crisscross_client.AsyncClient` with
    the harness's retry rule and lenient answers).

    Use as ``async with CrisscrossClient(url) as client: ...``.

    Args:
        base_url: the service root, e.g. ``http://127.0.0.1:8000``.
        timeout_s: per-request timeout, seconds.
        max_connections: size of the keep-alive connection pool (≥ the concurrency used).
        retry: the client's retry policy (default: :func:`retry_policy`'s).
        transport: an httpx transport to use instead of the network (tests pass
            :class:`httpx.MockTransport`).
        api_key: an API key for a service that requires one.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 60.0,
        max_connections: int = 16,
        retry: crisscross_client.RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        api_key: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or retry_policy()
        self.api = crisscross_client.AsyncClient(
            self.base_url,
            api_key=api_key,
            timeout=timeout_s,
            retry=self.retry,
            max_connections=max_connections,
            transport=transport,
        )
        """The project's client underneath (typed methods of every public route)."""

    async def __aenter__(self) -> CrisscrossClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.api.aclose()

    async def _request(
        self, method: str, path: str, body: JsonObject | None = None, *, retry: bool = True
    ) -> httpx.Response:
        """The 2xx answer of one request (every request the harness makes may be repeated:
        reads, searches, upserts and deletes by id).

        Raises:
            crisscross_client.CrisscrossError: a non-2xx answer (after retries), or no answer.
        """
        return await self.api.request(method, path, json=body, idempotent=True, retry=retry)

    async def request_json(
        self, method: str, path: str, body: JsonObject | None = None, *, retry: bool = True
    ) -> JsonObject:
        """Send one request and return its JSON object body.

        Args:
            method: HTTP method.
            path: path under the base URL, e.g. ``/v1/search``.
            body: JSON body, if any.
            retry: whether a 503 with ``Retry-After`` is retried (per :attr:`retry`).

        Raises:
            crisscross_client.CrisscrossError: a non-2xx answer (after retries), no answer, or
                (:class:`~crisscross_client.BadResponseError`) a 2xx body that is not a JSON
                object.
        """
        response = await self._request(method, path, body, retry=retry)
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise _bad_response(
                f"expected a JSON object, got {response.text[:200]!r}",
                method,
                str(response.request.url),
                status=response.status_code,
                request_id=response.headers.get("x-request-id"),
            )
        return parsed

    async def metrics_text(self) -> str:
        """The Prometheus exposition of ``GET /metrics``.

        Raises:
            crisscross_client.CrisscrossError: a non-2xx answer, or no answer.
        """
        return (await self._request("GET", "/metrics", retry=False)).text

    async def readyz(self) -> bool:
        """Whether ``GET /readyz`` answers 200 now (connection errors count as not ready)."""
        try:
            await self.api.request("GET", "/readyz", retry=False)
        except crisscross_client.CrisscrossError:
            return False
        info = self.api.last_response
        return info is not None and info.status == 200

    async def wait_ready(self, timeout_s: float = 120.0, interval_s: float = 0.5) -> None:
        """Poll ``GET /readyz`` until it answers 200.

        Raises:
            ServiceNotReadyError: not ready after ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            if await self.readyz():
                return
            if time.monotonic() >= deadline:
                raise ServiceNotReadyError(
                    f"{self.base_url}/readyz did not answer 200 within {timeout_s:.0f}s"
                )
            await asyncio.sleep(interval_s)

    async def collections(self) -> list[JsonObject]:
        """``GET /v1/collections``: one object per searchable collection (name, count, ...):
        the bundles' collections, then the live ones (marked ``"live": true``)."""
        body = await self.request_json("GET", "/v1/collections")
        live = [{**entry, "live": True} for entry in body.get("live", [])]
        return [*body.get("collections", []), *live]

    async def variants(self) -> list[JsonObject]:
        """``GET /v1/variants``: one object per loaded encoder variant."""
        body = await self.request_json("GET", "/v1/variants")
        return list(body.get("variants", []))

    async def search(
        self,
        query: JsonObject,
        collection: str,
        k: int,
        *,
        exclude: Sequence[str] | None = None,
        variant: str | None = None,
        retry: bool = True,
        include_metadata: bool = True,
        fields: Mapping[str, Any] | None = None,
    ) -> SearchResponse:
        """``POST /v1/search`` of one :func:`search_body` (same arguments).

        Args:
            retry: whether 503 + ``Retry-After`` is retried.
        """
        body = search_body(
            query,
            collection,
            k,
            exclude=exclude,
            variant=variant,
            include_metadata=include_metadata,
            fields=fields,
        )
        return _search_response(await self.request_json("POST", "/v1/search", body, retry=retry))

    async def search_bulk(
        self, searches: Sequence[JsonObject]
    ) -> list[SearchResponse | crisscross_client.CrisscrossError]:
        """``POST /v1/search/bulk``: many :func:`search_body` searches in one request.

        Returns:
            One entry per search, in request order: its answer, or the client's error of that
            search alone (the class of its status, and its error body).

        Raises:
            crisscross_client.CrisscrossError: the request as a whole failed (as
                :meth:`request_json`), or the answer does not hold one response per search.
        """
        url = f"{self.base_url}/v1/search/bulk"
        answer = await self.request_json("POST", "/v1/search/bulk", {"searches": list(searches)})
        responses = answer.get("responses")
        if not isinstance(responses, list) or len(responses) != len(searches):
            message = f"asked {len(searches)} searches, got {responses!r:.200}"
            raise _bad_response(message, "POST", url)
        entries: list[SearchResponse | crisscross_client.CrisscrossError] = []
        for response in responses:
            if response.get("status") == 200:
                entries.append(_search_response(response["result"]))
                continue
            error = response.get("error") or {}
            status = int(response.get("status") or 0)
            code = error.get("code")
            failure = error_class(status, code)(
                str(error.get("message")), status=status, code=code, method="POST", url=url
            )
            entries.append(failure)
        return entries

    async def score(
        self, pairs: Sequence[tuple[JsonObject, JsonObject]], *, variant: str | None = None
    ) -> ScoreResponse:
        """``POST /v1/score`` for ``(left, right)`` pair sides (≤ the service's
        ``max_score_pairs`` per call).

        Raises:
            crisscross_client.CrisscrossError: as :meth:`request_json`, or the answer's score
                count is wrong.
        """
        body: JsonObject = {"pairs": [{"left": left, "right": right} for left, right in pairs]}
        if variant is not None:
            body["variant"] = variant
        answer = await self.request_json("POST", "/v1/score", body)
        scores = [float(value) for value in answer.get("scores", [])]
        if len(scores) != len(pairs):
            message = f"asked for {len(pairs)} scores, got {len(scores)}"
            raise _bad_response(message, "POST", f"{self.base_url}/v1/score")
        return ScoreResponse(
            scores=scores,
            variant=answer.get("variant"),
            bundle_version=answer.get("bundle_version"),
        )

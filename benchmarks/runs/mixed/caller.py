"""The mixed run's measured requests: one API client, each answer classified, 503s retried.

A ``503`` that carries ``Retry-After`` is retried by the client after the wait it names (capped
by :func:`~benchmarks.drivers.http_client.retry_policy`) and counted in :attr:`Outcome.retries`
(the client's record of the exchange), not as a failure. Any other non-2xx answer, a 2xx answer
that is not a JSON object, a timeout or a broken connection ends the request: its
:attr:`Outcome.status` says which, and the run counts it as an error. Bodies are serialised
before the clock starts and sent as they are. (The harness's
:class:`~benchmarks.drivers.http_client.CrisscrossClient` retries the same way but raises on the
rest; the run uses it off the clock.)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

import crisscross_client
from benchmarks.drivers.http_client import JsonObject, retry_policy

JSON_HEADERS = {"content-type": "application/json"}


@dataclass(frozen=True)
class Outcome:
    """How one request ended.

    Attributes:
        status: the final HTTP status as text (``"200"``, ``"404"``), or ``"timeout"``,
            ``"connection"`` or ``"bad_response"`` (a 2xx whose body is not a JSON object).
        body: the JSON object of a 2xx answer, else ``None``.
        latency_ms: from the first send to the final answer, retry waits included.
        retries: 503 + ``Retry-After`` answers retried.
        answered_at: ``time.monotonic()`` when the final answer arrived.
    """

    status: str
    body: JsonObject | None
    latency_ms: float
    retries: int
    answered_at: float

    @property
    def ok(self) -> bool:
        """A 2xx answer with a JSON object body."""
        return self.body is not None


class Caller:
    """Sends the run's requests over one keep-alive pool; ``async with Caller(...) as caller``.

    Args:
        base_url: the service root.
        timeout_s: per-request timeout (each attempt).
        max_connections: the pool's size (at least the run's concurrency).
        retry: how many 503 + ``Retry-After`` answers a request retries, and the longest wait.
        transport: an httpx transport replacing the network (tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        max_connections: int,
        retry: crisscross_client.RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry or retry_policy()
        self._api = crisscross_client.AsyncClient(
            base_url,
            timeout=timeout_s,
            retry=self.retry,
            max_connections=max_connections,
            transport=transport,
        )

    async def __aenter__(self) -> Caller:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._api.aclose()

    async def post(self, path: str, body: bytes | JsonObject) -> Outcome:
        """``POST path`` with ``body`` (pre-serialised JSON bytes, or an object serialised
        now, before the clock starts)."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await self._send(path, content)

    async def _send(self, path: str, content: bytes) -> Outcome:
        started = time.perf_counter()
        try:
            # Every request of the run may be repeated (searches, gets, upserts and deletes by
            # id): a 503 + Retry-After is retried whatever the route.
            response = await self._api.request(
                "POST", path, content=content, headers=JSON_HEADERS, idempotent=True
            )
        except crisscross_client.ClientTimeoutError:
            return self._outcome("timeout", None, started, self._retries())
        except crisscross_client.ConnectionFailedError:
            return self._outcome("connection", None, started, self._retries())
        except crisscross_client.CrisscrossError as error:
            return self._outcome(str(error.status), None, started, self._retries())
        parsed = _json_object(response)
        status = str(response.status_code) if parsed is not None else "bad_response"
        return self._outcome(status, parsed, started, self._retries())

    def _retries(self) -> int:
        """The 503s the last request of this task retried."""
        info = self._api.last_response
        return 0 if info is None else info.retries

    @staticmethod
    def _outcome(status: str, body: JsonObject | None, started: float, retries: int) -> Outcome:
        return Outcome(
            status=status,
            body=body,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            retries=retries,
            answered_at=time.monotonic(),
        )


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        parsed = response.json()
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None

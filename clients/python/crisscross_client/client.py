"""The synchronous client: :class:`Client`.

``with Client("http://127.0.0.1:8000", api_key="...") as client: client.search(...)``. Every
method sends one request (or, for long inputs, several that fit the service's limits), retries
what :class:`~crisscross_client.RetryPolicy` allows, and returns the answer as a model of
:mod:`crisscross_client.models`, or raises a :class:`~crisscross_client.CrisscrossError`.
:class:`~crisscross_client.AsyncClient` has the same methods, awaited.

The methods are written once, in :mod:`crisscross_client._methods`; this class only sends
(:meth:`Client._run`) and sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

from crisscross_client._calls import Call, Plan
from crisscross_client._endpoint import Outcome, Steps
from crisscross_client._methods import ClientMethods
from crisscross_client._settings import DEFAULT_BASE_URL, ClientSettings
from crisscross_client._transport import RetryPolicy
from crisscross_client.bulk import ServiceLimits

T = TypeVar("T")


class Client(ClientMethods):
    """A synchronous client of one Crisscross service.

    Args:
        base_url: the service root.
        api_key: a read, write or admin key, sent as ``Authorization: Bearer <key>``.
        timeout: seconds per request attempt.
        max_retries: retries after the first attempt on connection errors, 408, 429, 502,
            503 and 504 (writes that may have been applied only when idempotent).
        retry: the whole retry policy (overrides ``max_retries``).
        limits: the service's per-request limits (default: the service's defaults; see
            :meth:`load_limits`).
        headers: more headers for every request.
        max_connections: the connection pool's size.
        transport: an httpx transport instead of the network (tests: ``httpx.MockTransport``).
        sleep: how to wait between retries (tests pass a recorder).
    """

    _blocking: Literal[True] = True
    """Whether the methods return their results (not coroutines): how the type checker tells
    the two clients' methods apart (:class:`crisscross_client._endpoint.Endpoint`)."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        *,
        retry: RetryPolicy | None = None,
        limits: ServiceLimits | None = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 10,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._settings = ClientSettings(
            base_url, api_key, timeout, max_retries, retry, limits, headers
        )
        self._sleep = sleep
        self._http = httpx.Client(transport=transport, **self._settings.pool(max_connections))

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _run(self, plan: Plan[Any, T]) -> T:
        """Send ``plan``'s requests (retried as the policy allows) and return its result."""
        steps = Steps(self._settings, plan)
        step = steps.first()
        while step is not None:
            if isinstance(step, Call):
                step = steps.next(self._attempt(step))
            else:
                self._sleep(step)
                step = steps.next(None)
        return steps.result

    def _attempt(self, call: Call[Any]) -> Outcome:
        try:
            return self._http.request(**call.http_arguments())
        except httpx.TransportError as error:
            return error

"""What the sync and the async client share: their settings, their headers, the record of
the last answer, and turning a failed exchange into an exception."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from crisscross_client._calls import Call
from crisscross_client._transport import RetryPolicy
from crisscross_client.bulk import ServiceLimits
from crisscross_client.errors import ClientTimeoutError, ConnectionFailedError, CrisscrossError
from crisscross_client.response_info import LastResponse, ResponseInfo

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
USER_AGENT = "crisscross-client/0.1"


class ClientSettings:
    """A client's settings.

    Args:
        base_url: the service root.
        api_key: sent as ``Authorization: Bearer <key>`` (a read, write or admin key).
        timeout: seconds per request (each attempt).
        max_retries: retries after the first attempt (see :class:`RetryPolicy`).
        retry: the whole retry policy (overrides ``max_retries``).
        limits: the service's per-request limits used to cut long inputs.
        headers: more headers sent with every request.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        retry: RetryPolicy | None,
        limits: ServiceLimits | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.limits = limits or ServiceLimits()
        self.headers = {"user-agent": USER_AGENT, **(headers or {})}
        if api_key is not None:
            self.headers["authorization"] = f"Bearer {api_key}"
        self.last = LastResponse()

    def pool(self, max_connections: int) -> dict[str, Any]:
        """The arguments of ``httpx.Client`` (or ``httpx.AsyncClient``) for these settings and
        a pool of ``max_connections``."""
        return {
            "base_url": self.base_url,
            "headers": self.headers,
            "timeout": httpx.Timeout(self.timeout),
            "limits": httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        }

    def record(
        self,
        call: Call[Any],
        response: httpx.Response | None,
        elapsed_s: float,
        attempts: int,
    ) -> None:
        """Keep the final exchange of ``call`` as the current context's last answer."""
        self.last.set(
            ResponseInfo(
                method=call.method,
                url=f"{self.base_url}{call.path}",
                status=None if response is None else response.status_code,
                headers=httpx.Headers() if response is None else response.headers,
                elapsed_s=elapsed_s,
                attempts=attempts,
                response=response,
            )
        )

    def failure(self, call: Call[Any], error: httpx.TransportError) -> CrisscrossError:
        """The exception for a request that got no answer."""
        kind = (
            ClientTimeoutError
            if isinstance(error, httpx.TimeoutException)
            else ConnectionFailedError
        )
        return kind(
            f"no answer: {type(error).__name__}: {error}",
            method=call.method,
            url=f"{self.base_url}{call.path}",
        )

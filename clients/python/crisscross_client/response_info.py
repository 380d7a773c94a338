"""What the client saw of the last answer: status, headers, latency, attempts.

Each client keeps the last exchange of the *current* thread or asyncio task (a context
variable), so concurrent calls of one client do not overwrite each other's record.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class ResponseInfo:
    """One call's final exchange.

    Attributes:
        method, url: the request.
        status: the final answer's status (``None``: no answer came).
        headers: the final answer's headers (``x-request-id``, ``x-timing-*``, ``Retry-After``).
        elapsed_s: from the first send to the final answer, retry waits included.
        attempts: requests sent (the first, its retries, and the one sent on to the leader
            after a 421 ``not_leader``); ``url`` is where the last went.
        response: the final ``httpx.Response`` (``None``: no answer came).
    """

    method: str
    url: str
    status: int | None
    headers: httpx.Headers
    elapsed_s: float
    attempts: int
    response: httpx.Response | None

    @property
    def retries(self) -> int:
        """Requests sent after the first."""
        return self.attempts - 1

    @property
    def request_id(self) -> str | None:
        """The service's ``x-request-id``."""
        value: str | None = self.headers.get("x-request-id")
        return value


class LastResponse:
    """The last :class:`ResponseInfo` per thread or task."""

    def __init__(self) -> None:
        self._value: ContextVar[ResponseInfo | None] = ContextVar("crisscross_last_response")
        self._value.set(None)

    def get(self) -> ResponseInfo | None:
        """The current context's last exchange, if any."""
        return self._value.get(None)

    def set(self, info: ResponseInfo) -> None:
        """Record ``info`` for the current context."""
        self._value.set(info)

"""Calls of the httpx API client behind the drivers' one interface,
:class:`~benchmarks.drivers.sender.Sender`: the closed-loop latency sections of the quality and
compare runs send through it (the answer decoded in full, as an app would)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import httpx

import crisscross_client
from benchmarks.drivers.sender import TransportFailure

logger = logging.getLogger(__name__)

FAILURES_LOGGED = 3
"""Failed requests of one closed-loop level logged (as warnings) before the rest are counted
silently."""


class _Failures:
    """The count of one level's failed requests, shared by its senders, for logging."""

    def __init__(self) -> None:
        self.count = 0

    def log(self, index: int, error: Exception) -> None:
        self.count += 1
        if self.count <= FAILURES_LOGGED:
            logger.warning("request %d failed: %s", index, error)


class ClientSender:
    """A :class:`~benchmarks.drivers.sender.Sender` over a :class:`CrisscrossClient` call.

    ``call(index)`` makes one API request and decodes its answer in full. The request is
    never retried (a latency driver's retry would hide the error and stretch the latency):
    the call passes ``retry=False``, and the harness's client policy never retries a request
    that got no answer. A 2xx answer is reported as status 200; a non-2xx answer as its status
    (the client's :class:`~crisscross_client.CrisscrossError`); a 2xx body that cannot be
    decoded, and a request that got no answer, as
    :class:`~benchmarks.drivers.sender.TransportFailure` (``protocol``, ``timeout``,
    ``connect``, ``connection``). Make the senders of one level with :func:`client_senders`.
    """

    def __init__(self, call: Callable[[int], Awaitable[object]], failures: _Failures) -> None:
        self._call = call
        self._failures = failures

    async def send(self, index: int) -> int:
        """Make call ``index``; its HTTP status (200 for any 2xx answer)."""
        try:
            await self._call(index)
        except crisscross_client.ConnectionFailedError as error:
            self._failures.log(index, error)
            kind = _failure_kind(error.__cause__) if error.__cause__ is not None else "connection"
            raise TransportFailure(kind, str(error)) from error
        except crisscross_client.CrisscrossError as error:
            self._failures.log(index, error)
            if error.status is None or 200 <= error.status < 300:
                raise TransportFailure("protocol", str(error)) from error
            return error.status
        except httpx.HTTPError as error:
            self._failures.log(index, error)
            raise TransportFailure(_failure_kind(error), str(error)) from error
        return 200

    async def aclose(self) -> None:
        """Nothing to close: the client belongs to the caller."""


def client_senders(call: Callable[[int], Awaitable[object]], count: int) -> list[ClientSender]:
    """``count`` senders of one level over the same call (one shared client); the first
    :data:`FAILURES_LOGGED` failures among them are logged."""
    failures = _Failures()
    return [ClientSender(call, failures) for _ in range(count)]


def _failure_kind(error: BaseException) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    if isinstance(error, httpx.ConnectError):
        return "connect"
    if isinstance(error, httpx.TransportError):
        return "connection"
    return "protocol"

"""The one interface every driver sends through: a :class:`Sender` per connection.

A sender sends request number ``index`` (the caller maps indices to payloads), waits for the
complete answer and returns its HTTP status; a request that got no complete HTTP answer raises
:class:`TransportFailure` with a short ``kind`` that reports count by. Two implementations:

- :class:`benchmarks.drivers.raw_http.RawSender`: one raw keep-alive HTTP/1.1 connection and
  pre-serialised requests, the answer framed but not decoded (the load run: a light client);
- :class:`benchmarks.drivers.client_sender.ClientSender`: one call of the API client, the
  answer decoded in full (the quality and compare runs' latency sections).

The closed-loop (:mod:`benchmarks.drivers.closed_loop`) and open-loop
(:mod:`benchmarks.drivers.open_loop`) drivers take senders, whichever client is behind them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

TRANSPORT_KINDS = ("connect", "connection", "timeout", "protocol")
"""The ``kind`` values of :class:`TransportFailure`."""


class TransportFailure(Exception):  # noqa: N818 - a kind of outcome, counted by kind
    """A request got no complete HTTP answer.

    Attributes:
        kind: ``connect`` (could not open the TCP connection), ``connection`` (reset or closed
            mid-exchange), ``timeout`` (no complete answer within the request timeout) or
            ``protocol`` (the bytes were not an HTTP/1.x answer, or not the answer expected).
    """

    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        super().__init__(f"{kind}: {detail}")


class Sender(Protocol):
    """Sends request number ``index`` on one connection and returns the HTTP status.

    Raises :class:`TransportFailure` when no complete answer came.
    """

    async def send(self, index: int) -> int:
        """Send request ``index`` (the caller maps indices to payloads) and await the answer."""
        ...

    async def aclose(self) -> None:
        """Close the underlying connection."""
        ...


SenderFactory = Callable[[], Sender]

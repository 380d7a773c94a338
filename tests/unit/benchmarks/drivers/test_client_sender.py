"""API calls behind the drivers' interface: statuses, failure kinds, the shared failure log."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from benchmarks.drivers.client_sender import FAILURES_LOGGED, client_senders
from benchmarks.drivers.sender import TransportFailure
from crisscross_client import BadResponseError, ClientTimeoutError, ConnectionFailedError
from crisscross_client.errors import OverloadedError


def test_client_senders_report_statuses_and_failures(caplog: pytest.LogCaptureFixture) -> None:
    async def call(index: int) -> object:
        if index == 1:
            raise OverloadedError(
                "full", status=503, code="overloaded", method="POST", url="/v1/search"
            )
        if index == 2:
            raise BadResponseError("not JSON", status=200, code="bad_response")
        if index == 3:
            raise ClientTimeoutError("no answer") from httpx.ReadTimeout("slow")
        if index == 4:
            raise ConnectionFailedError("no answer") from httpx.ConnectError("refused")
        if index == 5:
            raise ConnectionFailedError("no answer") from httpx.RemoteProtocolError("reset")
        if index == 6:
            raise httpx.DecodingError("garbled")
        return None

    first, second = client_senders(call, 2)
    kinds: dict[int, object] = {}

    async def scenario() -> None:
        for index in range(7):
            try:
                kinds[index] = await (first if index % 2 else second).send(index)
            except TransportFailure as failure:
                kinds[index] = failure.kind
        await first.aclose()

    asyncio.run(scenario())
    assert kinds == {
        0: 200,
        1: 503,
        2: "protocol",
        3: "timeout",
        4: "connect",
        5: "connection",
        6: "protocol",
    }
    # the senders of one level share the failure count: three are logged
    assert sum("failed" in record.message for record in caplog.records) == FAILURES_LOGGED

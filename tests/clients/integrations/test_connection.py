"""The clients an integration calls: the async twin of a sync client has its settings (acks,
read-your-writes) and shares the sequence numbers it wrote, so a write through a store's
coroutine is read back through its sync methods, and the other way round."""

from __future__ import annotations

import asyncio

import httpx

import crisscross_client as cc
from crisscross_client.integrations._connection import async_twin


def _upserted(_request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"seq": 4, "upserted": 1})


def test_an_async_twin_shares_the_sync_clients_writes_and_options() -> None:
    transport = httpx.MockTransport(_upserted)
    with cc.Client("http://svc", acks="all", transport=transport) as client:
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        twin = async_twin(client)
        assert (twin.acks, twin.read_your_writes) == ("all", True)
        assert twin.written_seqs == {"v": 4}
        twin._settings.written.saw("v", 10)  # as a write through the twin would
        assert client.written_seqs == {"v": 10}
        asyncio.run(twin.aclose())
    with cc.Client("http://svc", read_your_writes=False, transport=transport) as client:
        twin = async_twin(client)
        assert (twin.acks, twin.read_your_writes) == (None, False)
        asyncio.run(twin.aclose())

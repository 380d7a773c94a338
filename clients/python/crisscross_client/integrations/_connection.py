"""The clients an integration calls: one synchronous :class:`~crisscross_client.Client` (given,
or made and owned), and for the coroutine methods an :class:`~crisscross_client.AsyncClient`.

An integration's coroutines await an ``AsyncClient``, never the sync client in the event loop.
A given ``async_client`` is used as it is (its connections pooled, its event loop the caller's).
Without one, each coroutine call opens an ``AsyncClient`` with the sync client's settings (root,
key, headers, timeout, retries, limits, acks, read-your-writes and the sequence numbers written)
and closes it before it returns: an ``httpx`` pool
belongs to the event loop it first ran in, and a store or embeddings object may be awaited from
several loops (``asyncio.run`` twice, one loop per test). Opening one costs well under a
millisecond (the TLS context is made once per process) plus a new connection per call; a
long-lived async application passes its own ``async_client`` to keep connections.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx

from crisscross_client.async_client import AsyncClient
from crisscross_client.client import Client


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verification context (certifi's CAs), made once: making it is most of
    the cost of opening a client."""
    return httpx.create_ssl_context()


def new_client(base_url: str | None, api_key: str | None) -> Client:
    """A new ``Client`` of ``base_url`` (None: the client's default) and ``api_key``, cheap to
    open (the process's TLS context); the caller closes it."""
    transport = httpx.HTTPTransport(verify=_tls_context())
    if base_url is None:
        return Client(api_key=api_key, transport=transport)
    return Client(base_url, api_key, transport=transport)


def new_async_client(base_url: str | None, api_key: str | None) -> AsyncClient:
    """A new ``AsyncClient`` of ``base_url`` (None: the client's default) and ``api_key``
    (the caller closes it)."""
    transport = httpx.AsyncHTTPTransport(verify=_tls_context())
    if base_url is None:
        return AsyncClient(api_key=api_key, transport=transport)
    return AsyncClient(base_url, api_key, transport=transport)


def async_twin(client: Client) -> AsyncClient:
    """A new ``AsyncClient`` with ``client``'s settings (the caller closes it), sharing the
    sequence numbers it wrote: a write through either is read back through the other
    (read-your-writes)."""
    settings = client._settings
    headers = {name: value for name, value in settings.headers.items() if name != "user-agent"}
    twin = AsyncClient(
        client.base_url,
        timeout=settings.timeout,
        retry=client.retry_policy,
        limits=client.limits,
        headers=headers,
        acks=settings.acks,
        read_your_writes=settings.read_your_writes,
        transport=httpx.AsyncHTTPTransport(verify=_tls_context()),
    )
    twin._settings.written = settings.written
    return twin


@asynccontextmanager
async def async_client_for(
    client: Client, shared: AsyncClient | None
) -> AsyncIterator[AsyncClient]:
    """``shared`` where given, else an ``AsyncClient`` of ``client``'s settings for this block
    (closed when it ends)."""
    if shared is not None:
        yield shared
        return
    async with async_twin(client) as made:
        yield made


class Connection:
    """A store's or embeddings' clients.

    Args:
        base_url, api_key: the service, when no ``client`` is given (``base_url`` None: the
            client's own default).
        client: a sync client to share (left open by :meth:`close`); else one is made.
        async_client: an async client to share for the coroutine methods; else one per call.
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
    ) -> None:
        self._owns_client = client is None
        if client is None:
            client = Client(api_key=api_key) if base_url is None else Client(base_url, api_key)
        self.client = client
        self.async_client = async_client

    @property
    def base_url(self) -> str:
        """The service root."""
        return self.client.base_url

    def aclient(self) -> AbstractAsyncContextManager[AsyncClient]:
        """The shared async client, else one of this call (closed when the block ends)."""
        return async_client_for(self.client, self.async_client)

    def close(self) -> None:
        """Close the sync client if it was made here (given clients are their owners')."""
        if self._owns_client:
            self.client.close()

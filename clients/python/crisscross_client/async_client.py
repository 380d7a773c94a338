"""The asyncio client: :class:`AsyncClient`, the methods of
:class:`~crisscross_client.Client`, awaited.

``async with AsyncClient("http://127.0.0.1:8000", api_key="...") as client:
await client.search(...)``. Its :attr:`~AsyncClient.last_response` is kept per asyncio task.

The methods are written once, in :mod:`crisscross_client._methods`; this class only sends
(:meth:`AsyncClient._run`) and sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

from crisscross_client import models as m
from crisscross_client._calls import Call, Plan
from crisscross_client._endpoint import Flight, Job, Outcome, Steps
from crisscross_client._methods import ClientMethods
from crisscross_client._settings import ClientSettings
from crisscross_client._transport import RetryPolicy
from crisscross_client.bulk import ServiceLimits

T = TypeVar("T")


class AsyncClient(ClientMethods):
    """An asyncio client of one Crisscross service.

    Args:
        base_url: the service root (default: the environment variable ``CRISSCROSS_URL``,
            else ``http://127.0.0.1:8000``; an empty or malformed one is a ``ValueError``).
        api_key: a read, write or admin key, sent as ``Authorization: Bearer <key>`` (default:
            the environment variable ``CRISSCROSS_API_KEY``, if set and not empty).
        timeout: seconds per request attempt (a method's own ``timeout=`` overrides it for
            that call; :meth:`with_options` makes a copy with another, sharing the pool).
        max_retries: retries after the first attempt on connection errors, 408, 429, 502,
            503 and 504 (writes that may have been applied only when idempotent: item writes
            carry an ``Idempotency-Key``, the same on every retry, so they are).
        retry: the whole retry policy (overrides ``max_retries``).
        limits: the service's per-request limits (default: the service's defaults; see
            :meth:`load_limits`).
        headers: more headers for every request.
        acks: how many replicas hold each item write before it is answered (``leader``,
            ``majority``, ``all``), for writes that name none (default: the environment
            variable ``CRISSCROSS_ACKS``, if set and not empty; else the collection's policy,
            else the server's default_acks).
        read_your_writes: reads of a live collection this client wrote ask for at least its
            last write's sequence number (``X-Min-Seq``), so a follower answering them sees
            the client's writes; False: reads send none.
        max_connections: the connection pool's size.
        transport: an httpx transport instead of the network (tests: ``httpx.MockTransport``).
        sleep: how to wait between retries (tests pass a recorder).
    """

    _blocking: Literal[False] = False
    """Whether the methods return their results (not coroutines): how the type checker tells
    the two clients' methods apart (:class:`crisscross_client._endpoint.Endpoint`)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        *,
        retry: RetryPolicy | None = None,
        limits: ServiceLimits | None = None,
        headers: Mapping[str, str] | None = None,
        acks: m.Acks | None = None,
        read_your_writes: bool = True,
        max_connections: int = 10,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._settings = ClientSettings(
            base_url,
            api_key,
            timeout,
            max_retries,
            retry,
            limits,
            headers,
            acks=acks,
            read_your_writes=read_your_writes,
        )
        self._sleep = sleep
        self._http = httpx.AsyncClient(transport=transport, **self._settings.pool(max_connections))

    async def __aenter__(self) -> AsyncClient:
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
        await self._http.aclose()

    async def close(self) -> None:
        """Close the connection pool (the same as :meth:`aclose`)."""
        await self._http.aclose()

    async def iter_items(
        self,
        collection: str,
        *,
        filter: m.FilterInput | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_vectors: bool | None = None,
        include_metadata: bool | None = None,
        variant: str | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[m.ScrolledItem]:
        """Every item ``filter`` keeps, in row order: :meth:`scroll_items` page after page
        (``limit`` items each), following each page's cursor until the last
        (``async for item in client.iter_items(...)``)."""
        while True:
            page = await self.scroll_items(
                collection,
                filter=filter,
                limit=limit,
                cursor=cursor,
                include_vectors=include_vectors,
                include_metadata=include_metadata,
                variant=variant,
                timeout=timeout,
            )
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def _run(self, plan: Plan[Any, T]) -> T:
        """Send ``plan``'s requests (retried as the policy allows) and return its result."""
        if plan.parallelism > 1 and len(plan.calls) > 1:
            return await self._run_side_by_side(plan)
        steps = Steps(self._settings, plan)
        step = steps.first()
        while step is not None:
            if isinstance(step, Call):
                step = steps.next(await self._attempt(step))
            else:
                await self._sleep(step)
                step = steps.next(None)
        return steps.result

    async def _attempt(self, call: Call[Any]) -> Outcome:
        try:
            return await self._http.request(**call.http_arguments())
        except httpx.TransportError as error:
            return error

    async def _run_side_by_side(self, plan: Plan[Any, T]) -> T:
        """Send ``plan``'s calls ``plan.parallelism`` at a time, each in a task of its own
        (:class:`~crisscross_client._endpoint.Flight` keeps the books). Cancelled, it cancels
        the calls in flight."""
        flight = Flight(plan)
        running: set[asyncio.Task[Job[Any]]] = set()
        try:
            while True:
                while len(running) < flight.parallelism and (job := flight.next()) is not None:
                    running.add(asyncio.ensure_future(self._run_job(job)))
                if not running:
                    break
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    flight.finished(task.result(), self._settings)
        finally:
            for task in running:
                task.cancel()
        return flight.result()

    async def _run_job(self, job: Job[Any]) -> Job[Any]:
        """Run one call of a flight (in a task of its own)."""
        try:
            job.answer = await self._run(job.plan)
        except Exception as error:
            job.error = error
        job.info = self._settings.last.get()
        return job

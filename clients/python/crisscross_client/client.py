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
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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


class Client(ClientMethods):
    """A synchronous client of one Crisscross service.

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

    _blocking: Literal[True] = True
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
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
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

    def iter_items(
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
    ) -> Iterator[m.ScrolledItem]:
        """Every item ``filter`` keeps, in row order: :meth:`scroll_items` page after page
        (``limit`` items each), following each page's cursor until the last."""
        while True:
            page = self.scroll_items(
                collection,
                filter=filter,
                limit=limit,
                cursor=cursor,
                include_vectors=include_vectors,
                include_metadata=include_metadata,
                variant=variant,
                timeout=timeout,
            )
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _run(self, plan: Plan[Any, T]) -> T:
        """Send ``plan``'s requests (retried as the policy allows) and return its result."""
        if plan.parallelism > 1 and len(plan.calls) > 1:
            return self._run_side_by_side(plan)
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

    def _run_side_by_side(self, plan: Plan[Any, T]) -> T:
        """Send ``plan``'s calls ``plan.parallelism`` at a time, each in a thread of its own
        (:class:`~crisscross_client._endpoint.Flight` keeps the books)."""
        flight = Flight(plan)
        running: set[Future[Job[Any]]] = set()
        with ThreadPoolExecutor(flight.parallelism, thread_name_prefix="crisscross") as pool:
            while True:
                while len(running) < flight.parallelism and (job := flight.next()) is not None:
                    running.add(pool.submit(self._run_job, job))
                if not running:
                    break
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    flight.finished(future.result(), self._settings)
        return flight.result()

    def _run_job(self, job: Job[Any]) -> Job[Any]:
        """Run one call of a flight (in a worker thread)."""
        try:
            job.answer = self._run(job.plan)
        except Exception as error:
            job.error = error
        job.info = self._settings.last.get()
        return job

"""Micro-batching of encoder calls across concurrent requests, with admission control.

One :class:`Batcher` serves one encoder tower of one variant. Requests ``submit`` their inputs
(texts or decoded images) and await their rows; each of the batcher's ``workers`` threads
gathers queued requests into one encoder call of at most ``max_batch_size`` inputs — waiting up
to ``max_wait_s`` for more after taking the first — and runs it, off the event loop. One call
for many inputs costs less than one call each (on 2 CPU cores, one-text /v1/embed requests at
concurrency 16 went from 99 to 126 requests/s with batching on; a GPU gains far more), and a
fixed, small number of threads per encoder keeps concurrent requests from oversubscribing the
cores; a lone request pays at most ``max_wait_s``.

Admission is decided before anything is queued:

- a full queue (``max_queue_depth`` waiting requests) refuses at once: 503 ``overloaded`` with
  ``Retry-After``, rather than letting latency grow without bound;
- a request whose deadline passes while it is still queued is dropped — its inputs are never
  encoded — and answered 503 ``overloaded``; once its batch has started it gets its rows.

If an encoder call fails, a batch of several requests is retried one request at a time, so an
input that breaks the encoder fails only the request that sent it. An input the encoder gives no
finite vector for (a text of zero tokens, say) fails its own request with :class:`InvalidQueryError`
(``text #i cannot be embedded``): this is the one place encoder rows are checked, so nothing
non-finite reaches faiss, a score or a JSON answer.

Times are ``time.perf_counter()`` seconds throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, cast, runtime_checkable

import numpy as np

from service.exceptions import InvalidQueryError, OverloadedError, ShuttingDownError
from service.metrics import ServiceMetrics

logger = logging.getLogger("crisscross.service")

Input = TypeVar("Input")

EncodeFunction = Callable[[Sequence[Input]], np.ndarray]
"""A blocking encoder call: ``n`` inputs → float32 ``[n, dim]``."""

FollowUp = Callable[[np.ndarray], object]
"""Blocking work on one request's rows (float32 ``[n, dim]``) that runs on the worker thread
right after its batch, e.g. the search of a text query: it saves the request a round trip
through the event loop and a second thread pool between encoding and searching.

A follow-up with a ``group`` attribute other than None (see :class:`GroupedFollowUp`) runs
together with the follow-ups of the same group in its batch, in one call of its
``run_together``: the searches of several requests over one collection become one matrix
product instead of one pass over the collection each."""


@runtime_checkable
class GroupedFollowUp(Protocol):
    """A :data:`FollowUp` that can run with others: those of a batch whose ``group`` is equal
    (and not None) run in one call of ``run_together(follow_ups, rows)``, which returns one
    outcome per follow-up, in order (an exception instance for one that failed)."""

    @property
    def group(self) -> Hashable | None: ...

    def __call__(self, rows: np.ndarray) -> object: ...

    def run_together(
        self, follow_ups: Sequence[GroupedFollowUp], rows: Sequence[np.ndarray]
    ) -> list[object]: ...


@dataclass(frozen=True)
class BatchLimits:
    """How a batcher gathers and admits work.

    ``max_batch_size``: most inputs per encoder call (a larger request runs alone, whole).
    ``max_wait_s``: seconds to wait for more requests after taking the first (0: never).
    ``max_queue_depth``: most requests waiting; one more is refused (503 overloaded).
    ``retry_after_s``: the ``Retry-After`` seconds of those 503s.
    ``workers``: threads that gather and run batches side by side, each calling the encoder.
    """

    max_batch_size: int
    max_wait_s: float
    max_queue_depth: int
    retry_after_s: int
    workers: int = 1


@dataclass(frozen=True)
class EncodeResult:
    """One request's share of a batch: its ``rows`` (float32 ``[n, dim]``, a view of the
    batch's output) and how long it queued and how long the shared encoder call took
    (seconds), with the batch's size in inputs and in requests."""

    rows: np.ndarray
    queue_s: float
    encode_s: float
    batch_inputs: int
    batch_requests: int
    follow_up: object = None
    """What the request's :data:`FollowUp` returned (None without one)."""
    follow_up_s: float = 0.0
    """Seconds the follow-up took."""
    started_s: float = 0.0
    """When the batch's encoder call started (``perf_counter``): the request queued from
    ``started_s - queue_s`` until then, and was encoded until ``started_s + encode_s``."""
    follow_up_started_s: float = 0.0
    """When the follow-up started (``perf_counter``; it took ``follow_up_s``)."""


@dataclass(eq=False)
class _Job(Generic[Input]):
    inputs: list[Input]
    future: asyncio.Future[EncodeResult]
    loop: asyncio.AbstractEventLoop
    enqueued_s: float
    deadline_s: float
    follow_up: FollowUp | None = None
    started: bool = False
    queue_s: float = field(default=0.0)

    def settle(self, outcome: EncodeResult | BaseException) -> None:
        """Hand the outcome to the request's event loop (called from the worker thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self.loop.call_soon_threadsafe(_settle, self.future, outcome)


def _settle(future: asyncio.Future[EncodeResult], outcome: EncodeResult | BaseException) -> None:
    if future.done():  # the request gave up meanwhile
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _follow(job: _Job[Any], result: EncodeResult) -> EncodeResult | BaseException:
    """``result`` with the job's follow-up run on its rows, or what the follow-up raised."""
    if job.follow_up is None or job.future.done():  # none, or its request gave up
        return result
    started = time.perf_counter()
    try:
        value = job.follow_up(result.rows)
    except Exception as error:
        return error
    return dataclasses.replace(
        result,
        follow_up=value,
        follow_up_s=time.perf_counter() - started,
        follow_up_started_s=started,
    )


def _group_of(job: _Job[Any]) -> Hashable | None:
    follow_up = job.follow_up
    if follow_up is None or job.future.done() or not isinstance(follow_up, GroupedFollowUp):
        return None
    return follow_up.group


def _follow_all(
    done: list[tuple[_Job[Any], EncodeResult]],
) -> list[tuple[_Job[Any], EncodeResult | BaseException]]:
    """Every job's follow-up run on its rows: grouped ones (:class:`GroupedFollowUp`) one call
    per group of two or more, the others alone; each request's follow-up time is its call's."""
    groups: dict[Hashable, list[int]] = {}
    for position, (job, _) in enumerate(done):
        key = _group_of(job)
        if key is not None:
            groups.setdefault(key, []).append(position)
    outcomes: list[EncodeResult | BaseException | None] = [None] * len(done)
    for positions in groups.values():
        if len(positions) < 2:
            continue
        follow_ups = [cast("GroupedFollowUp", done[p][0].follow_up) for p in positions]
        started = time.perf_counter()
        try:
            values: list[object] = follow_ups[0].run_together(
                follow_ups, [done[p][1].rows for p in positions]
            )
        except Exception as error:
            values = [error] * len(positions)
        elapsed = time.perf_counter() - started
        for position, value in zip(positions, values, strict=True):
            result = done[position][1]
            outcomes[position] = (
                value
                if isinstance(value, BaseException)
                else dataclasses.replace(
                    result, follow_up=value, follow_up_s=elapsed, follow_up_started_s=started
                )
            )
    return [
        (job, outcome if outcome is not None else _follow(job, result))
        for (job, result), outcome in zip(done, outcomes, strict=True)
    ]


def _retrieve(future: asyncio.Future[EncodeResult]) -> None:
    # A request that gave up (cancelled, timed out) leaves its future unawaited; reading the
    # exception here keeps asyncio from logging "exception was never retrieved".
    if not future.cancelled():
        future.exception()


class Batcher(Generic[Input]):
    """Gathers the inputs of concurrent requests into batched calls of ``encode``.

    ``variant`` and ``tower`` name the encoder in metrics and messages. ``limits.workers``
    threads, started by the first :meth:`submit` and stopped by :meth:`close`, each gather a
    batch and run ``encode``, so at most that many calls of one encoder overlap (``encode``
    must be thread-safe: onnxruntime sessions are) and none runs on an event loop. Requests
    may come from any event loop: each gets its outcome on its own.
    """

    def __init__(
        self,
        encode: EncodeFunction[Input],
        limits: BatchLimits,
        metrics: ServiceMetrics,
        *,
        variant: str,
        tower: str,
    ) -> None:
        self._encode = encode
        self.limits = limits
        self._metrics = metrics
        self.variant = variant
        self.tower = tower
        self._lock = threading.Condition()
        self._queue: deque[_Job[Input]] = deque()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._depth = metrics.encode_queue_depth.labels(variant, tower)
        self._depth.set(0)

    # -- requests (event loop) --------------------------------------------------------------------

    @property
    def queue_depth(self) -> int:
        """Requests waiting (not yet in a running batch)."""
        with self._lock:
            return len(self._queue)

    async def submit(
        self, inputs: Sequence[Input], deadline_s: float, follow_up: FollowUp | None = None
    ) -> EncodeResult:
        """Queue ``inputs`` (one request's) and return their rows once their batch has run,
        with what ``follow_up`` (run on the worker thread on those rows) returned.

        Raises :class:`OverloadedError` when the queue is full or when ``deadline_s``
        (``perf_counter`` seconds) passes before the batch starts, :class:`ShuttingDownError` once
        the batcher is closing, :class:`InvalidQueryError` when an input has no finite embedding;
        and whatever the encoder or ``follow_up`` raised for these inputs.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[EncodeResult] = loop.create_future()
        future.add_done_callback(_retrieve)
        now = time.perf_counter()
        job = _Job(
            list(inputs), future, loop, enqueued_s=now, deadline_s=deadline_s, follow_up=follow_up
        )
        with self._lock:
            self._admit(now, deadline_s)
            self._queue.append(job)
            self._depth.set(len(self._queue))
            self._start_worker()
            self._lock.notify()
        timeout = None if math.isinf(deadline_s) else deadline_s - now
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout=timeout)
        except TimeoutError:
            if not self._forget(job):
                # Its batch is running: the work is being done, so wait for it.
                return await future
            raise self._deadline_error() from None
        except asyncio.CancelledError:
            self._forget(job)
            raise

    def _admit(self, now: float, deadline_s: float) -> None:
        """Raise the refusal of a request arriving now, if any (called under the lock)."""
        if self._closed:
            self._metrics.refused.labels("shutting_down").inc()
            raise self._closed_error()
        if now >= deadline_s:
            raise self._deadline_error()
        if len(self._queue) >= self.limits.max_queue_depth:
            self._metrics.refused.labels("queue_full").inc()
            raise OverloadedError(
                f"overloaded: the {self.tower} encoder of variant {self.variant!r} has "
                f"{len(self._queue)} requests waiting (max_queue_depth="
                f"{self.limits.max_queue_depth}); retry later",
                retry_after_s=self.limits.retry_after_s,
            )

    def _forget(self, job: _Job[Input]) -> bool:
        """Take ``job`` out of the queue unless its batch has started; whether it was."""
        with self._lock:
            if job.started:
                return False
            with contextlib.suppress(ValueError):
                self._queue.remove(job)
            self._depth.set(len(self._queue))
            return True

    def _deadline_error(self) -> OverloadedError:
        self._metrics.refused.labels("deadline").inc()
        return OverloadedError(
            f"overloaded: the request's deadline (request_timeout_ms) passed while it waited "
            f"for the {self.tower} encoder of variant {self.variant!r}; it was not computed. "
            "Retry later",
            retry_after_s=self.limits.retry_after_s,
        )

    def _closed_error(self) -> ShuttingDownError:
        return ShuttingDownError(
            "not ready: shutting down", retry_after_s=self.limits.retry_after_s
        )

    # -- the worker thread ------------------------------------------------------------------------

    def _start_worker(self) -> None:
        if not self._threads:
            self._threads = [
                threading.Thread(
                    target=self._work, name=f"encode-{self.variant}-{self.tower}-{n}", daemon=True
                )
                for n in range(self.limits.workers)
            ]
            for thread in self._threads:
                thread.start()

    def _take(self, batch: list[_Job[Input]], size: int) -> int:
        """Move queued jobs into ``batch`` while they fit ``max_batch_size`` (the first job
        always fits); returns the batch's size in inputs. Called under the lock."""
        while self._queue:
            job = self._queue[0]
            if batch and size + len(job.inputs) > self.limits.max_batch_size:
                break
            self._queue.popleft()
            job.started = True
            batch.append(job)
            size += len(job.inputs)
        self._depth.set(len(self._queue))
        return size

    def _gather(self) -> list[_Job[Input]]:
        """The next batch: what is queued now, then what arrives within ``max_wait_s``; empty
        once the batcher is closed and its queue drained."""
        with self._lock:
            while not self._queue:
                if self._closed:
                    return []
                self._lock.wait()
            batch: list[_Job[Input]] = []
            size = self._take(batch, 0)
            until = time.perf_counter() + self.limits.max_wait_s
            while size < self.limits.max_batch_size and not self._closed:
                if self._queue:
                    if size + len(self._queue[0].inputs) > self.limits.max_batch_size:
                        break
                    size = self._take(batch, size)
                    continue
                remaining = until - time.perf_counter()
                if remaining <= 0:
                    break
                self._lock.wait(remaining)
            return batch

    def _work(self) -> None:
        while True:
            batch = self._gather()
            if not batch:
                return
            now = time.perf_counter()
            live = []
            for job in batch:
                if job.future.done():  # its request gave up
                    continue
                if now >= job.deadline_s:
                    # Expired while queued: dropped, never encoded.
                    job.settle(self._deadline_error())
                else:
                    live.append(job)
            if not live:
                continue
            try:
                self._run(live)
            except Exception as error:  # a bug here must not leave requests waiting forever
                logger.exception("the %s batcher of %s failed", self.tower, self.variant)
                for job in live:
                    job.settle(error)

    def _run(self, jobs: list[_Job[Input]]) -> None:
        inputs = [item for job in jobs for item in job.inputs]
        started = time.perf_counter()
        for job in jobs:
            job.queue_s = started - job.enqueued_s
        try:
            output = np.asarray(self._encode(inputs))
        except Exception as error:
            if len(jobs) > 1:
                logger.warning(
                    "a batch of %d %s requests for %s failed (%s); retrying them one by one",
                    len(jobs),
                    self.tower,
                    self.variant,
                    type(error).__name__,
                )
                for job in jobs:
                    self._run([job])
                return
            jobs[0].settle(error)
            return
        encode_s = time.perf_counter() - started
        self._observe(jobs, len(inputs), encode_s)
        if output.ndim != 2 or output.shape[0] != len(inputs):
            wrong = RuntimeError(
                f"the {self.tower} encoder of {self.variant!r} returned shape {output.shape} "
                f"for {len(inputs)} inputs"
            )
            for job in jobs:
                job.settle(wrong)
            return
        output = np.ascontiguousarray(output, dtype=np.float32)
        finite = np.isfinite(output).all(axis=1)
        offset = 0
        done: list[tuple[_Job[Input], EncodeResult]] = []
        for job in jobs:
            end = offset + len(job.inputs)
            rows, bad = output[offset:end], np.flatnonzero(~finite[offset:end])
            offset = end
            if len(bad):
                job.settle(
                    InvalidQueryError(
                        f"{self.tower} #{int(bad[0])} cannot be embedded: variant "
                        f"{self.variant!r} gives no finite vector"
                    )
                )
                continue
            result = EncodeResult(
                rows, job.queue_s, encode_s, len(inputs), len(jobs), started_s=started
            )
            done.append((job, result))
        for job, outcome in _follow_all(done):
            job.settle(outcome)

    def _observe(self, jobs: list[_Job[Input]], inputs: int, encode_s: float) -> None:
        labels = (self.variant, self.tower)
        self._metrics.encode_seconds.labels(*labels).observe(encode_s)
        self._metrics.encode_batch_size.labels(*labels).observe(inputs)
        self._metrics.encode_batch_requests.labels(*labels).observe(len(jobs))
        queue = self._metrics.encode_queue_seconds.labels(*labels)
        for job in jobs:
            queue.observe(job.queue_s)

    # -- shutdown ---------------------------------------------------------------------------------

    def refuse_new_work(self) -> None:
        """From now on :meth:`submit` answers 503 not_ready; queued work still runs."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    async def close(self, timeout_s: float) -> None:
        """Stop admitting, let queued and running batches finish for up to ``timeout_s``
        seconds, then let the worker thread end; requests still queued get 503 not_ready."""
        self.refuse_new_work()
        deadline = time.perf_counter() + timeout_s
        while any(thread.is_alive() for thread in self._threads) and time.perf_counter() < deadline:
            await asyncio.sleep(0.005)
        with self._lock:
            left = list(self._queue)
            self._queue.clear()
            self._depth.set(0)
        for job in left:
            job.settle(self._closed_error())

"""The write path of one live collection: group commit, apply, then answer.

A write request arrives validated and embedded; what is left is to order it, make it durable
and make it visible. :meth:`CollectionWriter.write` hands over a *plan*: a function that, given
the collection as it stands after every earlier write (staged ones included), returns the
operation to log — a delete by filter resolves its ids there, a metadata patch reads the stored
item there, so neither can touch a write that comes after it. One thread (the writer's) takes
every plan waiting, stages each (sequence number, segment), appends them all to the log with one
fsync, and only then lets readers see them (:meth:`storage.live.collection.LiveCollection.commit`)
and answers every request of the group: a 200 means fsynced and visible. Requests that arrive
while an fsync runs form the next group.

A write may carry an idempotency key (:mod:`storage.live.idempotency`): when the collection
remembers it, the write is answered with what it wrote the first time and nothing is logged. On a
follower the leader's records take the same thread (:meth:`CollectionWriter.replicate`), so its
own compactions fall between them. Every group made visible fires the collection's
:class:`~service.engine.collection.commit_signal.CommitSignal`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.field_types import FieldType
from service.engine.collection.commit_signal import CommitSignal
from service.exceptions import DomainError, OverloadedError, WriteFailedError
from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from storage.live.base import BaseError
from storage.live.collection import Compaction, LiveCollection, Snapshot
from storage.live.log import LogError
from storage.live.operations import Operation
from storage.live.segment import SegmentView
from storage.live.spec import CollectionSpec

Plan = Callable[[SegmentView], Operation]
"""Makes a write's operation from the collection as it stands before it (may raise a
:class:`~service.exceptions.DomainError`: the request is refused, nothing is logged)."""


@dataclass(frozen=True)
class WriteResult:
    """A committed write: its sequence number and how many items it wrote or deleted."""

    seq: int
    done: int


@dataclass
class _Pending:
    plan: Plan
    future: asyncio.Future[WriteResult]
    context: RequestContext | None = None
    key: str | None = None
    queued: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class _Commit:
    """What one group's commit did: each write's outcome, and when the log append and fsync
    started and ended (``perf_counter``; None when nothing was logged)."""

    outcomes: list[WriteResult | BaseException]
    fsync: tuple[float, float] | None = None


class CollectionWriter:
    """Orders, logs and applies the writes of one collection (see the module docstring)."""

    def __init__(
        self,
        collection: LiveCollection,
        metrics: ServiceMetrics,
        *,
        max_pending: int,
        retry_after_s: int,
        compact_dead_fraction: float = 1.0,
        compact_min_rows: int = 1 << 62,
        compact_own_rows: int = 1 << 62,
        signal: CommitSignal | None = None,
    ) -> None:
        self.collection = collection
        self.signal = signal or CommitSignal()
        self._metrics = metrics
        self._max_pending = max_pending
        self._retry_after_s = retry_after_s
        self._compact_dead_fraction = compact_dead_fraction
        self._compact_min_rows = compact_min_rows
        self._compact_own_rows = compact_own_rows
        self._pending: list[_Pending] = []
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"writer-{collection.name}")
        self._flushing: asyncio.Task[None] | None = None
        self._closed = False

    async def write(
        self, plan: Plan, context: RequestContext | None = None, key: str | None = None
    ) -> WriteResult:
        """Order, log (fsynced) and apply the operation ``plan`` makes; returns once readers see
        it. With an idempotency ``key`` the collection remembers, nothing is logged and the
        answer is the first write's. Raises the plan's :class:`DomainError`,
        :class:`OverloadedError` when ``max_pending_writes`` requests wait already,
        :class:`WriteFailedError` when the log fails. The request's ``context`` gets the
        write's time (handed over until durable and visible) and its group's fsync time."""
        if self._closed:
            raise WriteFailedError(
                f"collection {self.collection.name!r} is closing", self._retry_after_s
            )
        if len(self._pending) >= self._max_pending:
            raise OverloadedError(
                f"{len(self._pending)} writes wait for the log of collection "
                f"{self.collection.name!r} (max_pending_writes={self._max_pending}); retry later",
                self._retry_after_s,
            )
        future: asyncio.Future[WriteResult] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(plan, future, context, key))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self._flush())
        return await asyncio.shield(future)

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            group, self._pending = self._pending, []
            commit = await loop.run_in_executor(self._thread, self._commit, group)
            now = time.perf_counter()
            for pending, outcome in zip(group, commit.outcomes, strict=True):
                if pending.future.done():
                    continue
                if isinstance(outcome, BaseException):
                    pending.future.set_exception(outcome)
                else:
                    pending.future.set_result(outcome)
                    self._metrics.write_seconds.observe(now - pending.queued)
                    context = pending.context
                    if context is not None:
                        context.add_write_ms((now - pending.queued) * 1000.0, pending.queued)
                        if commit.fsync is not None:
                            began, ended = commit.fsync
                            context.add_fsync_ms((ended - began) * 1000.0, began)
            self.signal.fire()
            if self._due_for_compaction():
                # Writes that arrive meanwhile wait for it: they form the next group.
                with contextlib.suppress(WriteFailedError):
                    await loop.run_in_executor(self._thread, self._compact, "threshold")

    def _due_for_compaction(self) -> bool:
        collection = self.collection
        rows = collection.rows
        if collection.failed is not None:
            return False
        if collection.own_rows >= self._compact_own_rows:
            return True
        if rows < self._compact_min_rows:
            return False
        dead = rows - collection.view().count
        return dead / rows >= self._compact_dead_fraction

    async def compact(self) -> Compaction:
        """Compact the collection now, between two groups of writes (see
        :meth:`storage.live.collection.LiveCollection.compact`); :class:`WriteFailedError`
        when the log cannot be rewritten."""
        if self._closed:
            raise WriteFailedError(
                f"collection {self.collection.name!r} is closing", self._retry_after_s
            )
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._compact, "request")

    def _compact(self, trigger: str) -> Compaction:
        """Blocking (the writer's thread)."""
        try:
            done = self.collection.compact()
        except LogError as error:
            self._metrics.compactions.labels(trigger, "failed").inc()
            raise self._failed(error) from None
        except BaseError as error:
            self._metrics.compactions.labels(trigger, "failed").inc()
            raise WriteFailedError(
                f"collection {self.collection.name!r} cannot write its new base ({error}); "
                "nothing changed and it goes on taking writes",
                self._retry_after_s,
            ) from None
        self._metrics.compactions.labels(trigger, "ok").inc()
        self._metrics.compaction_seconds.observe(done.seconds)
        collection = self.collection
        self._metrics.record_collection(
            collection.name, collection.view().count, collection.rows, collection.log_bytes
        )
        return done

    async def add_fields(self, fields: Mapping[str, FieldType]) -> CollectionSpec:
        """Declare ``fields`` (new names) between two groups of writes, on the writer's
        thread (:meth:`storage.live.collection.LiveCollection.add_fields`): durable when this
        returns, and every write handed over after it may give them values.
        :class:`WriteFailedError` when the spec cannot be written (nothing changed)."""
        if self._closed:
            raise WriteFailedError(
                f"collection {self.collection.name!r} is closing", self._retry_after_s
            )
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._add_fields, dict(fields))

    def _add_fields(self, fields: dict[str, FieldType]) -> CollectionSpec:
        """Blocking (the writer's thread)."""
        try:
            return self.collection.add_fields(fields)
        except OSError as error:
            raise WriteFailedError(
                f"collection {self.collection.name!r} cannot write its spec ({error}); nothing "
                "changed",
                self._retry_after_s,
            ) from None

    async def replicate(self, data: bytes) -> int:
        """Apply the leader's framed records ``data`` (a follower), durably, on the writer's
        thread between compactions (then compact when due, as a leader would); returns the
        visible sequence. ``ValueError`` (nothing applied) for records that do not go on from
        this copy; :class:`WriteFailedError` when the log fails."""
        if self._closed:
            raise WriteFailedError(
                f"collection {self.collection.name!r} is closing", self._retry_after_s
            )
        loop = asyncio.get_running_loop()
        try:
            seq = await loop.run_in_executor(self._thread, self._replicate, data)
        finally:
            self.signal.fire()
        if self._due_for_compaction():
            with contextlib.suppress(WriteFailedError):
                await loop.run_in_executor(self._thread, self._compact, "threshold")
        return seq

    def _replicate(self, data: bytes) -> int:
        """Blocking (the writer's thread)."""
        collection = self.collection
        try:
            seq = collection.apply_replicated(data)
        except LogError as error:
            raise self._failed(error) from None
        self._metrics.record_collection(
            collection.name, collection.view().count, collection.rows, collection.log_bytes
        )
        return seq

    async def on_thread(self, work: Callable[[LiveCollection], Any]) -> Any:
        """Run ``work(collection)`` on the writer's thread, between two groups of writes."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, work, self.collection)

    async def snapshot(self, root: Path) -> Snapshot:
        """Write the collection as readers see it now as a bundle version under ``root``
        (:meth:`storage.live.collection.LiveCollection.snapshot`), off the writer's thread:
        writes go on meanwhile. Raises :class:`BaseError` when it cannot be written."""
        return await asyncio.to_thread(self.collection.snapshot, root)

    def _commit(self, group: list[_Pending]) -> _Commit:
        """Blocking (the writer's thread): stage every plan in order, then one log append."""
        collection = self.collection
        outcomes: list[WriteResult | BaseException] = []
        staged: list[int] = []
        for pending in group:
            if pending.key is not None and (prior := collection.keyed(pending.key)) is not None:
                outcomes.append(WriteResult(prior.seq, prior.done))
                continue
            try:
                operation = pending.plan(collection.staged_view())
                if pending.key is not None:
                    operation = dataclasses.replace(operation, key=pending.key)
                seq, done = collection.stage(operation)
            except DomainError as error:
                outcomes.append(error)
                continue
            except LogError as error:
                outcomes.append(self._failed(error))
                continue
            outcomes.append(WriteResult(seq, done))
            staged.append(len(outcomes) - 1)
        fsync: tuple[float, float] | None = None
        if staged:
            started = time.perf_counter()
            try:
                collection.commit()
            except LogError as error:
                failure = self._failed(error)
                for position in staged:
                    outcomes[position] = failure
            else:
                fsync = (started, time.perf_counter())
                self._metrics.log_fsync_seconds.observe(fsync[1] - started)
                self._metrics.write_group_size.observe(len(staged))
        self._metrics.record_collection(
            collection.name, collection.view().count, collection.rows, collection.log_bytes
        )
        return _Commit(outcomes, fsync)

    def _failed(self, error: LogError) -> WriteFailedError:
        return WriteFailedError(
            f"collection {self.collection.name!r} cannot write its log ({error}); nothing of "
            "this request was acknowledged, and the collection takes no more writes until the "
            "service restarts",
            self._retry_after_s,
        )

    async def close(self) -> None:
        """Finish the writes already handed over, then stop the writer's thread and close the
        collection's log."""
        self._closed = True
        if self._flushing is not None:
            await asyncio.shield(self._flushing)
        await asyncio.get_running_loop().run_in_executor(self._thread, self.collection.close)
        self._thread.shutdown(wait=False)

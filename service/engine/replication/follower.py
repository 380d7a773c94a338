"""The follower's side: a loop that copies the leader's live collections and their writes.

Each round fetches from the leader (:mod:`service.engine.replication.leader`), telling it how far
every local copy is durable, and applies the answer: records that go on from a copy are appended
to its own log with one fsync and made visible (:meth:`CollectionWriter.replicate`); a collection
the follower lacks, or must replace (a new one of the same name, a copy behind the leader's base,
or one that diverged: a stale leader's unacknowledged records), is installed whole — the leader's
base copied, then its log from there (:meth:`LiveCollections.install`), the old copy serving
reads until the new one is open; a collection the leader no longer has is dropped. The follower
compacts its copies on its own thresholds (same rows, same order, same answers).

A round that fails (the leader down, a network error) is retried after a pause that doubles up to
a second; a leader that answers it is not the leader hands over the URL of the one it knows.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

from service.engine.collection.live_collections import CollectionCopy, LiveCollections
from service.engine.replication.election import copy_positions
from service.engine.replication.link import LeaderMovedError, LinkError, ReplicaLink
from service.engine.replication.wire import CollectionState, FetchAnswer, FetchRequest
from service.exceptions import WriteFailedError
from service.metrics import ServiceMetrics
from storage.live.collection import LiveCollection
from storage.live.idempotency import KeyTable
from storage.live.terms import TermHistory

logger = logging.getLogger(__name__)
T = TypeVar("T")

FETCH_WAIT_MS: Final = 1000
"""How long a fetch may wait at the leader for news (long poll)."""
FETCH_TIMEOUT_S: Final = 10.0
HEARTBEAT_S: Final = 1.0
"""While an apply (or a compaction) takes longer, how often the follower tells its leader it
still follows."""
STOP_ATTEMPTS: Final = 20
PAUSE_S: Final = (0.05, 1.0)
"""The pause after a failed round: first, and most."""


@dataclass
class Progress:
    """Where this follower stands: the leader's visible sequence per collection at the last
    answer, since when each copy has been behind, installs done, and the last error."""

    leader_visible: dict[str, int]
    behind_since: dict[str, float]
    confirmed: set[str] = field(default_factory=set)
    """Collections whose copy the leader has confirmed goes on from its log since this
    follower began following it (a stale leader's copy is never confirmed: it is installed
    again first)."""
    installs: int = 0
    last_error: str | None = None
    last_answer: float | None = None


class Follower:
    """Follows one leader (see the module docstring). ``on_answer`` gets every answer first
    (the replica set adopts its term and members); ``replica``, ``url`` and ``term`` say who
    asks."""

    def __init__(
        self,
        live: LiveCollections,
        link: ReplicaLink,
        metrics: ServiceMetrics,
        *,
        leader: str,
        replica: str,
        url: str,
        term: Callable[[], int],
        on_answer: Callable[[FetchAnswer], Awaitable[None]],
        on_moved: Callable[[str | None], Awaitable[None]],
        max_bytes: int,
    ) -> None:
        self.leader = leader
        self._live = live
        self._link = link
        self._metrics = metrics
        self._replica = replica
        self._url = url
        self._term = term
        self._on_answer = on_answer
        self._on_moved = on_moved
        self._max_bytes = max_bytes
        self.progress = Progress({}, {})
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        """Start the loop (on the running event loop)."""
        self._task = asyncio.create_task(self._run(), name=f"follow-{self.leader}")

    async def stop(self) -> None:
        """Stop the loop (an apply under way finishes: its records are durable)."""
        self._stopping = True
        task = self._task
        if task is not None:
            # A cancellation can be swallowed (asyncio.wait_for on 3.11 returns a result that
            # came with it): cancel until the task has ended.
            for _ in range(STOP_ATTEMPTS):
                if task.done():
                    break
                task.cancel()
                await asyncio.wait({task}, timeout=0.5)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                if task.done():
                    task.result()
            self._task = None

    def request(self, wait_ms: int = FETCH_WAIT_MS) -> FetchRequest:
        """The fetch for the copies as they stand."""
        return FetchRequest(
            replica=self._replica,
            url=self._url,
            term=self._term(),
            positions=copy_positions(self._live),
            wait_ms=wait_ms,
            max_bytes=self._max_bytes,
        )

    async def _run(self) -> None:
        pause = PAUSE_S[0]
        while not self._stopping:
            try:
                answer = await self._link.fetch(self.leader, self.request(), FETCH_TIMEOUT_S)
                await self._on_answer(answer)
                await self.apply(answer)
                self.progress.last_error = None
                pause = PAUSE_S[0]
            except LeaderMovedError as moved:
                self.progress.last_error = str(moved)
                if moved.leader and moved.leader != self.leader:
                    await self._on_moved(moved.leader)
                    return
                await asyncio.sleep(pause)
                pause = min(PAUSE_S[1], pause * 2)
            except (LinkError, ValueError, WriteFailedError, OSError) as exc:
                self.progress.last_error = f"{type(exc).__name__}: {exc}"
                logger.warning("following %s: %s", self.leader, self.progress.last_error)
                await asyncio.sleep(pause)
                pause = min(PAUSE_S[1], pause * 2)

    async def apply(self, answer: FetchAnswer) -> None:
        """Apply one answer to the local copies (see the module docstring)."""
        names = set()
        for state in answer.collections:
            names.add(state.name)
            self.progress.leader_visible[state.name] = state.visible
            entry = self._live.get(state.name)
            if state.install is not None:
                self.progress.confirmed.discard(state.name)
                await self._install(state)
            elif entry is not None:
                self.progress.confirmed.add(state.name)
                # The leader's fields and term history first (both only grow, and hold what
                # the records need), so a crash between them and the records leaves a copy
                # that still goes on from the leader's log.
                held = entry.collection.spec.fields
                added = {name: kind for name, kind in state.spec.fields.items() if name not in held}
                if added:
                    entry = await self._live.add_fields(state.name, added, max_fields=1 << 30)
                await entry.writer.on_thread(_adopting(state.terms))
                if state.records:
                    self._metrics.replication_catchup_bytes.labels("log").inc(len(state.records))
                    await self._beating(entry.writer.replicate(state.records))
            self._record_lag(state)
        for entry in self._live.entries:
            if entry.collection.name not in names:
                await self._live.drop(entry.collection.name)
                self.progress.confirmed.discard(entry.collection.name)
                self.progress.leader_visible.pop(entry.collection.name, None)
                self.progress.behind_since.pop(entry.collection.name, None)
        self.progress.last_answer = time.monotonic()
        self._live.signal.fire()  # reads waiting for a confirmed copy look again

    async def _beating(self, work: Awaitable[T]) -> T:
        """Await ``work`` (an apply, and the compaction it may start: seconds on a large
        collection), telling the leader every :data:`HEARTBEAT_S` meanwhile that this follower
        still follows it (a fetch of positions only), so its lease holds."""
        task = asyncio.ensure_future(work)
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_S)
            if done:
                return task.result()
            with contextlib.suppress(LinkError, ValueError):
                beat = dataclasses.replace(self.request(wait_ms=0), max_bytes=0)
                await self._link.fetch(self.leader, beat, FETCH_TIMEOUT_S)

    def _record_lag(self, state: CollectionState) -> None:
        entry = self._live.get(state.name)
        held = 0 if entry is None else entry.collection.visible_seq
        behind = max(0, state.visible - held)
        now = time.monotonic()
        if behind:
            since = self.progress.behind_since.setdefault(state.name, now)
        else:
            self.progress.behind_since.pop(state.name, None)
            since = now
        self._metrics.replication_lag_records.labels(state.name).set(behind)
        self._metrics.replication_lag_seconds.labels(state.name).set(now - since)

    async def _install(self, state: CollectionState) -> None:
        root = self._live.root
        if root is None:
            raise WriteFailedError("this follower keeps no live collections", 1)
        logger.info("installing %s from %s: %s", state.name, self.leader, state.install)
        incoming = root / f".staging-incoming-{state.name}-{uuid.uuid4().hex}"
        try:
            if state.base_seq == 0 and state.base_version is None:
                copy = CollectionCopy(state.spec, None, 0, "items", state.terms, KeyTable())
            else:
                base = await self._link.download_base(self.leader, state.name, incoming)
                received = base.received
                self._metrics.replication_catchup_bytes.labels("base").inc(_size(incoming))
                copy = CollectionCopy(
                    state.spec,
                    received.version_dir,
                    base.seq,
                    base.collection,
                    state.terms,
                    received.keys,
                )
            await asyncio.shield(self._live.install(copy))
        finally:
            await asyncio.to_thread(shutil.rmtree, incoming, True)
        self.progress.installs += 1
        self._metrics.replication_installs.labels(_reason_label(state.install)).inc()


def _adopting(terms: TermHistory) -> Callable[[LiveCollection], None]:
    def adopt(collection: LiveCollection) -> None:
        collection.adopt_terms(terms)

    return adopt


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _reason_label(reason: str | None) -> str:
    text = reason or ""
    for label in ("new", "replaced", "behind", "diverged", "holds"):
        if label in text:
            return {"holds": "diverged"}.get(label, label)
    return "other"

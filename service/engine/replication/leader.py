"""The leader's side: answering followers' fetches and counting their acknowledgements.

A follower fetches in a loop (:mod:`service.engine.replication.follower`); each fetch says how far
its copy of every collection is durable, which is its acknowledgement of every record up to
there. The hub remembers the latest position of every follower that fetched in this leader's
term, and a write that asks for ``majority`` or ``all`` waits (:meth:`LeaderHub.wait_acks`) until
that many replicas — the leader counted — hold its record. A fetch that finds nothing new waits
for the next commit (long poll), so a record reaches the followers as soon as it is visible.

A follower's position counts only when its copy goes on from the leader's log: the same
collection (uid), not behind the leader's base, and its last record of the same term as the
leader's record at that sequence number (:mod:`storage.live.terms`); otherwise the answer tells
it to install the collection whole.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field

from service.engine.collection.live_collections import LiveCollections
from service.engine.replication.wire import (
    CollectionState,
    FetchAnswer,
    FetchRequest,
    Position,
)
from service.metrics import ServiceMetrics
from storage.live.collection import LiveCollection


class StaleLeaderError(RuntimeError):
    """A fetch came from a replica of a later term: this leader has been replaced."""

    def __init__(self, term: int) -> None:
        super().__init__(f"a replica knows term {term}")
        self.term = term


@dataclass
class FollowerSeen:
    """A follower as its fetches showed it: URL, term, when it last fetched, and the durable
    position of each collection whose copy goes on from this leader's log."""

    replica: str
    url: str | None
    term: int
    seen: float
    positions: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Collection → (uid, last durable sequence number)."""


class LeaderHub:
    """The followers of one leader in one term (see the module docstring)."""

    def __init__(
        self,
        live: LiveCollections,
        metrics: ServiceMetrics,
        *,
        term: int,
        own_url: str,
        set_size: int,
        lease_s: float,
    ) -> None:
        self._live = live
        self._metrics = metrics
        self.term = term
        self.own_url = own_url
        self.set_size = set_size
        self.lease_s = lease_s
        self.followers: dict[str, FollowerSeen] = {}

    def grant_lease(self, replica: str, url: str | None) -> None:
        """Count ``replica`` (a voter that granted this leader's term) as following from now."""
        self.followers[replica] = FollowerSeen(replica, url, self.term, time.monotonic())

    def following(self) -> list[FollowerSeen]:
        """Followers that fetched in this term within the lease."""
        now = time.monotonic()
        return [
            seen
            for seen in self.followers.values()
            if seen.term == self.term and now - seen.seen <= self.lease_s
        ]

    def has_quorum(self) -> bool:
        """Whether this leader may take writes: alone in its set, or followed by enough
        replicas (within the lease) to make a majority with it."""
        if self.set_size <= 1:
            return True
        return 1 + len(self.following()) >= self.set_size // 2 + 1

    def members(self) -> tuple[str, ...]:
        """The URLs of this leader and of every follower it heard from."""
        urls = [self.own_url] + [seen.url for seen in self.followers.values() if seen.url]
        return tuple(dict.fromkeys(urls))

    def acked(self, name: str, uid: str, seq: int) -> int:
        """Replicas (this leader counted) that hold record ``seq`` of collection ``name``."""
        count = 1
        for seen in self.following():
            position = seen.positions.get(name)
            if position is not None and position[0] == uid and position[1] >= seq:
                count += 1
        return count

    async def wait_acks(self, name: str, uid: str, seq: int, needed: int, timeout_s: float) -> bool:
        """Wait until ``needed`` replicas hold record ``seq`` (at most ``timeout_s``)."""
        return await self._live.signal.wait_until(
            lambda: self.acked(name, uid, seq) >= needed, timeout_s
        )

    async def fetch(self, request: FetchRequest) -> FetchAnswer:
        """Answer a follower's fetch: note its positions (acknowledgements), then the records
        it lacks, waiting up to ``request.wait_ms`` for some when there are none.
        :class:`StaleLeaderError` when the follower knows a later term."""
        if request.term > self.term:
            raise StaleLeaderError(request.term)
        answer, consistent = await asyncio.to_thread(self._answer, request)
        self._note(request, consistent)
        if request.wait_ms > 0 and not _news(answer):
            await self._live.signal.wait(request.wait_ms / 1000.0)
            answer, consistent = await asyncio.to_thread(self._answer, request)
        return dataclasses.replace(answer, members=self.members())  # the asker among them

    def _note(self, request: FetchRequest, consistent: dict[str, tuple[str, int]]) -> None:
        seen = self.followers.get(request.replica)
        if seen is None:
            seen = FollowerSeen(request.replica, request.url, request.term, 0.0)
            self.followers[request.replica] = seen
        was_following = seen.term == self.term and time.monotonic() - seen.seen <= self.lease_s
        seen.url, seen.term, seen.seen = request.url, request.term, time.monotonic()
        moved = seen.positions != consistent or not was_following
        seen.positions = consistent
        for name, (_, after) in consistent.items():
            self._metrics.replication_follower_seq.labels(name, request.replica).set(after)
        self._metrics.replication_followers.set(len(self.following()))
        if moved:
            self._live.signal.fire()  # acknowledgement waiters count again

    def _answer(self, request: FetchRequest) -> tuple[FetchAnswer, dict[str, tuple[str, int]]]:
        """Blocking (reads the logs)."""
        budget = request.max_bytes
        states: list[CollectionState] = []
        consistent: dict[str, tuple[str, int]] = {}
        for entry in self._live.entries:
            collection = entry.collection
            spec, visible = collection.spec, collection.visible_seq
            position = request.positions.get(spec.name)
            install = _install_reason(position, spec.uid, collection, visible)
            records = b""
            if install is None and position is not None:
                try:
                    if budget > 0:  # 0 from the start: a heartbeat, positions only
                        records = collection.frames_after(position.after, budget)
                except ValueError:
                    install = "behind the leader's base"
                else:
                    budget = max(0, budget - len(records)) if budget > 0 else 0
                    consistent[spec.name] = (spec.uid, position.after)
            states.append(
                CollectionState(
                    spec=spec,
                    base_seq=collection.base_seq,
                    base_version=None if collection.base is None else collection.base.version,
                    visible=visible,
                    terms=collection.terms,
                    install=install,
                    records=records,
                )
            )
        answer = FetchAnswer(self.term, self.own_url, self.members(), tuple(states))
        return answer, consistent


def _install_reason(
    position: Position | None, uid: str, collection: LiveCollection, visible: int
) -> str | None:
    """Why a follower at ``position`` must install the collection whole (None: it need not)."""
    if position is None:
        return "new on this follower"
    if position.uid != uid:
        return "replaced by a collection of the same name"
    if position.after > visible:
        return "holds records the leader does not"
    if collection.terms.term_of(position.after) != position.term:
        return "diverged from the leader's log"
    if position.after < collection.base_seq:
        return "behind the leader's base"
    return None


def _news(answer: FetchAnswer) -> bool:
    return any(state.install is not None or state.records for state in answer.collections)

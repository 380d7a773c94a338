"""One server's place in the replica set of its live collections: leader, follower or fenced.

- **Leader**: takes the writes; a write that asks for more than the leader's fsync waits for its
  followers' acknowledgements (:class:`~service.engine.replication.leader.LeaderHub`). With more
  than one member it takes writes only while a majority follows it in its term (a lease), so a
  leader that was replaced, or cut off from the others, refuses them (503 no_quorum).
- **Follower**: copies the leader (:class:`~service.engine.replication.follower.Follower`),
  answers reads, refuses writes (421 not_leader naming the leader). A read waits until the copy
  has applied what it needs: the sequence number the client names (``X-Min-Seq``), or, by
  default, what the leader has answered when the read starts (asked of the leader; answered
  from the local copy at once while the leader cannot be reached).
- **Fenced**: a leader that learned of a later term: reads yes, writes no, until it follows.

A promotion (:meth:`ReplicaSet.promote`) asks every member it knows for the next term; a member
grants it at most once a term, only to a candidate as far along as itself
(:func:`~service.engine.replication.election.candidate_lacks`), and then follows it. With a
majority granted (itself counted) the candidate leads: a write a majority acknowledged is on a
member of any majority that grants a term, so the new leader holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from service.engine.collection.live_collections import LiveCollections
from service.engine.replication.election import candidate_lacks, copy_positions
from service.engine.replication.follower import Follower
from service.engine.replication.http_link import HttpReplicaLink
from service.engine.replication.leader import LeaderHub, StaleLeaderError
from service.engine.replication.link import Ballot, LinkError, MemberView, ReplicaLink, Vote
from service.engine.replication.wire import FetchAnswer, FetchRequest
from service.exceptions import (
    InvalidQueryError,
    NoQuorumError,
    NotLeaderError,
    PromotionRefusedError,
    ReplicaBehindError,
    ReplicationTimeoutError,
    WritesUnavailableError,
    quoted,
)
from service.metrics import ServiceMetrics
from service.settings import Acks, Settings
from storage.live.base_transfer import BaseFiles, open_base
from storage.live.collection import LiveCollection
from storage.live.replica_state import ReplicaState, read_replica_state, write_replica_state

logger = logging.getLogger(__name__)

Role = Literal["leader", "follower", "fenced"]
ROLES: Final[tuple[Role, ...]] = ("leader", "follower", "fenced")
CALL_TIMEOUT_S: Final = 3.0
"""Longest a vote, a follow order or a leader position may take."""
ELECTION_ROUNDS: Final = 3
"""Terms a promotion asks for at most (each past the latest a member named)."""
BASE_ATTEMPTS: Final = 5
"""Tries at opening a base that compactions keep replacing."""
LEADER_SILENT_S: Final = 2.0
"""A follower whose leader has not answered for this long answers reads from its copy at once."""
DISCOVER_AFTER_S: Final = 3.0
"""A follower whose leader has not answered for this long asks the members who leads."""
WATCH_PERIOD_S: Final = 1.0


@dataclass(frozen=True)
class ReplicaStatus:
    """What ``GET /v1/replication`` shows."""

    replica: str
    url: str
    role: Role
    term: int
    leader: str | None
    set_size: int
    members: tuple[str, ...]
    collections: Mapping[str, int]
    """Live collection → the sequence number readers see here."""
    followers: tuple[tuple[str, str | None, float, Mapping[str, int]], ...]
    """On a leader: (replica, url, seconds since its last fetch, collection → durable seq)."""
    lag: Mapping[str, int]
    """On a follower: records behind the leader per collection, at the last answer."""
    last_error: str | None


class ReplicaSet:
    """This server in its replica set (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        live: LiveCollections,
        metrics: ServiceMetrics,
        link: ReplicaLink | None = None,
    ) -> None:
        self.settings = settings
        self.live = live
        self.metrics = metrics
        self.own_url = settings.own_url.rstrip("/")
        key = settings.follow_key or (
            settings.admin_keys[0].get_secret_value() if settings.admin_keys else None
        )
        self.link: ReplicaLink = link or HttpReplicaLink(key)
        self.state = ReplicaState()
        self.hub: LeaderHub | None = None
        self.follower: Follower | None = None
        self._lock = asyncio.Lock()
        self._watch: asyncio.Task[None] | None = None
        self._started = time.monotonic()

    @property
    def role(self) -> Role:
        """What this server is now."""
        if self.follower is not None:
            return "follower"
        return "fenced" if self.state.fenced or self.hub is None else "leader"

    # Start and stop

    async def start(self) -> None:
        """Take up the role the settings (``follow``) or the saved state say."""
        root = self.live.root
        if root is None:
            return
        self.state = await asyncio.to_thread(read_replica_state, root)
        await asyncio.to_thread(write_replica_state, root, self.state)  # the id, once
        state = self.state
        # ``follow`` names the leader to start with (this server's own URL: none). A server
        # that was promoted since (it leads a term of its own) leads again, and learns from the
        # members if it was replaced; without ``follow`` the saved state decides.
        asked = self.settings.follow
        if asked is not None and asked.rstrip("/") == self.own_url:
            asked = None
        led = state.leader is None and not state.fenced and state.term > 0
        leader = state.leader if led or asked is None else asked
        if leader is not None and not led:
            await self._follow(leader.rstrip("/"))
        elif not state.fenced:
            self._lead()
        self._record_role()
        self._watch = asyncio.get_running_loop().create_task(self._watching(), name="replicas")

    async def stop(self) -> None:
        """Stop following and watching, and let go of connections."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch
            self._watch = None
        if self.follower is not None:
            await self.follower.stop()
            self.follower = None
        await self.link.close()

    # Writes

    def check_writes(self) -> None:
        """Raise unless this server takes writes now: :class:`NotLeaderError` on a follower or
        a fenced leader, :class:`NoQuorumError` on a leader no majority follows."""
        if self.live.root is None:
            return  # the collections refuse writes themselves (writes_unavailable)
        if self.role != "leader":
            self.metrics.replication_refused_writes.labels("not_leader").inc()
            leader = self.state.leader
            raise NotLeaderError(
                f"this server ({self.own_url}) is a {self.role} and takes no writes; "
                + (f"send them to the leader, {leader}" if leader else "no leader is known here"),
                leader,
            )
        assert self.hub is not None
        if not self.hub.has_quorum():
            self.metrics.replication_refused_writes.labels("no_quorum").inc()
            following = len(self.hub.following())
            raise NoQuorumError(
                f"this leader (term {self.state.term}) is followed by {following} of the "
                f"{self.settings.replica_set_size - 1} other replicas within "
                f"leader_lease_s={self.settings.leader_lease_s}: no majority, so it takes no "
                "writes (its followers are down or cut off, or another was promoted)",
                self.settings.write_retry_after_s,
            )

    def needed(self, acks: Acks) -> int:
        """Replicas (the leader counted) that must hold a write under ``acks``."""
        size = self.settings.replica_set_size
        return {"leader": 1, "majority": size // 2 + 1, "all": size}[acks]

    def acks_of(self, collection: LiveCollection, asked: Acks | None) -> Acks:
        """The policy of a write: asked for, else the collection's, else the server's."""
        policy = asked or collection.spec.acks or self.settings.default_acks
        return policy if policy in ("leader", "majority", "all") else "majority"  # type: ignore[return-value]

    async def acknowledge(self, collection: LiveCollection, seq: int, acks: Acks) -> None:
        """Wait until record ``seq`` of ``collection`` is on as many replicas as ``acks`` needs;
        :class:`ReplicationTimeoutError` after ``ack_timeout_s``."""
        needed = self.needed(acks)
        if needed <= 1 or self.hub is None:
            return
        started = time.perf_counter()
        held = await self.hub.wait_acks(
            collection.name, collection.spec.uid, seq, needed, self.settings.ack_timeout_s
        )
        self.metrics.replication_ack_seconds.labels(acks).observe(time.perf_counter() - started)
        if not held:
            self.metrics.replication_refused_writes.labels("replication_timeout").inc()
            count = self.hub.acked(collection.name, collection.spec.uid, seq)
            raise ReplicationTimeoutError(
                f"the write is durable and visible on the leader (seq {seq}) but {count} of the "
                f"{needed} replicas acks={acks} needs hold it after ack_timeout_s="
                f"{self.settings.ack_timeout_s}; retry with the same Idempotency-Key (it "
                "applies once)",
                seq,
                self.settings.write_retry_after_s,
            )

    # Reads

    def position(self) -> dict[str, int]:
        """The sequence number readers see, per live collection."""
        return {e.collection.name: e.collection.visible_seq for e in self.live.entries}

    async def await_reads(self, names: Sequence[str], min_seq: Mapping[str, int]) -> None:
        """Wait until this copy of each live collection of ``names`` has applied what the read
        needs (``min_seq``, else on a follower under follower_reads=leader the leader's
        position); :class:`ReplicaBehindError` after ``read_wait_s``."""
        live = [name for name in names if self.live.get(name) is not None]
        if not live or self.role == "leader":
            # A leader holds every write it answered: a sequence number past its own names a
            # write of a dropped collection of the same name (or none), not one to wait for.
            return
        needs = {name: min_seq[name] for name in live if name in min_seq}
        follower = self.follower
        if follower is not None and follower.progress.last_answer is None:
            # Just started following: give the leader a moment to answer the first fetch (a
            # copy it has not confirmed may hold a replaced leader's records).
            progress = follower.progress
            await self.live.signal.wait_until(
                lambda: progress.last_answer is not None,
                min(LEADER_SILENT_S, self.settings.read_wait_s),
            )
        if (
            not needs
            and follower is not None
            and self.settings.follower_reads == "leader"
            and follower.progress.last_answer is not None
            and time.monotonic() - follower.progress.last_answer < LEADER_SILENT_S
        ):
            try:
                positions = await self.link.position(follower.leader, CALL_TIMEOUT_S)
            except LinkError:
                positions = {}
            needs = {name: positions[name] for name in live if name in positions}
        confirmed = None if follower is None or not needs else follower.progress.confirmed
        for name, seq in needs.items():
            if not await self.live.signal.wait_until(
                _applied(self.live, name, seq, confirmed), self.settings.read_wait_s
            ):
                entry = self.live.get(name)
                held = 0 if entry is None else entry.collection.visible_seq
                raise ReplicaBehindError(
                    f"this replica ({self.own_url}) holds collection {quoted(name)} up to seq "
                    f"{held}, not {seq}, after read_wait_s={self.settings.read_wait_s}; retry, "
                    "or read from the leader",
                    self.settings.write_retry_after_s,
                )

    # The leader's side of replication

    async def fetch(self, request: FetchRequest) -> FetchAnswer:
        """Answer a follower's fetch (:class:`NotLeaderError` unless this server leads)."""
        hub = self.hub
        if hub is None or self.role != "leader":
            raise NotLeaderError(
                f"this server ({self.own_url}) is a {self.role}, not the leader",
                self.state.leader if self.role == "follower" else None,
            )
        try:
            return await hub.fetch(request)
        except StaleLeaderError as stale:
            await self._fence(stale.term)
            raise NotLeaderError(
                f"this server ({self.own_url}) led term {hub.term}, and a replica knows term "
                f"{stale.term}: it steps down",
                None,
            ) from None

    async def open_base(self, name: str) -> BaseFiles:
        """The base files of live collection ``name``, open, for a follower to copy
        (:class:`NotLeaderError` unless this server leads; ``NotFoundError``)."""
        if self.role != "leader":
            raise NotLeaderError(
                f"this server ({self.own_url}) is a {self.role}, not the leader",
                self.state.leader,
            )
        entry = self.live.require(name)
        for _ in range(BASE_ATTEMPTS):
            try:
                return await asyncio.to_thread(open_base, entry.collection.folder)
            except FileNotFoundError:
                continue  # a compaction replaced the base meanwhile: the new one
        raise ReplicaBehindError(
            f"collection {quoted(name)} was compacted while its base was opened; retry",
            self.settings.write_retry_after_s,
        )

    # Role changes

    async def follow(self, leader: str) -> None:
        """Follow ``leader`` from now on (a leader steps down; its copies that diverged are
        installed again from the new leader)."""
        leader = leader.rstrip("/")
        if leader == self.own_url:
            raise InvalidQueryError(f"leader: {leader} is this server", param="leader")
        self._require_collections()
        async with self._lock:
            await self._follow(leader)
        self._record_role()

    async def promote(self) -> None:
        """Become the leader (see the module docstring); :class:`PromotionRefusedError` when no
        majority grants the term (this server then goes on as before)."""
        self._require_collections()
        async with self._lock:
            if self.role == "leader":
                return
            previous_leader = self.state.leader if self.follower is not None else None
            if self.follower is not None:
                await self.follower.stop()
                self.follower = None
            members = [m for m in self.state.members if m.rstrip("/") != self.own_url]
            needed = self.needed("majority")
            term = self.state.term
            for _ in range(ELECTION_ROUNDS):
                # A member that knows a later term (an earlier candidate's) refuses this one:
                # ask again past it.
                term += 1
                await self._save(dataclasses.replace(self.state, term=term, voted_for=self.own_url))
                vote = Vote(term, self.own_url, copy_positions(self.live))
                ballots = await asyncio.gather(*(self._ask(m, vote) for m in members))
                granted = [ballot for ballot in ballots if ballot.granted]
                later = max((ballot.term for ballot in ballots), default=0)
                if 1 + len(granted) >= needed or later < term:
                    break
                term = later
            if 1 + len(granted) < needed:
                if previous_leader is not None:
                    self._start_follower(previous_leader)
                reasons = "; ".join(
                    f"{m}: {b.reason}" for m, b in zip(members, ballots, strict=True)
                )
                raise PromotionRefusedError(
                    f"{1 + len(granted)} of the {needed} replicas a majority needs granted term "
                    f"{term}; this server goes on as it was ({reasons or 'no member known'})"
                )
            for entry in self.live.entries:
                await entry.writer.on_thread(_beginning(term))
            await self._save(dataclasses.replace(self.state, leader=None, fenced=False))
            self._lead()
            assert self.hub is not None
            for member, ballot in zip(members, ballots, strict=True):
                if ballot.granted:
                    self.hub.grant_lease(ballot.replica, member)
        self._record_role()
        logger.info("promoted to leader of term %d", term)

    async def vote(self, vote: Vote) -> Ballot:
        """Grant ``vote`` or not (see the module docstring); granting, this server follows the
        candidate."""
        self._require_collections()
        async with self._lock:
            state = self.state
            reason = None
            if vote.term < state.term or (
                vote.term == state.term and state.voted_for not in (None, vote.candidate)
            ):
                reason = f"this replica knows term {state.term} and voted in it"
            elif vote.term == state.term and self.role == "leader":
                reason = f"this replica leads term {state.term}"
            else:
                reason = candidate_lacks(copy_positions(self.live), vote.positions)
            if reason is not None:
                return Ballot(False, state.term, state.replica_id, reason)
            await self._save(dataclasses.replace(state, term=vote.term, voted_for=vote.candidate))
            await self._follow(vote.candidate.rstrip("/"))
        self._record_role()
        return Ballot(True, vote.term, self.state.replica_id)

    # Status

    def answered_by(self) -> str | None:
        """The ``x-replica`` header of this server's answers: its URL, role and term (None:
        it keeps no live collections)."""
        if self.live.root is None:
            return None
        return f"{self.own_url}; role={self.role}; term={self.state.term}"

    def status(self) -> ReplicaStatus:
        """This server's place in the set."""
        now = time.monotonic()
        followers: tuple[tuple[str, str | None, float, Mapping[str, int]], ...] = ()
        if self.hub is not None:
            followers = tuple(
                (
                    seen.replica,
                    seen.url,
                    round(now - seen.seen, 3),
                    {name: after for name, (_, after) in seen.positions.items()},
                )
                for seen in self.hub.followers.values()
            )
        lag: dict[str, int] = {}
        last_error = None
        if self.follower is not None:
            progress = self.follower.progress
            last_error = progress.last_error
            for name, visible in progress.leader_visible.items():
                entry = self.live.get(name)
                lag[name] = max(0, visible - (0 if entry is None else entry.collection.visible_seq))
        members = self.hub.members() if self.hub is not None else self.state.members
        return ReplicaStatus(
            replica=self.state.replica_id,
            url=self.own_url,
            role=self.role,
            term=self.state.term,
            leader=self.own_url if self.role == "leader" else self.state.leader,
            set_size=self.settings.replica_set_size,
            members=tuple(members),
            collections=self.position(),
            followers=followers,
            lag=lag,
            last_error=last_error,
        )

    # Watching

    async def _watching(self) -> None:
        """Every second: refresh the gauges that no traffic refreshes, and find the leader of
        the latest term when this server's leader has gone silent (a follower) or no majority
        has followed it for a lease (a leader that may have been replaced)."""
        while True:
            await asyncio.sleep(WATCH_PERIOD_S)
            try:
                await self._look_around()
            except (LinkError, OSError) as exc:  # the next round tries again
                logger.warning("replica set: %s", exc)

    async def _look_around(self) -> None:
        now = time.monotonic()
        hub, follower = self.hub, self.follower
        lost = False
        if hub is not None:
            self.metrics.replication_followers.set(len(hub.following()))
            lost = not hub.has_quorum() and now - self._started > self.settings.leader_lease_s
        if follower is not None:
            last = follower.progress.last_answer
            silent = now - (self._started if last is None else last)
            for name, since in follower.progress.behind_since.items():
                self.metrics.replication_lag_seconds.labels(name).set(now - since)
            if silent > LEADER_SILENT_S:
                for name in follower.progress.leader_visible:
                    self.metrics.replication_lag_seconds.labels(name).set(silent)
            lost = silent > DISCOVER_AFTER_S
        if lost:
            await self._discover()

    async def _discover(self) -> None:
        """Follow the member that leads the latest term, if it is not the one followed."""
        members = [m for m in self.state.members if m.rstrip("/") != self.own_url]
        views = await asyncio.gather(*(self._status_of(m) for m in members))
        best: tuple[int, str] | None = None
        for member, view in zip(members, views, strict=True):
            leads = view is not None and view.role == "leader" and view.term >= self.state.term
            if leads and view is not None and (best is None or view.term > best[0]):
                best = (view.term, member.rstrip("/"))
        if best is None:
            return
        term, leader = best
        current = self.follower.leader if self.follower is not None else None
        if leader == current or (self.role == "leader" and term <= self.state.term):
            return
        logger.info("replica set: %s leads term %d; following it", leader, term)
        await self.follow(leader)

    async def _status_of(self, member: str) -> MemberView | None:
        try:
            return await self.link.status(member, CALL_TIMEOUT_S)
        except LinkError:
            return None

    # Inside

    def _require_collections(self) -> None:
        if self.live.root is None:
            raise WritesUnavailableError(
                "this server keeps no live collections: nothing to replicate"
            )

    def _lead(self) -> None:
        self.hub = LeaderHub(
            self.live,
            self.metrics,
            term=self.state.term,
            own_url=self.own_url,
            set_size=self.settings.replica_set_size,
            lease_s=self.settings.leader_lease_s,
        )

    async def _follow(self, leader: str) -> None:
        if self.follower is not None:
            await self.follower.stop()
            self.follower = None
        self.hub = None
        await self._save(dataclasses.replace(self.state, leader=leader, fenced=False))
        self._start_follower(leader)

    def _start_follower(self, leader: str) -> None:
        self.follower = Follower(
            self.live,
            self.link,
            self.metrics,
            leader=leader,
            replica=self.state.replica_id,
            url=self.own_url,
            term=lambda: self.state.term,
            on_answer=self._on_answer,
            on_moved=self._on_moved,
            max_bytes=self.settings.replication_batch_bytes,
        )
        self.follower.start()

    async def _on_answer(self, answer: FetchAnswer) -> None:
        state = self.state
        members = tuple(m for m in answer.members if m.rstrip("/") != self.own_url)
        members = (*members, self.own_url)
        if answer.term > state.term or members != state.members:
            voted = state.voted_for if answer.term == state.term else None
            await self._save(
                dataclasses.replace(
                    state, term=max(state.term, answer.term), voted_for=voted, members=members
                )
            )
            self._record_role()

    async def _on_moved(self, leader: str | None) -> None:
        if leader is not None and leader.rstrip("/") != self.own_url:
            asyncio.get_running_loop().create_task(self.follow(leader))

    async def _fence(self, term: int) -> None:
        async with self._lock:
            self.hub = None
            await self._save(
                dataclasses.replace(self.state, term=term, fenced=True, leader=None, voted_for=None)
            )
        self._record_role()
        logger.warning("fenced: a replica knows term %d", term)

    async def _ask(self, member: str, vote: Vote) -> Ballot:
        try:
            return await self.link.vote(member, vote, CALL_TIMEOUT_S)
        except LinkError as exc:
            return Ballot(False, 0, "", f"unreachable ({exc})")

    async def _save(self, state: ReplicaState) -> None:
        root = self.live.root
        assert root is not None
        await asyncio.to_thread(write_replica_state, root, state)
        self.state = state

    def _record_role(self) -> None:
        for role in ROLES:
            self.metrics.replication_role.labels(role).set(1 if role == self.role else 0)
        self.metrics.replication_term.set(self.state.term)


def _applied(
    live: LiveCollections, name: str, seq: int, confirmed: set[str] | None
) -> Callable[[], bool]:
    """Whether this copy of ``name`` holds ``seq`` (on a follower: and the leader confirmed
    that it goes on from its log, so that sequence number means the leader's record)."""

    def applied() -> bool:
        entry = live.get(name)
        if entry is None:
            return True
        held = entry.collection.visible_seq >= seq
        return held and (confirmed is None or name in confirmed)

    return applied


def _beginning(term: int) -> Callable[[LiveCollection], None]:
    def begin(collection: LiveCollection) -> None:
        collection.begin_term(term)

    return begin

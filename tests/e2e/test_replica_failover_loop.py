"""End to end, a failover loop over a replicated live collection: a leader and two followers
(real ``python -m service serve`` processes, each with its own collections folder, a replica set
of 3) while two writers upsert, patch, delete by ids and by filter with ``acks=majority`` and an
``Idempotency-Key`` per logical write (a write whose answer never came, or came 503 or 421, is
sent again with the same key to the current leader), and a reader searches every replica. Faults
at random:

- ``follower``: SIGKILL a follower, often compact the leader meanwhile (the follower then catches
  up by installing the leader's new base), restart it following the leader;
- ``leader``: SIGKILL the leader, promote the most advanced follower (the other if it is refused;
  now and then the one behind is asked first, and must be refused), restart the old leader on its
  folder without ``--follow``: it must refuse writes (503 no_quorum or 421 not_leader); then
  ``POST /v1/replication/follow`` makes it follow the new leader;
- ``both-followers``: SIGKILL one follower, then the other (writes wait for acknowledgements
  that cannot come: 503 replication_timeout, retried with the same key), restart both.

Now and then the leader is also asked to compact before a fault. After each fault, with the
writers stopped and every replica caught up with the leader:

1. every acknowledged upsert is on every replica, its vector byte-equal to the one sent (as the
   service normalises it), its metadata as written (patches included);
2. no acknowledged delete is undone;
3. no id twice in a search; the count is the model's on every replica;
4. every replica answers the same searches with the same ids in the same order;
5. a write whose client gave up (some do, at a failed attempt) is wholly there or wholly absent,
   the same on every replica; the model adopts what it finds;
6. no search answered anything but 200 or 503 at any time (503s and refused connections while a
   process is down or starting are fine; a 500 is not, nor a 404 while a follower installs).

A retried write is also checked: a delete answered with the first attempt's count (applied once),
and a write answered 503 replication_timeout answered later by the same leader with the same
sequence number.

``CRISSCROSS_FAILOVER_FAULTS`` sets the number of faults (30 by default),
``CRISSCROSS_FAILOVER_SEED`` the seed (random by default; printed, and named by every failure). The
seed fixes the schedule of faults and what the writers draw; where a fault lands among the writes
is timing. The report at the end: faults by kind, writes acknowledged, retries and why, abandoned
writes and how they settled, seconds per fault, promotion times, installs, searches per replica.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import random
import re
import statistics
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

import httpx
import pytest

from tests.e2e.replica_cluster import (
    Replica,
    ReplicaError,
    logs_of,
    start_all,
    stop_all,
    wait_caught_up,
)
from tests.e2e.test_live_crash_loop import State, Stored, Write, describe, normalised, vector_bytes

FAULTS_VARIABLE: Final = "CRISSCROSS_FAILOVER_FAULTS"
SEED_VARIABLE: Final = "CRISSCROSS_FAILOVER_SEED"
FAULTS: Final = int(os.environ.get(FAULTS_VARIABLE) or "30")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    # About 3 s a fault on 2 busy cores (restarts, promotion, catch-up, checks): room to spare.
    pytest.mark.timeout(max(600, 25 * FAULTS)),
]

COLLECTION: Final = "v"
DIM: Final = 8
WRITERS: Final = 2
POOL: Final = 120
"""Ids each writer draws from (``w<writer>-<n>``): one search of k=1000 returns everything."""
CATS: Final = 4
FULL_K: Final = 1000
BATCH: Final = (1, 8)
SET_SIZE: Final = 3
KINDS: Final = ("follower", "leader", "both-followers")
KIND_WEIGHTS: Final = (0.35, 0.40, 0.25)
SERVER_ENV: Final = {
    # A write whose acknowledgements cannot come (both followers down) is answered 503 after 1 s.
    "CRISSCROSS_ACK_TIMEOUT_S": "1",
    # Compact by themselves every few dozen rows too, the followers on their own thresholds.
    "CRISSCROSS_COMPACT_OWN_ROWS": "60",
}
FAULT_AFTER_S: Final = (0.1, 0.4)
"""Writes between the checks and the next fault."""
DOWN_S: Final = (0.05, 0.3)
"""How long a killed process stays down before the next step of its fault."""
BOTH_DOWN_S: Final = (0.3, 1.5)
WRITES_AFTER_S: Final = (0.1, 0.3)
"""Writes through the restored replica set before the writers stop and the checks run."""
COMPACT_SHARE: Final = 0.25
"""Rounds with a compaction of the leader before the fault (besides those of follower faults)."""
COMPACT_WHILE_DOWN_SHARE: Final = 0.6
ABANDON_SHARE: Final = 0.3
"""Writes whose client gives up at their first failed attempt (the rest retry until answered)."""
WRITE_PAUSE_S: Final = 0.005
RETRY_PAUSE_S: Final = 0.05
WRITE_DEADLINE_S: Final = 45.0
"""Longest a write may go unanswered while it is retried (the replica set is whole again within
seconds of any fault): past it the test fails."""
CATCH_UP_S: Final = 30.0
JOIN_TIMEOUT_S: Final = 60.0
PROMOTE_ROUNDS: Final = 6
BEHIND_FIRST_SHARE: Final = 0.5
"""Leader faults, where the followers' sequence numbers differ, that ask the one behind first."""
CLIENT_TIMEOUT: Final = httpx.Timeout(15.0, connect=2.0)
READ_TIMEOUT: Final = httpx.Timeout(10.0, connect=1.0)
READ_PAUSE_S: Final = 0.01
SLOW_READ_S: Final = 1.0
ACKS: Final = {"acks": "majority"}
IDEMPOTENCY: Final = "Idempotency-Key"
PROBE_ID: Final = "fence-probe"


def pool_ids(writer: int) -> list[str]:
    return [f"w{writer}-{n:03d}" for n in range(POOL)]


def cats(writer: int) -> list[str]:
    return [f"w{writer}-c{n}" for n in range(CATS)]


ALL_IDS: Final = [item for writer in range(WRITERS) for item in pool_ids(writer)]
ALL_CATS: Final = [value for writer in range(WRITERS) for value in cats(writer)]


class FailoverError(AssertionError):
    """A guarantee broken (raised by the writers and the reader too, reported by the main
    thread with the seed and the replicas' logs)."""


class Abandoned(Exception):  # noqa: N818 (a client's decision, not an error)
    """The writer gives up its write in flight (it ends its round; the checks settle it)."""


@dataclass
class Tally:
    """What the loop did, for the report."""

    acked: collections.Counter[str] = field(default_factory=collections.Counter)
    retries: collections.Counter[str] = field(default_factory=collections.Counter)
    """Why a write was sent again: its failed attempt's outcome."""
    retried_writes: int = 0
    abandoned: int = 0
    landed: int = 0
    not_landed: int = 0
    undecidable: int = 0
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    fault_s: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    round_s: list[float] = field(default_factory=list)
    promotions_s: list[float] = field(default_factory=list)
    """From the leader's SIGKILL to a follower's 200 on promote."""
    promote_calls_s: list[float] = field(default_factory=list)
    promotions_refused: collections.Counter[str] = field(default_factory=collections.Counter)
    """Refused promotions: of a follower behind the other, of the most advanced one."""
    behind_asked: int = 0
    """Promotions where the follower behind the other was asked first."""
    fenced_answers: collections.Counter[str] = field(default_factory=collections.Counter)
    compactions: collections.Counter[str] = field(default_factory=collections.Counter)
    restarts_s: list[float] = field(default_factory=list)
    catch_up_s: list[float] = field(default_factory=list)
    stop_s: list[float] = field(default_factory=list)
    verify_s: list[float] = field(default_factory=list)
    compact_s: list[float] = field(default_factory=list)
    slow_reads: list[str] = field(default_factory=list)
    """Checks' reads (with X-Min-Seq, on a replica that holds it) that took over SLOW_READ_S."""
    """From the writers' stop to their last write's answer (a retried one may take a while)."""
    searches: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    """(replica, status or "connection") → searches the reader sent."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, kind: str) -> None:
        with self.lock:
            self.acked[kind] += 1

    def retry(self, reason: str) -> None:
        with self.lock:
            self.retries[reason] += 1

    def searched(self, replica: str, outcome: str) -> None:
        with self.lock:
            self.searches[(replica, outcome)] += 1


@dataclass
class Cluster:
    """The three replicas and which one leads (an epoch counts the leaders)."""

    replicas: list[Replica]
    leader_index: int = 0
    epoch: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def leader(self) -> Replica:
        return self.replicas[self.leader_index]

    @property
    def followers(self) -> list[Replica]:
        return [r for i, r in enumerate(self.replicas) if i != self.leader_index]

    def current(self) -> tuple[str, int]:
        """The leader's URL and the epoch, read together."""
        with self.lock:
            return self.leader.url, self.epoch

    def lead(self, replica: Replica) -> None:
        with self.lock:
            self.leader_index = self.replicas.index(replica)
            self.epoch += 1


# -- the writers ---------------------------------------------------------------------------------


class Writer(threading.Thread):
    """One writer: its own ids and cat values, its model of them (exact while it runs: nobody
    else writes them and its writes go one at a time), and its write in flight, if any."""

    def __init__(
        self,
        index: int,
        model: State,
        written: set[str],
        seqs: list[int],
        tally: Tally,
        cluster: Cluster,
        stop: threading.Event,
        seed: int,
        key_prefix: str,
    ) -> None:
        super().__init__(name=f"failover-writer-{index}", daemon=True)
        self.index = index
        self.model = model
        self.written = written
        self.seqs = seqs
        self.tally = tally
        self.cluster = cluster
        self.stop = stop
        self.rng = random.Random(seed)
        self.key_prefix = key_prefix
        """Its keys are ``<key_prefix>-<n>``: unique to this run, round and writer."""
        self.ids = pool_ids(index)
        self.cats = cats(index)
        self.in_flight: Write | None = None
        self.failure: BaseException | None = None
        self.failure_trace = ""
        self.keys = 0

    def run(self) -> None:
        try:
            with httpx.Client(timeout=CLIENT_TIMEOUT) as client:
                while not self.stop.is_set():
                    self.step(client)
                    time.sleep(WRITE_PAUSE_S)
        except Abandoned:
            pass
        except BaseException as exc:  # reported by the main thread
            self.failure = exc
            self.failure_trace = traceback.format_exc()

    def fail(self, message: str) -> NoReturn:
        raise FailoverError(f"writer {self.index}: {message}")

    def step(self, client: httpx.Client) -> None:
        roll = self.rng.random()
        if roll < 0.50:
            self.upsert(client)
        elif roll < 0.70:
            self.patch(client)
        elif roll < 0.90:
            self.delete_ids(client)
        else:
            self.delete_filter(client)

    # -- what to write ----------------------------------------------------------------------------

    def alive(self) -> list[str]:
        return [item for item in self.ids if self.model.get(item) is not None]

    def pick(self, count: int, alive_share: float) -> list[str]:
        """``count`` distinct ids, about ``alive_share`` of them alive ones."""
        alive = self.alive()
        alive_set = set(alive)
        absent = [item for item in self.ids if item not in alive_set]
        chosen: list[str] = []
        for _ in range(count):
            source = alive if alive and self.rng.random() < alive_share else absent or alive
            if candidates := [item for item in source if item not in chosen]:
                chosen.append(self.rng.choice(candidates))
        return chosen

    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"cat": self.rng.choice(self.cats)}
        if self.rng.random() < 0.7:
            metadata["n"] = self.rng.randrange(-1000, 1000)
        return metadata

    def vector(self) -> list[float]:
        scale = self.rng.choice((1e-3, 1.0, 1e3))
        return [self.rng.gauss(0.0, 1.0) * scale for _ in range(DIM)]

    def model_cat(self, item: str) -> Any:
        stored = self.model.get(item)
        return None if stored is None else stored.metadata.get("cat")

    # -- sending, and sending again ---------------------------------------------------------------

    def send(self, client: httpx.Client, write: Write, method: str, path: str, body: Any) -> Any:
        """Send ``write`` to the leader with a key of its own until it is answered 200 (its
        JSON) or 404 (None), the same key every time; :class:`Abandoned` when the client gives
        it up at its first failed attempt (it stays in flight)."""
        self.keys += 1
        key = f"{self.key_prefix}-{self.keys}"
        self.in_flight = write
        self.written.update(write.after)
        give_up = self.rng.random() < ABANDON_SHARE
        started = time.monotonic()
        timed_out: tuple[int, int] | None = None
        """(x-seq, epoch) of a 503 replication_timeout: the leader holds the write there."""
        outcomes: list[str] = []
        for attempt in itertools.count():
            url, epoch = self.cluster.current()
            try:
                response = client.request(
                    method, url + path, params=ACKS, headers={IDEMPOTENCY: key}, json=body
                )
            except httpx.TransportError as exc:
                outcome = f"connection ({type(exc).__name__})"
            else:
                status = response.status_code
                if status == 200:
                    answer = response.json()
                    seq = int(answer["seq"])
                    if timed_out is not None and timed_out[1] == epoch and timed_out[0] != seq:
                        self.fail(
                            f"{write.label} (key {key}): 503 replication_timeout said seq "
                            f"{timed_out[0]}, the same leader's 200 to its retry seq {seq}"
                        )
                    with self.tally.lock:
                        self.seqs.append(seq)
                        if attempt:
                            self.tally.retried_writes += 1
                    return answer
                if status == 404:
                    return None
                if status not in (421, 503):
                    self.fail(f"{write.label} (key {key}) at {url}: HTTP {status} {response.text}")
                code = _error_code(response)
                outcome = f"{status} {code}"
                if code == "replication_timeout":
                    timed_out = (int(response.headers["x-seq"]), epoch)
            outcomes.append(outcome)
            if give_up:
                with self.tally.lock:
                    self.tally.abandoned += 1
                raise Abandoned
            if time.monotonic() - started > WRITE_DEADLINE_S:
                self.fail(
                    f"{write.label} (key {key}) unanswered after {attempt + 1} attempts in "
                    f"{WRITE_DEADLINE_S} s: {collections.Counter(outcomes)}"
                )
            self.tally.retry(outcome.split(" (")[0])
            time.sleep(RETRY_PAUSE_S)
        raise AssertionError("unreachable")

    def acknowledged(self, write: Write, kind: str) -> None:
        self.model.update(write.after)
        self.in_flight = None
        self.tally.ack(kind)

    # -- the writes -----------------------------------------------------------------------------

    def upsert(self, client: httpx.Client) -> None:
        ids = self.pick(self.rng.randint(*BATCH), alive_share=0.4)
        items: list[dict[str, Any]] = []
        after: State = {}
        for item in ids:
            values, metadata = self.vector(), self.metadata()
            items.append({"id": item, "vector": values, "metadata": metadata})
            after[item] = Stored(normalised(values).tobytes(), metadata)
        write = Write(f"upsert {ids}", {item: self.model.get(item) for item in ids}, after)
        answer = self.send(
            client, write, "POST", f"/v1/collections/{COLLECTION}/items", {"items": items}
        )
        if answer is None or answer["upserted"] != len(ids):
            self.fail(f"{write.label}: answered {answer}")
        self.acknowledged(write, "upsert")

    def patch(self, client: httpx.Client) -> None:
        (item,) = self.pick(1, alive_share=0.9)
        current = self.model.get(item)
        change: dict[str, Any] = {}
        roll = self.rng.random()
        if roll < 0.4:
            change["n"] = self.rng.randrange(-1000, 1000)
        elif roll < 0.7:
            change["cat"] = self.rng.choice(self.cats)
        elif roll < 0.85:
            change["n"] = None
        else:
            change = self.metadata()
        merge = self.rng.random() < 0.8
        after: Stored | None = None
        if current is not None:
            merged: dict[str, Any] = dict(current.metadata) if merge else {}
            for name, value in change.items():
                if value is None:
                    merged.pop(name, None)
                else:
                    merged[name] = value
            after = Stored(current.vector, merged)
        write = Write(f"patch {item} {change} merge={merge}", {item: current}, {item: after})
        answer = self.send(
            client,
            write,
            "PATCH",
            f"/v1/collections/{COLLECTION}/items/{item}",
            {"metadata": change, "merge": merge},
        )
        if (answer is None) != (current is None):
            self.fail(f"{write.label}: answered {answer} for an item the model has as {current}")
        self.acknowledged(write, "patch" if current is not None else "patch-404")

    def delete_ids(self, client: httpx.Client) -> None:
        ids = self.pick(self.rng.randint(*BATCH), alive_share=0.8)
        before = {item: self.model.get(item) for item in ids}
        write = Write(f"delete ids {ids}", before, dict.fromkeys(ids))
        answer = self.send(
            client, write, "POST", f"/v1/collections/{COLLECTION}/items/delete", {"ids": ids}
        )
        alive = sum(stored is not None for stored in before.values())
        # A retry of a delete that was applied is answered with the first count, not 0.
        if answer is None or answer["deleted"] != alive:
            self.fail(f"{write.label}: answered {answer}, {alive} of them alive")
        self.acknowledged(write, "delete-ids")

    def delete_filter(self, client: httpx.Client) -> None:
        cat = self.rng.choice(self.cats)
        kept = [item for item in self.alive() if self.model_cat(item) == cat]
        write = Write(
            f"delete filter cat={cat} (model: {kept})",
            {item: self.model.get(item) for item in kept},
            dict.fromkeys(kept),
        )
        body = {"filter": {"field": "cat", "eq": cat}}
        answer = self.send(
            client, write, "POST", f"/v1/collections/{COLLECTION}/items/delete", body
        )
        if answer is None or answer["deleted"] != len(kept):
            self.fail(f"{write.label}: answered {answer}")
        self.acknowledged(write, "delete-filter")


def _error_code(response: httpx.Response) -> str:
    with contextlib.suppress(ValueError, KeyError, TypeError):
        return str(response.json()["error"]["code"])
    return "?"


# -- the reader ----------------------------------------------------------------------------------


class Reader(threading.Thread):
    """Searches every running replica in turn for the whole test, counting answers per replica;
    another status than 200 and 503, or a page with an id twice or an id nobody writes, is a
    failure."""

    def __init__(self, cluster: Cluster, tally: Tally, stop: threading.Event, seed: int) -> None:
        super().__init__(name="failover-reader", daemon=True)
        self.cluster = cluster
        self.tally = tally
        self.stop = stop
        self.rng = random.Random(seed)
        self.failures: list[str] = []

    def run(self) -> None:
        try:
            with httpx.Client(timeout=READ_TIMEOUT) as client:
                for replica in itertools.cycle(self.cluster.replicas):
                    if self.stop.is_set():
                        return
                    if replica.up:
                        self.search(client, replica)
                    time.sleep(READ_PAUSE_S)
        except BaseException as exc:  # reported by the main thread
            self.failures.append(f"the reader stopped: {exc!r}\n{traceback.format_exc()}")

    def search(self, client: httpx.Client, replica: Replica) -> None:
        cat = self.rng.choice(ALL_CATS) if self.rng.random() < 0.3 else None
        body = search_body([self.rng.gauss(0.0, 1.0) for _ in range(DIM)], cat)
        try:
            response = client.post(f"{replica.url}/v1/search", json=body)
        except httpx.TransportError:
            self.tally.searched(replica.name, "connection")
            return
        status = response.status_code
        self.tally.searched(
            replica.name, f"503 {_error_code(response)}" if status == 503 else str(status)
        )
        if status == 200:
            problems = page_problems(response.json()["results"], cat)
            if problems:
                self.failures.append(f"search on {replica.name} {body}: {'; '.join(problems)}")
        elif status != 503:
            # A 5xx but 503 is a defect; so is a 404 (a follower serves its old copy of a
            # collection while it installs a new one) or another 4xx (the body is valid).
            self.failures.append(f"search on {replica.name}: HTTP {status} {response.text}")


def search_body(query: Sequence[float], cat: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"query": {"vector": list(query)}, "collection": COLLECTION, "k": FULL_K}
    if cat is not None:
        body["filter"] = {"field": "cat", "eq": cat}
    return body


def page_problems(results: Sequence[Mapping[str, Any]], cat: str | None) -> list[str]:
    """What is wrong with a page whatever the model: an id twice, an id no writer uses, a hit
    outside the filter."""
    problems = []
    ids = [hit["id"] for hit in results]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"ids twice: {twice}")
    if phantoms := sorted(set(ids) - set(ALL_IDS)):
        problems.append(f"ids no request wrote: {phantoms}")
    if cat is not None and (
        outside := [h["id"] for h in results if h["metadata"].get("cat") != cat]
    ):
        problems.append(f"hits outside the filter cat={cat}: {outside}")
    return problems


# -- the loop ------------------------------------------------------------------------------------


@dataclass
class Loop:
    """The replica set, the model and the report of one run."""

    cluster: Cluster
    seed: int
    rng: random.Random
    tally: Tally = field(default_factory=Tally)
    models: list[State] = field(default_factory=lambda: [{} for _ in range(WRITERS)])
    written: set[str] = field(default_factory=set)
    seqs: list[int] = field(default_factory=list)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    round: int = 0
    events: list[str] = field(default_factory=list)
    """What the main thread did, latest last (named by a failure)."""
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=CLIENT_TIMEOUT))
    stops: list[threading.Event] = field(default_factory=list)
    """The writers' and the reader's stop events: set on a failure, so no thread outlives it."""

    def note(self, event: str) -> None:
        self.events.append(f"round {self.round}: {event}")

    def fail(self, message: str) -> NoReturn:
        for stop in self.stops:
            stop.set()
        logs = logs_of(self.cluster.replicas)
        for replica in self.cluster.replicas:
            replica.kill()
        events = "\n".join(self.events[-25:])
        pytest.fail(
            f"seed {self.seed} (rerun with {SEED_VARIABLE}={self.seed}), round {self.round}, "
            f"leader {self.cluster.leader.name}: {message}\n--- last events ---\n{events}\n{logs}",
            pytrace=False,
        )

    # -- setting up -------------------------------------------------------------------------------

    def start(self) -> None:
        """The leader (r0), its followers, and the collection, on every replica."""
        try:
            self.set_up()
        except (ReplicaError, httpx.TransportError) as exc:
            self.fail(f"setting up: {exc!r}")

    def set_up(self) -> None:
        leader, followers = self.cluster.leader, self.cluster.followers
        self.tally.restarts_s.append(leader.start())
        self.tally.restarts_s += start_all(followers, follow=leader.url)
        create = {"name": COLLECTION, "dim": DIM, "fields": {"cat": "string", "n": "integer"}}
        deadline = time.monotonic() + CATCH_UP_S
        while True:  # the leader takes writes once a majority follows it
            response = self.client.post(f"{leader.url}/v1/collections", json=create)
            if response.status_code == 201:
                break
            if response.status_code != 503 or time.monotonic() > deadline:
                self.fail(f"create: HTTP {response.status_code} {response.text}")
            time.sleep(0.05)
        wait_caught_up(self.client, leader, followers, COLLECTION, CATCH_UP_S)

    # -- the faults -------------------------------------------------------------------------------

    def compact(self, why: str) -> None:
        leader = self.cluster.leader
        started = time.monotonic()
        response = self.client.post(f"{leader.url}/v1/collections/{COLLECTION}/compact")
        if response.status_code != 200:
            self.fail(f"compact on {leader.name}: HTTP {response.status_code} {response.text}")
        self.tally.compactions[why] += 1
        self.tally.compact_s.append(time.monotonic() - started)
        self.note(
            f"compacted {leader.name} ({why}) at seq {response.json()['seq']} in "
            f"{self.tally.compact_s[-1]:.2f} s"
        )

    def down_for(self, span: tuple[float, float]) -> None:
        time.sleep(self.rng.uniform(*span))

    def restart(self, replicas: Sequence[Replica], follow: str | None) -> None:
        self.tally.restarts_s += start_all(replicas, follow=follow)
        self.note(f"restarted {[r.name for r in replicas]} following {follow}")

    def kill(self, replica: Replica) -> None:
        replica.kill()
        self.note(f"SIGKILLed {replica.name}")

    def follower_fault(self) -> None:
        follower = self.rng.choice(self.cluster.followers)
        self.kill(follower)
        self.down_for(DOWN_S)
        if self.rng.random() < COMPACT_WHILE_DOWN_SHARE:
            self.compact("while a follower was down")
            self.down_for(DOWN_S)
        self.restart([follower], self.cluster.leader.url)

    def both_followers_fault(self) -> None:
        first, second = self.rng.sample(self.cluster.followers, 2)
        self.kill(first)
        self.down_for(DOWN_S)
        self.kill(second)
        self.down_for(BOTH_DOWN_S)
        if self.rng.random() < COMPACT_WHILE_DOWN_SHARE / 2:
            self.compact("while both followers were down")
        self.restart([first, second], self.cluster.leader.url)

    def leader_fault(self) -> None:
        old = self.cluster.leader
        self.kill(old)
        killed = time.monotonic()
        self.down_for(DOWN_S)
        new = self.promote([r for r in self.cluster.replicas if r is not old])
        self.tally.promotions_s.append(time.monotonic() - killed)
        self.cluster.lead(new)
        (other,) = [r for r in self.cluster.followers if r is not old]
        status = other.status(self.client)
        if status["role"] != "follower" or status["leader"] != new.url:
            self.fail(f"{other.name} did not follow {new.name} after its promotion: {status}")
        # The old leader comes back on its folder without --follow: leader of its old term,
        # followed by nobody, it must refuse writes.
        self.restart([old], None)
        self.refuses_writes(old)
        response = self.client.post(
            f"{old.url}/v1/replication/follow", json={"leader": new.url}, timeout=CLIENT_TIMEOUT
        )
        if response.status_code != 200 or response.json()["role"] != "follower":
            self.fail(f"follow on {old.name}: HTTP {response.status_code} {response.text}")
        self.note(f"{old.name} follows {new.name}")

    def promote(self, candidates: Sequence[Replica]) -> Replica:
        """Promote the most advanced follower of ``candidates`` (the other when it is refused);
        the new leader. When their sequence numbers differ, the one behind is now and then
        asked first, as a careless operator would: it must be refused (its term would lose the
        acknowledged writes only the other holds)."""
        refusals: list[str] = []
        for attempt in range(PROMOTE_ROUNDS):
            seqs = {
                r.name: r.status(self.client)["collections"].get(COLLECTION, -1) for r in candidates
            }
            ordered = sorted(candidates, key=lambda r: (-seqs[r.name], self.rng.random()))
            behind = [r for r in ordered if seqs[r.name] < seqs[ordered[0].name]]
            if attempt == 0 and behind and self.rng.random() < BEHIND_FIRST_SHARE:
                ordered = [*behind, *[r for r in ordered if r not in behind]]
                self.tally.behind_asked += 1
            for candidate in ordered:
                started = time.monotonic()
                response = self.client.post(
                    f"{candidate.url}/v1/replication/promote", timeout=CLIENT_TIMEOUT
                )
                self.tally.promote_calls_s.append(time.monotonic() - started)
                if response.status_code == 200 and response.json()["role"] == "leader":
                    if candidate in behind:
                        self.fail(
                            f"{candidate.name} was promoted though it is behind (seqs {seqs}): "
                            f"{response.json()}"
                        )
                    self.note(f"promoted {candidate.name} (seqs {seqs}): {response.json()}")
                    return candidate
                if response.status_code != 409 or _error_code(response) != "promotion_refused":
                    self.fail(
                        f"promote {candidate.name}: HTTP {response.status_code} {response.text}"
                    )
                self.tally.promotions_refused[
                    "behind" if candidate in behind else "most advanced"
                ] += 1
                refusals.append(f"{candidate.name} (seqs {seqs}): {response.json()}")
                self.note(f"promotion of {candidate.name} refused (seqs {seqs}): {response.text}")
            time.sleep(0.1)
        return self.fail(f"no follower could be promoted: {refusals}")

    def refuses_writes(self, old: Replica) -> None:
        """A write to the replaced leader is refused (503 no_quorum, or 421 when fenced)."""
        response = self.client.post(
            f"{old.url}/v1/collections/{COLLECTION}/items/delete",
            params=ACKS,
            headers={IDEMPOTENCY: f"{self.run_id}-probe-{self.round}"},
            json={"ids": [PROBE_ID]},
        )
        outcome = f"{response.status_code} {_error_code(response)}"
        if outcome not in ("503 no_quorum", "421 not_leader"):
            self.fail(f"the replaced leader {old.name} answered a write {outcome}: {response.text}")
        self.tally.fenced_answers[outcome] += 1

    # -- one round ------------------------------------------------------------------------------

    def run_round(self, kind: str) -> None:
        stop = threading.Event()
        self.stops.append(stop)
        writers = [
            Writer(
                index,
                self.models[index],
                self.written,
                self.seqs,
                self.tally,
                self.cluster,
                stop,
                self.rng.randrange(2**63),
                f"{self.run_id}-r{self.round}-w{index}",
            )
            for index in range(WRITERS)
        ]
        started = time.monotonic()
        for writer in writers:
            writer.start()
        time.sleep(self.rng.uniform(*FAULT_AFTER_S))
        if self.rng.random() < COMPACT_SHARE:
            self.compact("before a fault")
        fault: dict[str, Callable[[], None]] = {
            "follower": self.follower_fault,
            "leader": self.leader_fault,
            "both-followers": self.both_followers_fault,
        }
        fault_started = time.monotonic()
        self.note(f"fault {kind} (leader {self.cluster.leader.name})")
        try:
            fault[kind]()
        except (ReplicaError, httpx.TransportError) as exc:
            self.fail(f"during the {kind} fault: {exc!r}")
        self.tally.fault_s[kind].append(time.monotonic() - fault_started)
        self.tally.faults[kind] += 1
        time.sleep(self.rng.uniform(*WRITES_AFTER_S))
        stop.set()
        stopping = time.monotonic()
        for writer in writers:
            writer.join(JOIN_TIMEOUT_S)
            if writer.is_alive():
                self.fail(f"writer {writer.index} still runs {JOIN_TIMEOUT_S} s after the stop")
            if writer.failure is not None:
                self.fail(f"{writer.failure}\n{writer.failure_trace}")
        caught = time.monotonic()
        self.tally.stop_s.append(caught - stopping)
        try:
            statuses = wait_caught_up(
                self.client, self.cluster.leader, self.cluster.followers, COLLECTION, CATCH_UP_S
            )
        except ReplicaError as exc:
            self.fail(str(exc))
        self.tally.catch_up_s.append(time.monotonic() - caught)
        seq = int(statuses[self.cluster.leader.name]["collections"][COLLECTION])
        checked = time.monotonic()
        self.verify(writers, seq)
        self.tally.verify_s.append(time.monotonic() - checked)
        self.tally.round_s.append(time.monotonic() - started)

    # -- the checks -------------------------------------------------------------------------------

    def read_items(self, replica: Replica, seq: int) -> tuple[State, Mapping[str, Any]]:
        """Every pool id as ``replica`` holds it, and the collection's info there."""
        headers = {"X-Min-Seq": str(seq)}
        started = time.monotonic()
        response = self.client.post(
            f"{replica.url}/v1/collections/{COLLECTION}/items/get",
            json={"ids": ALL_IDS, "include_vectors": True},
            headers=headers,
        )
        self.timed_read(replica, "get", started)
        if response.status_code != 200:
            self.fail(f"get on {replica.name}: HTTP {response.status_code} {response.text}")
        found: State = dict.fromkeys(ALL_IDS)
        for item in response.json()["items"]:
            if item["id"] not in found:
                self.fail(f"get on {replica.name} returned an id it was not asked for: {item}")
            found[item["id"]] = Stored(vector_bytes(item["vector"]), item["metadata"])
        info = self.client.get(f"{replica.url}/v1/collections/{COLLECTION}", headers=headers)
        if info.status_code != 200:
            self.fail(f"info on {replica.name}: HTTP {info.status_code} {info.text}")
        return found, info.json()

    def timed_read(self, replica: Replica, what: str, started: float) -> None:
        """Note a read of the checks that took over :data:`SLOW_READ_S` (the replica held what
        X-Min-Seq asked for when it came: it should answer at once)."""
        if (seconds := time.monotonic() - started) > SLOW_READ_S:
            role = "leader" if replica is self.cluster.leader else "follower"
            self.tally.slow_reads.append(
                f"round {self.round} {what} on {replica.name} ({role}) {seconds:.2f} s"
            )

    def settle(self, writer: Writer, found: State) -> None:
        """The writer's abandoned write, decided from what the leader holds: wholly applied or
        wholly absent (anything else fails); the model adopts it."""
        write, writer.in_flight = writer.in_flight, None
        if write is None:
            return
        actual = {item: found[item] for item in write.after}
        if write.before == write.after:
            self.tally.undecidable += 1
        elif actual == write.after:
            self.tally.landed += 1
            writer.model.update(write.after)
        elif actual == write.before:
            self.tally.not_landed += 1
        else:
            lines = [
                f"  {item}: before {describe(write.before[item])}; after "
                f"{describe(write.after[item])}; found {describe(actual[item])}"
                for item in write.after
            ]
            self.fail(
                f"writer {writer.index}'s abandoned {write.label} is partly applied on the "
                f"leader {self.cluster.leader.name}:\n" + "\n".join(lines)
            )
        self.note(f"settled writer {writer.index}'s abandoned {write.label}")

    def verify(self, writers: Sequence[Writer], seq: int) -> None:
        """Every replica against the model (abandoned writes settled first), and against each
        other."""
        replicas = [self.cluster.leader, *self.cluster.followers]
        held = {replica.name: self.read_items(replica, seq) for replica in replicas}
        for writer in writers:
            self.settle(writer, held[self.cluster.leader.name][0])
        model: State = {}
        for own in self.models:
            model.update(own)
        alive = {item for item, stored in model.items() if stored is not None}
        problems = []
        for replica in replicas:
            found, info = held[replica.name]
            problems += [f"{replica.name}: {p}" for p in self.item_problems(model, found)]
            if info["count"] != len(alive):
                problems.append(f"{replica.name}: count {info['count']}, the model {len(alive)}")
            if info["seq"] != seq:
                problems.append(f"{replica.name}: seq {info['seq']}, the leader's {seq}")
        if self.seqs and max(self.seqs) > seq:
            problems.append(
                f"the leader is at seq {seq}, a write was acknowledged at {max(self.seqs)}"
            )
        problems += self.search_problems(replicas, model, alive, seq)
        if problems:
            self.fail(f"{len(problems)} problems after the fault:\n" + "\n".join(problems[:40]))

    def item_problems(self, model: State, found: State) -> list[str]:
        problems = []
        for item in ALL_IDS:
            expected, actual = model.get(item), found[item]
            if expected == actual:
                continue
            if expected is None:
                kind = "deleted (acknowledged) but back" if item in self.written else "phantom"
                problems.append(f"{item}: {kind}: {describe(actual)}")
            elif actual is None:
                problems.append(f"{item}: acknowledged write lost: expected {describe(expected)}")
            elif actual.vector != expected.vector:
                problems.append(
                    f"{item}: vector differs: expected {describe(expected)}, found "
                    f"{describe(actual)}"
                )
            else:
                problems.append(
                    f"{item}: metadata differs: expected {dict(expected.metadata)}, found "
                    f"{dict(actual.metadata)}"
                )
        return problems

    def search_problems(
        self, replicas: Sequence[Replica], model: State, alive: set[str], seq: int
    ) -> list[str]:
        """The whole collection and each cat value searched on every replica: exactly the
        model's ids, none twice, the same ids in the same order everywhere."""
        query = [self.rng.gauss(0.0, 1.0) for _ in range(DIM)]
        problems = []
        for cat in (None, *ALL_CATS):
            expected = {
                item
                for item in alive
                if cat is None or ((s := model[item]) is not None and s.metadata.get("cat") == cat)
            }
            pages: dict[str, list[str]] = {}
            for replica in replicas:
                started = time.monotonic()
                response = self.client.post(
                    f"{replica.url}/v1/search",
                    json=search_body(query, cat),
                    headers={"X-Min-Seq": str(seq)},
                )
                self.timed_read(replica, f"search cat={cat}", started)
                if response.status_code != 200:
                    self.fail(
                        f"search on {replica.name}: HTTP {response.status_code} {response.text}"
                    )
                results = response.json()["results"]
                where = f"{replica.name} search cat={cat}"
                problems += [f"{where}: {p}" for p in page_problems(results, cat)]
                ids = [hit["id"] for hit in results]
                if back := sorted(set(ids) - expected):
                    problems.append(f"{where}: ids the model does not hold there: {back}")
                if lost := sorted(expected - set(ids)):
                    problems.append(f"{where}: acknowledged ids missing: {lost}")
                problems += [
                    f"{where}: {hit['id']} has metadata {hit['metadata']}"
                    for hit in results
                    if (s := model.get(hit["id"])) is not None and hit["metadata"] != s.metadata
                ]
                pages[replica.name] = ids
            reference = pages[replicas[0].name]
            for name, ids in pages.items():
                if ids != reference:
                    first = next(
                        (
                            i
                            for i, pair in enumerate(zip(ids, reference, strict=False))
                            if pair[0] != pair[1]
                        ),
                        min(len(ids), len(reference)),
                    )
                    problems.append(
                        f"search cat={cat}: {name} answers other ids than {replicas[0].name} "
                        f"from rank {first}: {ids[first : first + 5]} vs "
                        f"{reference[first : first + 5]}"
                    )
        return problems

    # -- the report -----------------------------------------------------------------------------

    def report(self, elapsed_s: float) -> str:
        tally = self.tally
        by_replica: dict[str, dict[str, int]] = collections.defaultdict(dict)
        for (replica, outcome), count in sorted(tally.searches.items()):
            by_replica[replica][outcome] = count
        fault_times = {
            kind: f"median {statistics.median(times):.2f} max {max(times):.2f}"
            for kind, times in sorted(tally.fault_s.items())
        }
        installs = collections.Counter(
            reason
            for replica in self.cluster.replicas
            for reason in re.findall(
                rf"installing {COLLECTION} from \S+: (.+)",
                replica.log_path.read_text(errors="replace"),
            )
        )
        return "\n".join(
            [
                f"failover loop: seed {self.seed}, {sum(tally.faults.values())} faults in "
                f"{elapsed_s:.1f} s: {dict(sorted(tally.faults.items()))}",
                f"  writes acknowledged {sum(tally.acked.values())}: "
                f"{dict(sorted(tally.acked.items()))}; last seq {max(self.seqs, default=0)}",
                f"  retries {sum(tally.retries.values())} ({tally.retried_writes} writes "
                f"answered after a retry): {dict(sorted(tally.retries.items()))}",
                f"  abandoned {tally.abandoned} (landed {tally.landed}, absent "
                f"{tally.not_landed}, no trace either way {tally.undecidable})",
                f"  seconds per fault: {fault_times}; per round (fault, catch-up, checks) "
                f"median {statistics.median(tally.round_s):.2f}",
                f"  promotions: {len(tally.promotions_s)}, kill to promoted s "
                f"{_spread(tally.promotions_s)}, promote call s {_spread(tally.promote_calls_s)}, "
                f"behind one asked first {tally.behind_asked}, refused "
                f"{dict(tally.promotions_refused)}; the replaced leader answered writes "
                f"{dict(tally.fenced_answers)}",
                f"  restart to ready s {_spread(tally.restarts_s)}; catch-up s "
                f"{_spread(tally.catch_up_s)}; writers stopped s {_spread(tally.stop_s)}; "
                f"checks s {_spread(tally.verify_s)}",
                f"  compactions asked {dict(tally.compactions)}, s {_spread(tally.compact_s)}; "
                f"installs {dict(installs)}",
                f"  searches per replica: {dict(by_replica)}",
                f"  checks' reads slower than {SLOW_READ_S} s on a caught-up replica: "
                f"{len(tally.slow_reads)} {tally.slow_reads[:10]}",
            ]
        )


def _spread(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"min {min(values):.2f} median {statistics.median(values):.2f} max {max(values):.2f}"


def schedule(rng: random.Random, count: int) -> list[str]:
    """``count`` fault kinds: every kind once first (in a random order), then at random."""
    first = rng.sample(KINDS, len(KINDS))
    rest = rng.choices(KINDS, weights=KIND_WEIGHTS, k=max(0, count - len(KINDS)))
    return (first + rest)[:count]


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Loop]:
    seed = int(os.environ.get(SEED_VARIABLE) or random.SystemRandom().randrange(2**32))
    print(f"failover loop: seed {seed} ({SEED_VARIABLE}={seed} reruns it), {FAULTS} faults")
    replicas = [
        Replica(f"r{index}", tmp_path / f"r{index}", SET_SIZE, env=SERVER_ENV)
        for index in range(SET_SIZE)
    ]
    loop = Loop(Cluster(replicas), seed, random.Random(seed))
    try:
        yield loop
    finally:
        loop.client.close()
        for replica in replicas:
            replica.kill()


def test_acknowledged_writes_survive_failovers_on_every_replica(loop: Loop) -> None:
    started = time.monotonic()
    loop.start()
    stop_reading = threading.Event()
    loop.stops.append(stop_reading)
    reader = Reader(loop.cluster, loop.tally, stop_reading, loop.rng.randrange(2**63))
    reader.start()
    try:
        for round_, kind in enumerate(schedule(loop.rng, FAULTS), start=1):
            loop.round = round_
            loop.run_round(kind)
            if reader.failures:
                loop.fail("the reader saw:\n" + "\n".join(reader.failures[:20]))
            print(
                f"  round {round_}: {kind} in {loop.tally.fault_s[kind][-1]:.2f} s, leader now "
                f"{loop.cluster.leader.name}, round {loop.tally.round_s[-1]:.2f} s (writers "
                f"stopped in {loop.tally.stop_s[-1]:.2f} s, checks {loop.tally.verify_s[-1]:.2f} s)"
            )
    finally:
        stop_reading.set()
        reader.join(JOIN_TIMEOUT_S)
    if reader.failures:
        loop.fail("the reader saw:\n" + "\n".join(reader.failures[:20]))
    codes = stop_all(loop.cluster.replicas)
    print(loop.report(time.monotonic() - started))
    if any(code != 0 for code in codes.values()):
        loop.fail(f"exit codes on SIGTERM: {codes}")
    assert sum(loop.tally.acked.values()) > FAULTS, "too few acknowledged writes to mean much"
    server_errors = {k: n for k, n in loop.tally.searches.items() if k[1].startswith("5")}
    assert all(outcome.startswith("503 ") for _, outcome in server_errors), server_errors

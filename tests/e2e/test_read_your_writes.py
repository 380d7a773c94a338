"""End to end, what a client that writes to the leader and reads from a follower sees: a leader
and two followers (real ``python -m service serve`` processes, a replica set of 2), one with the
default ``follower_reads=leader``, one with ``follower_reads=local``. Each probe upserts one new
item on the leader with ``acks=leader`` (the leader's fsync, nothing waited for on the followers)
and reads it back from a follower at once:

1. from the ``follower_reads=leader`` follower, no header: found in every probe (the follower asks
   the leader what it has answered before it reads);
2. from the ``local`` follower, no header, polled until found: the replication lag, from the
   leader's 200 to the follower finding the id (p50, p99, max printed; half as many probes: a
   measurement, not a guarantee), and how often the first read missed (what a client without
   X-Min-Seq sees there);
3. from the ``local`` follower with ``X-Min-Seq: <the write's seq>``: found in every probe.

``CRISSCROSS_RYW_PROBES`` sets the probes of phases 1 and 3 (2,000 by default; e.g. 10,000 for the
full measurement). A probe costs about a leader's fsync and a follower's (some 10 ms on 2 busy
cores).
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from tests.e2e.replica_cluster import Replica, logs_of, start_all, stop_all, wait_caught_up

PROBES_VARIABLE: Final = "CRISSCROSS_RYW_PROBES"
PROBES: Final = int(os.environ.get(PROBES_VARIABLE) or "2000")
LAG_PROBES: Final = max(1, PROBES // 2)

pytestmark = [
    pytest.mark.e2e,
    # About 10 ms a probe and phase on 2 busy cores, three phases: room for slower machines.
    pytest.mark.timeout(max(300, PROBES // 20)),
]

COLLECTION: Final = "ryw"
DIM: Final = 8
SET_SIZE: Final = 2
LAG_POLL_S: Final = 0.0005
"""Pause between two reads of the local follower while the id is not there yet."""
LAG_BOUND_S: Final = 10.0
"""Longest a write may take to reach the local follower before the test fails."""
CATCH_UP_S: Final = 30.0
CLIENT_TIMEOUT: Final = httpx.Timeout(15.0, connect=2.0)
QUIET: Final = {"CRISSCROSS_LOG_LEVEL": "warning"}
"""No access line per request: tens of thousands of them would cost the probes' time."""


@dataclass(frozen=True)
class ReadYourWritesSet:
    """The leader, its follower_reads=leader follower and its follower_reads=local one."""

    leader: Replica
    follower: Replica
    local: Replica

    @property
    def all(self) -> tuple[Replica, Replica, Replica]:
        return self.leader, self.follower, self.local


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReadYourWritesSet]:
    """Three running replicas, the collection created on the leader and copied by both
    followers; stopped with SIGTERM afterwards (each must exit 0)."""
    cluster = ReadYourWritesSet(
        Replica("leader", tmp_path / "leader", SET_SIZE, env=QUIET),
        Replica("follower", tmp_path / "follower", SET_SIZE, env=QUIET),
        Replica(
            "local",
            tmp_path / "local",
            SET_SIZE,
            env={**QUIET, "CRISSCROSS_FOLLOWER_READS": "local"},
        ),
    )
    try:
        cluster.leader.start()
        start_all([cluster.follower, cluster.local], follow=cluster.leader.url)
        with httpx.Client(base_url=cluster.leader.url, timeout=CLIENT_TIMEOUT) as client:
            create = {"name": COLLECTION, "dim": DIM, "fields": {"cat": "string"}}
            deadline = time.monotonic() + CATCH_UP_S
            while (response := client.post("/v1/collections", json=create)).status_code != 201:
                # 503 no_quorum until the followers' first fetches reach the leader.
                assert response.status_code == 503, response.text
                assert time.monotonic() < deadline, f"create: {response.text}"
                time.sleep(0.05)
            wait_caught_up(
                client, cluster.leader, [cluster.follower, cluster.local], COLLECTION, CATCH_UP_S
            )
        yield cluster
    except BaseException:
        print(logs_of(cluster.all))
        raise
    finally:
        codes = stop_all(cluster.all)
    assert all(code == 0 for code in codes.values()), f"exit codes on SIGTERM: {codes}"


class Prober:
    """Writes one new item a probe to the leader and reads it on a follower."""

    def __init__(self, cluster: ReadYourWritesSet, client: httpx.Client, seed: int) -> None:
        self.cluster = cluster
        self.client = client
        self.rng = random.Random(seed)
        self.count = 0

    def write(self, phase: str) -> tuple[str, int]:
        """Upsert a new item on the leader (acks=leader); its id and the answer's seq."""
        self.count += 1
        item = f"{phase}-{self.count:06d}"
        body = {
            "items": [
                {
                    "id": item,
                    "vector": [self.rng.gauss(0.0, 1.0) for _ in range(DIM)],
                    "metadata": {"cat": phase},
                }
            ]
        }
        response = self.client.post(
            f"{self.cluster.leader.url}/v1/collections/{COLLECTION}/items",
            params={"acks": "leader"},
            json=body,
        )
        assert response.status_code == 200, f"upsert {item}: {response.text}"
        return item, int(response.json()["seq"])

    def get(self, replica: Replica, item: str, min_seq: int | None = None) -> dict[str, Any]:
        """``POST .../items/get`` of ``item`` on ``replica`` (its JSON; fails on another status
        than 200)."""
        headers = {} if min_seq is None else {"X-Min-Seq": str(min_seq)}
        response = self.client.post(
            f"{replica.url}/v1/collections/{COLLECTION}/items/get",
            json={"ids": [item]},
            headers=headers,
        )
        assert response.status_code == 200, (
            f"get {item} on {replica.name} (X-Min-Seq {min_seq}): HTTP {response.status_code} "
            f"{response.text}"
        )
        answer: dict[str, Any] = response.json()
        return answer


def found(answer: dict[str, Any], item: str) -> bool:
    return any(stored["id"] == item for stored in answer["items"])


def percentiles(values: Sequence[float]) -> str:
    """p50, p99 and max of ``values`` seconds, in milliseconds."""
    if len(values) < 2:
        return f"max {max(values, default=0.0) * 1e3:.2f} ms"
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return (
        f"p50 {cuts[49] * 1e3:.2f} ms, p99 {cuts[98] * 1e3:.2f} ms, max {max(values) * 1e3:.2f} ms"
    )


def test_a_follower_reads_the_writes_the_leader_answered(replicas: ReadYourWritesSet) -> None:
    seed = random.SystemRandom().randrange(2**32)
    print(
        f"read your writes: {PROBES} probes ({PROBES_VARIABLE} changes it), {LAG_PROBES} for "
        "the lag"
    )
    with httpx.Client(timeout=CLIENT_TIMEOUT) as client:
        prober = Prober(replicas, client, seed)

        # 1. follower_reads=leader, no header: every write the leader answered is read.
        started = time.monotonic()
        missed: list[tuple[str, int, int]] = []
        read_s: list[float] = []
        for _ in range(PROBES):
            item, seq = prober.write("leader-reads")
            asked = time.monotonic()
            answer = prober.get(replicas.follower, item)
            read_s.append(time.monotonic() - asked)
            if not found(answer, item):
                missed.append((item, seq, int(answer["seq"])))
        print(
            f"  follower_reads=leader: {PROBES - len(missed)} of {PROBES} found at once in "
            f"{time.monotonic() - started:.1f} s; the follower's read {percentiles(read_s)}"
        )
        assert not missed, (
            f"{len(missed)} of {PROBES} writes the leader answered were not read on the "
            f"follower_reads=leader follower (id, write seq, the read's seq): {missed[:20]}\n"
            f"{logs_of(replicas.all)}"
        )

        # 2. follower_reads=local, no header: the replication lag.
        started = time.monotonic()
        lags: list[float] = []
        first_misses = 0
        for _ in range(LAG_PROBES):
            item, seq = prober.write("local-lag")
            acked = time.monotonic()
            polls = 0
            while not found(prober.get(replicas.local, item), item):
                polls += 1
                assert time.monotonic() - acked < LAG_BOUND_S, (
                    f"{item} (seq {seq}) not on the local follower {LAG_BOUND_S} s after the "
                    f"leader's 200\n{logs_of(replicas.all)}"
                )
                time.sleep(LAG_POLL_S)
            lags.append(time.monotonic() - acked)
            first_misses += polls > 0
        print(
            f"  follower_reads=local: replication lag (leader's 200 to the follower finding the "
            f"id) {percentiles(lags)}; the first read missed in {first_misses} of {LAG_PROBES} "
            f"probes ({first_misses / LAG_PROBES:.1%}) in {time.monotonic() - started:.1f} s"
        )

        # 3. follower_reads=local with X-Min-Seq: every write read again.
        started = time.monotonic()
        missed = []
        read_s = []
        for _ in range(PROBES):
            item, seq = prober.write("min-seq")
            asked = time.monotonic()
            answer = prober.get(replicas.local, item, min_seq=seq)
            read_s.append(time.monotonic() - asked)
            if not found(answer, item) or int(answer["seq"]) < seq:
                missed.append((item, seq, int(answer["seq"])))
        print(
            f"  follower_reads=local, X-Min-Seq: {PROBES - len(missed)} of {PROBES} found in "
            f"{time.monotonic() - started:.1f} s; the follower's read {percentiles(read_s)}"
        )
        assert not missed, (
            f"{len(missed)} of {PROBES} reads with X-Min-Seq missed the write (id, write seq, "
            f"the read's seq): {missed[:20]}\n{logs_of(replicas.all)}"
        )

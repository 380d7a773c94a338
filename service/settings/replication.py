"""Replicas: a live collection served by several processes, each with its own copy of the log.

One server is the leader (it takes the writes); the others follow it (``follow``), each applying
the leader's records to its own fsynced log and answering searches. A write's ``acks`` say how
many replicas hold it on disk before the answer.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from service.settings.names import MIB

Acks = Literal["leader", "majority", "all"]
"""How many replicas of a collection hold a write on disk (its log fsynced) before it is
answered: the leader alone, a majority of the replica set, or every member."""
FollowerReads = Literal["leader", "local"]


class ReplicationSettings(BaseModel):
    """Leaders, followers and what a write waits for."""

    follow: str | None = Field(
        default=None,
        description=(
            "URL of the leader this server follows when it starts (http://host:port): it "
            "copies the leader's live collections and their every write into its own "
            "collections_dir, answers reads, and refuses writes with 421 not_leader naming the "
            "leader. Unset, or this server's own URL (one setting for every member of a "
            "StatefulSet): it leads. A server that was promoted since leads again whatever this "
            "says; one that follows a leader that no longer leads is redirected to the leader "
            "of the latest term. Needs collections_dir."
        ),
    )
    replica_set_size: int = Field(
        default=1,
        ge=1,
        le=9,
        description=(
            "Servers in this leader's replica set, the leader counted (1: no replicas). A "
            "write with acks=majority waits for replica_set_size // 2 + 1 of them, acks=all "
            "for every one. With more than 1, the leader takes writes only while a majority "
            "of the set follows it (see leader_lease_s): a leader cut off from its followers, "
            "or one that comes back after another was promoted, refuses writes (503 no_quorum)."
        ),
    )
    advertise_url: str | None = Field(
        default=None,
        description=(
            "The URL the other replicas reach this server at (a follower tells its leader, "
            "which names it in x-leader, in GET /v1/replication and to a promotion's voters). "
            "Unset: http://<host>:<port>."
        ),
    )
    default_acks: Acks = Field(
        default="majority",
        description=(
            "A collection's acknowledgement policy when its creator names none: leader (the "
            "leader's fsync), majority (a majority of the replica set fsynced it) or all. A "
            "write may ask for another with ?acks=. With replica_set_size 1 all three are the "
            "leader's fsync."
        ),
    )
    ack_timeout_s: float = Field(
        default=10.0,
        gt=0.0,
        description=(
            "Longest a write waits for its replicas' acknowledgements; past it the write (logged "
            "and visible on the leader) is answered 503 replication_timeout with Retry-After: "
            "retry it with the same Idempotency-Key, which applies it once."
        ),
    )
    leader_lease_s: float = Field(
        default=10.0,
        gt=0.0,
        description=(
            "With replica_set_size over 1: a leader takes writes while enough followers to make "
            "a majority fetched from it within this many seconds, in its term (else 503 "
            "no_quorum)."
        ),
    )
    follower_reads: FollowerReads = Field(
        default="leader",
        description=(
            "How a follower answers a read that names no X-Min-Seq: leader (it first asks the "
            "leader which writes it has answered and waits until it has applied them, so a "
            "read that starts after a write's 200 sees it; when the leader cannot be asked "
            "within read_wait_s it answers from what it holds) or local (at once, from what it "
            "holds: the replication lag behind)."
        ),
    )
    read_wait_s: float = Field(
        default=5.0,
        gt=0.0,
        description=(
            "Longest a read waits for this replica to apply the sequence it needs (X-Min-Seq, "
            "or the leader's under follower_reads=leader); past it: 503 replica_behind with "
            "Retry-After."
        ),
    )
    follow_key: str | None = Field(
        default=None,
        description=(
            "API key a follower sends to its leader (an admin key of the leader). Unset: the "
            "first of this server's admin_keys, or none."
        ),
    )
    replication_batch_bytes: int = Field(
        default=8 * MIB,
        ge=64 * 1024,
        description="Most log bytes a follower fetches from its leader at once.",
    )

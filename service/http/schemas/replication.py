"""``/v1/replication/...``: the state of a replica set, and the calls replicas make."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, Field

from service.http.schemas.wire import StrictRequest


def _replica_url(value: str) -> str:
    """A replica's base URL: http(s), a host, an optional port, nothing after the path."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be http(s)://host[:port]")
    if parts.query or parts.fragment or (port is not None and not 0 < port < 65536):
        raise ValueError("must be http(s)://host[:port], no query or fragment")
    return value


ReplicaUrl = Annotated[
    str,
    Field(min_length=8, max_length=2048, pattern=r"^https?://[!-~]+$"),
    AfterValidator(_replica_url),
]
"""A replica's URL (http://host:port; printable ASCII, no spaces)."""


class PositionBody(StrictRequest):
    """Where a replica's copy of one collection stands."""

    uid: str = Field(max_length=64, description="The collection's uid (its incarnation).")
    after: int = Field(ge=0, description="The last sequence number the copy holds durably.")
    term: int = Field(ge=0, description="The term of that record.")


class FetchBody(StrictRequest):
    """A follower's fetch: who asks, the term it knows and where its copies stand."""

    replica: str = Field(min_length=1, max_length=64, description="The follower's replica id.")
    url: ReplicaUrl | None = Field(default=None, description="The follower's URL.")
    term: int = Field(ge=0, description="The latest term the follower knows.")
    positions: dict[str, PositionBody] = Field(default_factory=dict, max_length=10_000)
    wait_ms: int = Field(default=0, ge=0, le=30_000, description="Longest wait for news.")
    max_bytes: int = Field(
        default=8 << 20,
        ge=0,
        le=256 << 20,
        description="Most log bytes (at least one record); 0: positions only (a heartbeat).",
    )


class VoteBody(StrictRequest):
    """A candidate's request for a term."""

    term: int = Field(ge=1, description="The term the candidate asks for.")
    candidate: ReplicaUrl = Field(description="The candidate's URL.")
    positions: dict[str, PositionBody] = Field(default_factory=dict, max_length=10_000)


class BallotResponse(BaseModel):
    """A voter's answer."""

    granted: bool
    term: int = Field(description="The latest term the voter knows.")
    replica: str = Field(description="The voter's replica id.")
    reason: str | None = Field(default=None, description="Why not (null: granted).")


class FollowBody(StrictRequest):
    """``POST /v1/replication/follow``: the leader to follow."""

    leader: ReplicaUrl = Field(description="The leader's URL (http://host:port).")


class FollowerInfo(BaseModel):
    """A follower as its leader saw it."""

    replica: str
    url: str | None
    seconds_since_fetch: float
    positions: dict[str, int] = Field(description="Collection → last durable sequence number.")


class ReplicationStatus(BaseModel):
    """This server's place in the replica set of its live collections."""

    replica: str = Field(description="This replica's id.")
    url: str = Field(description="The URL the other replicas reach it at.")
    role: str = Field(description="leader, follower or fenced (a replaced leader).")
    term: int = Field(description="The latest leader term it knows.")
    leader: str | None = Field(description="The leader's URL (null: none known).")
    replica_set_size: int
    members: list[str] = Field(description="The replicas it has heard of.")
    collections: dict[str, int] = Field(description="Live collection → sequence readers see.")
    followers: list[FollowerInfo] = Field(description="On a leader: its followers.")
    lag: dict[str, int] = Field(description="On a follower: records behind, per collection.")
    last_error: str | None = Field(description="On a follower: its last failed fetch.")


class PositionResponse(BaseModel):
    """The sequence number readers see on this server, per live collection."""

    collections: dict[str, int]

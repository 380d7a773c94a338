"""The wire models of a replica set (``/v1/replication``): where a server stands in it, and
the body of ``follow``.

Re-exported by :mod:`crisscross_client.models` (import them from there)."""

from __future__ import annotations

from crisscross_client._wire_models import RequestModel, ResponseModel


class FollowerInfo(ResponseModel):
    """A follower as its leader saw it: ``positions`` is collection → the last sequence
    number it holds durably."""

    replica: str
    url: str | None
    seconds_since_fetch: float
    positions: dict[str, int]


class ReplicationStatus(ResponseModel):
    """``GET /v1/replication`` (also the answer of promote and follow): this server's place in
    the replica set of its live collections.

    Attributes:
        replica: its replica id; url: the URL the other replicas reach it at.
        role: ``leader``, ``follower`` or ``fenced`` (a replaced leader, taking no writes).
        term: the latest leader term it knows; leader: the leader's URL (None: none known).
        members: the replicas it has heard of.
        collections: live collection → the sequence number its readers see.
        followers: on a leader, its followers; lag: on a follower, records behind per
            collection; last_error: on a follower, its last failed fetch.
    """

    replica: str
    url: str
    role: str
    term: int
    leader: str | None
    replica_set_size: int
    members: list[str]
    collections: dict[str, int]
    followers: list[FollowerInfo]
    lag: dict[str, int]
    last_error: str | None


class PositionResponse(ResponseModel):
    """``GET /v1/replication/position``: live collection → the sequence number its readers see
    on this server."""

    collections: dict[str, int]


class FollowBody(RequestModel):
    """``POST /v1/replication/follow``: the leader to follow (``http(s)://host:port``)."""

    leader: str

"""``/v1/replication/...``: a replica set's state, and the calls its replicas make to each other
(:mod:`service.engine.replication`). ``GET /v1/replication`` and ``/position`` need any key; the
others (a follower's fetches and base copies, votes, promotion, follow) an admin key where keys
are configured."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from fastapi.responses import StreamingResponse

from service.engine.replication.link import Vote
from service.engine.replication.replica_set import ReplicaSet
from service.engine.replication.wire import FetchRequest, Position, encode_answer
from service.http.dependencies import CollectionName, StateDep, require_json
from service.http.routes import AUTH_ERRORS, error_responses
from service.http.routes.json_route import JsonRoute
from service.http.schemas.replication import (
    BallotResponse,
    FetchBody,
    FollowBody,
    FollowerInfo,
    PositionBody,
    PositionResponse,
    ReplicationStatus,
    VoteBody,
)
from service.lifecycle.state import ServiceState

router = APIRouter(tags=["replication"], route_class=JsonRoute)
plain_router = APIRouter(tags=["replication"])

_ERRORS = error_responses(
    *AUTH_ERRORS,
    404,
    409,
    415,
    421,
    422,
    503,
    descriptions={
        421: "This server is not the leader (not_leader); x-leader names the leader if known.",
        409: "This server keeps no live collections (writes_unavailable), or a promotion that "
        "no majority granted (promotion_refused).",
    },
)


def _replicas(state: ServiceState) -> ReplicaSet:
    replicas = state.replicas
    if replicas is None:
        raise state.not_ready_error()
    return replicas


def _positions(body: dict[str, PositionBody]) -> dict[str, Position]:
    return {name: Position(p.uid, p.after, p.term) for name, p in body.items()}


def status_of(replicas: ReplicaSet) -> ReplicationStatus:
    """The status document of ``replicas``."""
    status = replicas.status()
    return ReplicationStatus(
        replica=status.replica,
        url=status.url,
        role=status.role,
        term=status.term,
        leader=status.leader,
        replica_set_size=status.set_size,
        members=list(status.members),
        collections=dict(status.collections),
        followers=[
            FollowerInfo(replica=r, url=u, seconds_since_fetch=s, positions=dict(p))
            for r, u, s, p in status.followers
        ],
        lag=dict(status.lag),
        last_error=status.last_error,
    )


@plain_router.get(
    "/v1/replication",
    response_model=ReplicationStatus,
    responses=error_responses(*AUTH_ERRORS, 503),
    summary="This server's place in the replica set",
)
async def replication_status(state: StateDep) -> ReplicationStatus:
    """Its role (leader, follower, fenced), term, leader, the members it knows, the sequence
    number readers see per live collection, and on a leader each follower's durable position,
    on a follower how far behind it is. Any key."""
    return status_of(_replicas(state))


@plain_router.get(
    "/v1/replication/position",
    response_model=PositionResponse,
    responses=error_responses(*AUTH_ERRORS, 503),
    summary="The sequence number readers see, per live collection",
)
async def replication_position(state: StateDep) -> PositionResponse:
    """What a follower asks its leader before a read (follower_reads=leader). Any key."""
    return PositionResponse(collections=_replicas(state).position())


@router.post(
    "/v1/replication/fetch",
    responses={
        200: {"content": {"application/octet-stream": {}}, "description": "The answer."},
        **_ERRORS,
    },
    dependencies=[Depends(require_json)],
    summary="A follower's fetch of its leader's records",
)
async def replication_fetch(body: FetchBody, state: StateDep) -> Response:
    """The leader's live collections and the log records the follower lacks (binary: a JSON
    header and the log's own checksummed frames), waiting up to ``wait_ms`` for news. The
    positions given are the follower's acknowledgements. 421 not_leader on any other server.
    Admin key."""
    request = FetchRequest(
        replica=body.replica,
        url=body.url,
        term=body.term,
        positions=_positions(body.positions),
        wait_ms=body.wait_ms,
        max_bytes=body.max_bytes,
    )
    answer = await _replicas(state).fetch(request)
    return Response(encode_answer(answer), media_type="application/octet-stream")


@plain_router.get(
    "/v1/replication/collections/{name}/base",
    responses={
        200: {"content": {"application/x-tar": {}}, "description": "The base, as a tar."},
        **_ERRORS,
    },
    summary="A live collection's base, for a follower to install",
)
async def replication_base(name: CollectionName, state: StateDep) -> StreamingResponse:
    """The collection's base bundle version and its remembered idempotency keys as a tar; the
    headers x-base-seq, x-base-version and x-base-collection say what it holds. Admin key."""
    files = await _replicas(state).open_base(name)
    return StreamingResponse(
        files.chunks(),
        media_type="application/x-tar",
        headers={
            "x-base-seq": str(files.seq),
            "x-base-version": files.version or "",
            "x-base-collection": files.collection,
        },
    )


@router.post(
    "/v1/replication/vote",
    response_model=BallotResponse,
    responses=_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Grant a candidate the next term, or not",
)
async def replication_vote(body: VoteBody, state: StateDep) -> BallotResponse:
    """Granted unless this replica knows a later term, voted for another in it, leads it, or
    holds writes the candidate lacks; granting, it follows the candidate. Admin key."""
    ballot = await _replicas(state).vote(
        Vote(body.term, body.candidate, _positions(body.positions))
    )
    return BallotResponse(
        granted=ballot.granted, term=ballot.term, replica=ballot.replica, reason=ballot.reason
    )


@plain_router.post(
    "/v1/replication/promote",
    response_model=ReplicationStatus,
    responses=_ERRORS,
    summary="Make this follower the leader",
)
async def replication_promote(state: StateDep) -> ReplicationStatus:
    """Ask every member for the next term; with a majority granted (this server counted) it
    leads from now on: it takes writes once a majority follows it (the voters do at once).
    409 promotion_refused (it goes on as before) when a member holds writes it lacks or too
    few answer: promote the most advanced follower. Admin key."""
    replicas = _replicas(state)
    await replicas.promote()
    return status_of(replicas)


@router.post(
    "/v1/replication/follow",
    response_model=ReplicationStatus,
    responses=_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Follow a leader",
)
async def replication_follow(body: FollowBody, state: StateDep) -> ReplicationStatus:
    """Follow ``leader`` from now on: a leader steps down; copies that diverged from the new
    leader's log (a replaced leader's unacknowledged writes) are installed again from it.
    Admin key."""
    replicas = _replicas(state)
    await replicas.follow(body.leader)
    return status_of(replicas)

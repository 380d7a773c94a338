"""What a request says about replicas, and what the HTTP layer asks of the replica set for it:
``?acks=`` and ``Idempotency-Key`` on writes, ``X-Min-Seq`` on reads
(:mod:`service.engine.replication.replica_set`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Final, get_args

from fastapi import Header, Query, Request

from service.engine.collection.live_collections import LiveEntry
from service.engine.collection.write_path import Plan, WriteResult
from service.http.errors import ErrorCode, ServiceError
from service.lifecycle.state import ServiceState
from service.request_context import RequestContext
from service.settings import Acks

MIN_SEQ_HEADER: Final = "x-min-seq"
IDEMPOTENCY_HEADER: Final = "idempotency-key"
MAX_MIN_SEQ_CHARS: Final = 4096
_KEY_PATTERN: Final = r"^[\x21-\x7e]{1,255}$"
_ENTRY: Final = re.compile(r"^(?:(?P<name>[^=,\s]+)=)?(?P<seq>\d{1,18})$")

AcksParam = Annotated[
    Acks | None,
    Query(
        description="How many replicas hold the write on disk before it is answered: leader, "
        "majority (of the replica set) or all. Default: the collection's policy, else the "
        "server's default_acks. Past ack_timeout_s: 503 replication_timeout (the write holds on "
        "the leader; retry with the same Idempotency-Key)."
    ),
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_HEADER,
        pattern=_KEY_PATTERN,
        description="A key the client makes for this write (1-255 printable ASCII characters) "
        "and sends again with every retry of it: a write whose key the collection remembers is "
        "answered as the first time and applied once. The latest 100,000 keys per collection "
        "are remembered, across restarts, compactions and failovers.",
    ),
]
MinSeqHeader = Annotated[
    str | None,
    Header(
        alias=MIN_SEQ_HEADER,
        max_length=MAX_MIN_SEQ_CHARS,
        description="Read at least this sequence number of the live collection read (a write's "
        "answer's seq), or 'name=seq,name=seq' for several: a replica that has not applied it "
        "waits up to read_wait_s, then answers 503 replica_behind.",
    ),
]


def acks_of_request(request: Request) -> Acks | None:
    """The ``acks`` query parameter (:class:`ServiceError` invalid_input for another value)."""
    value = request.query_params.get("acks")
    if value is None:
        return None
    if value not in get_args(Acks):
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"acks: must be one of {', '.join(get_args(Acks))}, got {value[:32]!r}",
            param="acks",
        )
    return value  # type: ignore[return-value]


def idempotency_key_of(request: Request) -> str | None:
    """The ``Idempotency-Key`` header (:class:`ServiceError` invalid_input when it is not
    1-255 printable ASCII characters)."""
    value = request.headers.get(IDEMPOTENCY_HEADER)
    if value is None:
        return None
    if re.match(_KEY_PATTERN, value) is None:
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{IDEMPOTENCY_HEADER}: must be 1-255 printable ASCII characters, no spaces",
            param=IDEMPOTENCY_HEADER,
        )
    return value


def min_seq_of(request: Request) -> str | None:
    """The ``X-Min-Seq`` header, as sent (read by :func:`min_seqs`)."""
    value = request.headers.get(MIN_SEQ_HEADER)
    if value is not None and len(value) > MAX_MIN_SEQ_CHARS:
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{MIN_SEQ_HEADER}: longer than {MAX_MIN_SEQ_CHARS} characters",
            param=MIN_SEQ_HEADER,
        )
    return value


def min_seqs(header: str | None, names: Sequence[str]) -> dict[str, int]:
    """The sequence numbers ``header`` asks for, per collection (a bare number: every
    collection of ``names``); :class:`ServiceError` invalid_input for anything else."""
    if header is None or not header.strip():
        return {}
    asked: dict[str, int] = {}
    for part in header.split(","):
        match = _ENTRY.match(part.strip())
        if match is None:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"{MIN_SEQ_HEADER}: {part.strip()[:64]!r} is neither a sequence number nor "
                "name=sequence",
                param=MIN_SEQ_HEADER,
            )
        seq = int(match["seq"])
        if match["name"] is None:
            asked.update(dict.fromkeys(names, seq))
        else:
            asked[match["name"]] = seq
    return asked


async def read_consistently(state: ServiceState, names: Sequence[str], header: str | None) -> None:
    """Wait until this replica holds what a read of ``names`` needs (:class:`ServiceError` for
    a bad header; the replica set's errors)."""
    asked = min_seqs(header, names)
    replicas = state.replicas
    if replicas is not None:
        await replicas.await_reads(names, asked)


def check_writes(state: ServiceState) -> None:
    """Refuse a write unless this server takes them (421 not_leader, 503 no_quorum)."""
    if state.replicas is not None:
        state.replicas.check_writes()


async def write_acknowledged(
    state: ServiceState,
    entry: LiveEntry,
    plan: Plan,
    context: RequestContext,
    key: str | None,
    acks: Acks | None,
) -> WriteResult:
    """Log and apply ``plan`` (once per idempotency ``key``), then wait for as many replicas
    as the write's acknowledgement policy needs."""
    result = await entry.writer.write(plan, context, key)
    replicas = state.replicas
    if replicas is not None:
        collection = entry.collection
        await replicas.acknowledge(collection, result.seq, replicas.acks_of(collection, acks))
    return result

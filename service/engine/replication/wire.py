"""What a follower asks its leader for, and the answer: one reader and one writer each.

A fetch names the follower (its id and URL), the term it knows, how long it may wait for news
and, for each live collection it holds, the collection's uid, the last sequence number it holds
durably and that record's term. The answer lists every live collection of the leader — its spec,
its base, the sequence readers see, its term history — and, where the follower's copy goes on
from the leader's log, the records after it (the log's own checksummed frames); where it does not
(a new or replaced collection, a copy behind the leader's base, or one that diverged), it says
``install`` and why. On the wire the answer is ``u32 header length | header JSON | records``,
each collection's records in the order the header lists them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from storage.live.spec import CollectionSpec, CollectionSpecError
from storage.live.terms import TermHistory

_LENGTH: Final = struct.Struct("<I")


class WireError(ValueError):
    """Bytes that are not a fetch answer."""


@dataclass(frozen=True)
class Position:
    """Where a follower's copy of one collection stands: its uid, its last durable sequence
    number and that record's term."""

    uid: str
    after: int
    term: int


@dataclass(frozen=True)
class FetchRequest:
    """A follower's fetch (see the module docstring)."""

    replica: str
    url: str | None
    term: int
    positions: Mapping[str, Position]
    wait_ms: int = 0
    max_bytes: int = 8 << 20


@dataclass(frozen=True)
class CollectionState:
    """One of the leader's collections, in a fetch answer."""

    spec: CollectionSpec
    base_seq: int
    base_version: str | None
    visible: int
    terms: TermHistory
    install: str | None
    """Why the follower must install the collection whole (None: ``records`` go on from its
    copy)."""
    records: bytes = b""

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.spec.name


@dataclass(frozen=True)
class FetchAnswer:
    """The leader's answer: its term and URL, the members it knows and its collections."""

    term: int
    leader: str
    members: tuple[str, ...]
    collections: tuple[CollectionState, ...]


def encode_answer(answer: FetchAnswer) -> bytes:
    """The bytes of ``answer``."""
    header: dict[str, Any] = {
        "term": answer.term,
        "leader": answer.leader,
        "members": list(answer.members),
        "collections": [
            {
                "spec": json.loads(state.spec.to_json()),
                "base_seq": state.base_seq,
                "base_version": state.base_version,
                "visible": state.visible,
                "terms": state.terms.to_list(),
                "install": state.install,
                "bytes": len(state.records),
            }
            for state in answer.collections
        ],
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join(
        [_LENGTH.pack(len(text)), text, *(state.records for state in answer.collections)]
    )


def decode_answer(data: bytes) -> FetchAnswer:
    """The answer in ``data``; :class:`WireError` when it holds none."""
    try:
        (length,) = _LENGTH.unpack_from(data, 0)
        header = json.loads(data[_LENGTH.size : _LENGTH.size + length].decode("utf-8"))
        offset = _LENGTH.size + length
        states = []
        for item in header["collections"]:
            size = int(item["bytes"])
            records = data[offset : offset + size]
            if len(records) != size:
                raise WireError("the answer ends inside a collection's records")
            offset += size
            states.append(
                CollectionState(
                    spec=CollectionSpec.from_json(json.dumps(item["spec"])),
                    base_seq=int(item["base_seq"]),
                    base_version=(
                        None if item["base_version"] is None else str(item["base_version"])
                    ),
                    visible=int(item["visible"]),
                    terms=TermHistory.of(item["terms"]),
                    install=None if item["install"] is None else str(item["install"]),
                    records=records,
                )
            )
        if offset != len(data):
            raise WireError("bytes after the last collection's records")
        return FetchAnswer(
            term=int(header["term"]),
            leader=str(header["leader"]),
            members=tuple(str(url) for url in header["members"]),
            collections=tuple(states),
        )
    except (KeyError, TypeError, ValueError, struct.error, CollectionSpecError) as exc:
        if isinstance(exc, WireError):
            raise
        raise WireError(f"not a fetch answer: {exc}") from None


def request_document(request: FetchRequest) -> dict[str, Any]:
    """The JSON body of ``request``."""
    return {
        "replica": request.replica,
        "url": request.url,
        "term": request.term,
        "wait_ms": request.wait_ms,
        "max_bytes": request.max_bytes,
        "positions": {
            name: {"uid": p.uid, "after": p.after, "term": p.term}
            for name, p in request.positions.items()
        },
    }

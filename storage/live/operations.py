"""The operations a live collection logs, and their one encoding in a log record.

Everything replay needs is in the record, so replay never runs a model: an upsert carries its
ids, its vectors (float32, already normalised) and each item's metadata and text; a delete
carries ids (a delete by filter is resolved to ids before it is logged). Either may carry the
idempotency key of the request that wrote it (:mod:`storage.live.idempotency`), so a retried
request is recognised after a restart and on every replica. A payload is
``u32 header length | header JSON (UTF-8) | vectors (float32, little-endian, row-major)``. A
compaction rewrites the log as one checkpoint: every live item, in row order.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

_LENGTH: Final = struct.Struct("<I")


class RecordFormatError(ValueError):
    """A payload that is not an operation of this format (a checksummed record never is)."""


@dataclass(frozen=True)
class Upsert:
    """Items to add or replace: ``ids[i]`` gets ``vectors[i]``, ``metadata[i]``, ``texts[i]``."""

    ids: tuple[str, ...]
    vectors: npt.NDArray[np.float32]
    metadata: tuple[Mapping[str, Any], ...]
    texts: tuple[str | None, ...]
    key: str | None = None
    """The idempotency key of the request that wrote it (None: none given)."""

    def __post_init__(self) -> None:
        n = len(self.ids)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != n:
            raise ValueError(f"{n} ids need vectors of shape [{n}, dim]")
        if len(self.metadata) != n or len(self.texts) != n:
            raise ValueError("ids, metadata and texts differ in length")


@dataclass(frozen=True)
class Checkpoint(Upsert):
    """The whole collection as of this record's sequence number: its items in row order. A
    compacted log starts with one; replay starts from it."""


@dataclass(frozen=True)
class Delete:
    """Ids to delete (ids that are not there are ignored)."""

    ids: tuple[str, ...]
    key: str | None = None
    """The idempotency key of the request that wrote it (None: none given)."""


Operation = Upsert | Checkpoint | Delete


def encode(operation: Operation) -> bytes:
    """The payload of ``operation``."""
    if isinstance(operation, Delete):
        header: dict[str, Any] = {"op": "delete", "ids": list(operation.ids)}
        body = b""
        if operation.key is not None:
            header["key"] = operation.key
    else:
        vectors = np.ascontiguousarray(operation.vectors, dtype="<f4")
        header = {
            "op": "checkpoint" if isinstance(operation, Checkpoint) else "upsert",
            "ids": list(operation.ids),
            "dim": int(vectors.shape[1]),
            "metadata": [dict(row) for row in operation.metadata],
            "texts": list(operation.texts),
        }
        if operation.key is not None:
            header["key"] = operation.key
        body = vectors.tobytes()
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _LENGTH.pack(len(text)) + text + body


def decode(payload: bytes) -> Operation:
    """The operation in ``payload``; :class:`RecordFormatError` when it holds none."""
    try:
        (length,) = _LENGTH.unpack_from(payload, 0)
        header = json.loads(payload[_LENGTH.size : _LENGTH.size + length].decode("utf-8"))
        ids = tuple(str(item) for item in header["ids"])
        key = header.get("key")
        if key is not None and not isinstance(key, str):
            raise RecordFormatError("the idempotency key must be a string")
        if header["op"] == "delete":
            return Delete(ids, key)
        kind = {"upsert": Upsert, "checkpoint": Checkpoint}.get(header["op"])
        if kind is None:
            raise RecordFormatError(f"unknown operation {header['op']!r}")
        dim = int(header["dim"])
        body = payload[_LENGTH.size + length :]
        if len(body) != len(ids) * dim * 4:
            raise RecordFormatError("vector bytes do not match the ids and dimension")
        vectors = np.frombuffer(body, dtype="<f4").reshape(len(ids), dim).astype(np.float32)
        return kind(ids, vectors, tuple(header["metadata"]), tuple(header["texts"]), key)
    except (KeyError, TypeError, ValueError, struct.error, UnicodeDecodeError) as exc:
        if isinstance(exc, RecordFormatError):
            raise
        raise RecordFormatError(f"not an operation: {exc}") from None

"""What the mixed run sends: seeded random unit vectors, the items and searches built of them.

Every vector is a row of a seeded batch: ``numpy.random.default_rng([seed, stream, batch])``
draws the batch's standard normals row after row, each row divided by its norm. ``stream`` is
:data:`PRELOAD_STREAM`, :data:`QUERY_STREAM` or a writer's (:func:`writer_stream`). Rows are
drawn in order, so row ``r`` of a batch is the same whatever the batch's length: an item's
vector is regenerated from its :class:`ItemRef` (to search for a deleted item) instead of kept.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from benchmarks.drivers.http_client import JsonObject, search_body

PRELOAD_STREAM: Final = 0
QUERY_STREAM: Final = 1
GROUPS: Final = 8
"""Values of the ``group`` field (an item's row in its batch, modulo this)."""
FIELDS: Final = {"group": "integer"}
"""The collection's typed fields."""

Vectors = npt.NDArray[np.float32]


def writer_stream(writer: int) -> int:
    """The vector stream of writer ``writer`` (0-based)."""
    return 2 + writer


def unit_vectors(seed: int, stream: int, batch: int, count: int, dim: int) -> Vectors:
    """``count`` unit float32 vectors of ``dim``: the first rows of batch ``batch`` of
    ``stream`` (see the module)."""
    rng = np.random.default_rng([seed, stream, batch])
    values = rng.standard_normal((count, dim))
    values /= np.linalg.norm(values, axis=1, keepdims=True)
    return values.astype(np.float32)


@dataclass(frozen=True, slots=True)
class ItemRef:
    """An item the run wrote: row ``row`` of batch ``batch`` of ``stream``."""

    stream: int
    batch: int
    row: int

    @property
    def id(self) -> str:
        """``p<batch>-<row>`` for a preloaded item, ``w<writer>-<batch>-<row>`` for a writer's."""
        if self.stream == PRELOAD_STREAM:
            return f"p{self.batch}-{self.row}"
        return f"w{self.stream - 2}-{self.batch}-{self.row}"

    def vector(self, seed: int, dim: int) -> Vectors:
        """Its vector, regenerated."""
        rows = unit_vectors(seed, self.stream, self.batch, self.row + 1, dim)
        vector: Vectors = rows[self.row]
        return vector


def packed(vector: Vectors) -> str:
    """``vector`` as ``vector_base64``: base64 of its little-endian float32 bytes."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def write_item(ref: ItemRef, vector: Vectors, vector_format: str) -> JsonObject:
    """One item of an upsert: its id, its vector (``vector_base64`` or ``vector``) and its
    ``group``."""
    item: JsonObject = {"id": ref.id}
    if vector_format == "base64":
        item["vector_base64"] = packed(vector)
    else:
        item["vector"] = [float(value) for value in vector]
    item["metadata"] = {"group": ref.row % GROUPS}
    return item


def upsert_body(refs: Sequence[ItemRef], vectors: Vectors, vector_format: str) -> JsonObject:
    """The body of ``POST /v1/collections/{name}/items`` for ``refs`` and their vectors."""
    return {
        "items": [
            write_item(ref, vector, vector_format)
            for ref, vector in zip(refs, vectors, strict=True)
        ]
    }


def batch_refs(stream: int, batch: int, count: int) -> list[ItemRef]:
    """The refs of the first ``count`` rows of a batch."""
    return [ItemRef(stream, batch, row) for row in range(count)]


def vector_search(vector: Vectors, collection: str, k: int) -> JsonObject:
    """A filter-free ``POST /v1/search`` body with ``vector`` as the query."""
    return search_body({"vector": [float(value) for value in vector]}, collection, k)


def query_bodies(seed: int, count: int, dim: int, collection: str, k: int) -> list[bytes]:
    """``count`` pre-serialised searches along random unit vectors (the searchers cycle
    through them)."""
    vectors = unit_vectors(seed, QUERY_STREAM, 0, count, dim)
    return [json.dumps(vector_search(vector, collection, k)).encode() for vector in vectors]

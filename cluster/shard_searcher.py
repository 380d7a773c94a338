"""One shard's search: its bundle loaded and verified, answered with
:mod:`service.engine.collection.knn`.

What a shard answers per query is its own top ``depth`` under the tie rule (score descending,
then row ascending) with *global* rows (``row_offset`` + local row): the same scores, from the
same float64 rescoring of the stored vectors, as the unsplit bundle gives those rows, so the
router's merge ties exactly as a single index does. The answer is plain data (lists, dicts,
floats), the wire format between a shard and the router (:func:`cluster.shard_router.
parse_shard_answer` checks it on arrival).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cluster.shard_split import ShardEntry
from formats.hashing import sha256_file
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import nearest_many
from service.engine.rank.exact_scan import ExactScan
from storage.layout import MANIFEST_FILE
from storage.manifest import BundleError
from storage.reader import load_bundle


class ShardLoadError(RuntimeError):
    """A shard's bundle is not the one its map names, or cannot be loaded."""


class ShardSearcher:
    """The search of one shard (Ray-free: the Serve replica wraps one)."""

    def __init__(self, entry: ShardEntry, version_dir: Path, collection: str) -> None:
        manifest_sha = sha256_file(version_dir / MANIFEST_FILE)
        if manifest_sha != entry.manifest_sha256:
            raise ShardLoadError(
                f"shard {entry.name}: {version_dir} has manifest sha256 {manifest_sha}, the map "
                f"names {entry.manifest_sha256}"
            )
        try:
            bundle = load_bundle(version_dir)
        except BundleError as exc:
            raise ShardLoadError(f"shard {entry.name}: {exc}") from exc
        loaded = bundle.collections.get(collection)
        if loaded is None or loaded.count != entry.count:
            raise ShardLoadError(
                f"shard {entry.name}: {version_dir} does not hold {entry.count} rows of "
                f"{collection!r}"
            )
        self.entry = entry
        self._served = ServedCollection(
            variant=bundle.variant_name,
            bundle=bundle.name,
            bundle_version=bundle.version,
            collection=loaded,
            scan=ExactScan(threads=1),
        )
        self._loaded_at = time.time()

    @property
    def dim(self) -> int:
        """The embedding dimension of the shard's vectors."""
        return self._served.collection.dim

    def search(self, queries: np.ndarray, depth: int, include_metadata: bool) -> dict[str, Any]:
        """The shard's top ``depth`` of each query (float32 ``[n, dim]``, unit rows):
        ``{"shard", "pages": [{"scores", "rows", "ids", "metadata"}]}`` with global rows;
        ``metadata`` is None without ``include_metadata``. Blocking (runs the search)."""
        matrix = np.ascontiguousarray(queries, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.dim or not np.isfinite(matrix).all():
            raise ValueError(f"queries must be finite float32 [n, {self.dim}]")
        pages = [(depth, 0, ())] * len(matrix)
        answers = nearest_many(self._served, matrix, pages)
        offset = self.entry.row_offset
        return {
            "shard": self.entry.name,
            "pages": [
                {
                    "scores": [hit.score for hit in hits],
                    "rows": [hit.row + offset for hit in hits],
                    "ids": [hit.item_id for hit in hits],
                    "metadata": [dict(hit.metadata) for hit in hits] if include_metadata else None,
                }
                for hits in answers
            ],
        }

    def health(self) -> Mapping[str, object]:
        """What ``/v1/shards`` reports of this shard."""
        served = self._served
        return {
            "shard": self.entry.name,
            "status": "ok",
            "bundle": served.bundle,
            "version": served.bundle_version,
            "count": served.collection.count,
            "row_offset": self.entry.row_offset,
            "loaded_at": self._loaded_at,
        }

"""One shard as a collection view in its own process: its bundle loaded and verified, answered
through :class:`service.engine.collection.bundle_view.BundleView`.

The front door's view of the shard (:class:`cluster.served_shards.RemoteShard`) calls the
methods of :data:`VIEW_METHODS` by name with plain arguments (a filter node, a mask, a query
vector, search parameters, a leg of rows); the shard answers with the bundle view's own answers,
in its local row numbers. Because every shard ranks its rows by the tie rule with the same
float64 rescoring of the same stored vectors as the unsplit bundle, the front's merge ties
exactly as one index does. :meth:`ShardSearcher.describe` says what the front plans against
(fields, index, rows) without asking again per search.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cluster.shard_split import ShardEntry
from formats.field_types import FieldType
from formats.hashing import sha256_file
from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import ServedCollection
from service.engine.rank.exact_scan import ExactScan
from service.engine.rank.search_params import IndexFacts, index_facts
from storage.layout import MANIFEST_FILE
from storage.manifest import BundleError
from storage.reader import load_bundle

VIEW_METHODS = frozenset(
    {"keep", "top", "field_texts", "vectors_of", "row_of", "ids_of", "hits", "keyword_leg"}
)
"""The view methods a shard answers for the front door (blocking ones: see
:class:`service.engine.collection.collection_view.CollectionView`)."""


class ShardLoadError(RuntimeError):
    """A shard's bundle is not the one its map names, or cannot be loaded."""


@dataclass(frozen=True)
class ShardFacts:
    """What the front door plans a search of the shard against (sent once, at start)."""

    shard: str
    collection: str
    version: str
    rows: int
    fields: Mapping[str, FieldType]
    index: IndexFacts


class ShardSearcher:
    """The view of one shard (Ray-free: the Serve replica wraps one)."""

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
        self.view = BundleView(
            ServedCollection(
                variant=bundle.variant_name,
                bundle=bundle.name,
                bundle_version=bundle.version,
                collection=loaded,
                scan=ExactScan(threads=1),
            )
        )
        self._loaded_at = time.time()

    def describe(self) -> ShardFacts:
        """The shard's facts for the front door."""
        collection = self.view.served.collection
        return ShardFacts(
            shard=self.entry.name,
            collection=collection.name,
            version=self.view.version,
            rows=collection.count,
            fields=dict(collection.fields),
            index=index_facts(collection),
        )

    def answer(self, method: str, args: tuple[object, ...]) -> object:
        """The view's answer to ``method(*args)`` (one of :data:`VIEW_METHODS`, or
        ``describe``); ValueError for any other name. Blocking."""
        if method == "describe":
            return self.describe()
        if method not in VIEW_METHODS:
            raise ValueError(f"a shard answers {sorted(VIEW_METHODS)}, not {method!r}")
        return getattr(self.view, method)(*args)

    def health(self) -> Mapping[str, object]:
        """What ``GET /v1/collections`` reports of this shard."""
        view = self.view
        return {
            "shard": self.entry.name,
            "status": "ok",
            "bundle": view.served.bundle,
            "version": view.version,
            "count": view.rows,
            "row_offset": self.entry.row_offset,
            "loaded_at": self._loaded_at,
        }

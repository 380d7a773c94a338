"""The sharded collections a service answers for: collections whose rows other processes hold
(shards on Ray Serve), each searched through a view that fans out to them
(:class:`service.engine.collection.sharded_view.ShardedView`).

The engine knows a sharded collection by what it answers here — its name and bundle, the variant
that embedded it, its dimension, its shards' states, and a fresh view per search; how the shards
are reached (Ray Serve handles, in-process views in tests) is the cluster's
(:mod:`cluster.served_shards`). A collection is found by its bare name or as
``<bundle>:<collection>``, after the live collections and before the bundles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from service.engine.collection.collection_view import CollectionView


@dataclass(frozen=True)
class ShardState:
    """One shard as ``GET /v1/collections`` and ``/readyz`` report it."""

    name: str
    row_offset: int
    rows: int
    version: str
    ok: bool
    reason: str | None = None
    """Why it is down (None when it answers)."""


class ShardedCollection(Protocol):
    """One collection held by shards in other processes."""

    @property
    def name(self) -> str:
        """The collection's name."""
        ...

    @property
    def bundle(self) -> str:
        """The bundle its shards were cut from."""
        ...

    @property
    def bundle_version(self) -> str:
        """That bundle's version."""
        ...

    @property
    def variant(self) -> str:
        """The variant that embedded it (the one whose towers answer its texts and images)."""
        ...

    @property
    def variant_fingerprint(self) -> str:
        """That variant's fingerprint: the served variant of that name must have it."""
        ...

    @property
    def dim(self) -> int:
        """The dimension of its vectors."""
        ...

    @property
    def embeds_queries(self) -> bool:
        """Whether the service loads its variant (texts and images are embedded here); without
        it the collection answers vectors and its own items only."""
        ...

    @property
    def rows(self) -> int:
        """Its rows, every shard's together."""
        ...

    @property
    def missing_shards(self) -> str:
        """Its missing-shards policy: ``fail`` or ``partial``."""
        ...

    @property
    def shard_deadline_ms(self) -> int:
        """How long a search waits for each shard."""
        ...

    def connect(self) -> None:
        """Learn what each shard holds (blocking: it asks them); raises when they cannot tell
        (the service then stays not ready, saying why)."""
        ...

    def view(self) -> CollectionView:
        """A view for one search (after :meth:`connect`)."""
        ...

    async def states(self) -> list[ShardState]:
        """Every shard's state, asked at once, each within the health timeout."""
        ...

    def ready(self, states: Sequence[ShardState]) -> bool:
        """Whether searches can be answered with the shards ``states`` says are up."""
        ...


class ShardedCollections:
    """The sharded collections of one app, by name."""

    def __init__(self, collections: Sequence[ShardedCollection] = ()) -> None:
        self._by_name: dict[str, ShardedCollection] = {}
        for collection in collections:
            for name in (collection.name, f"{collection.bundle}:{collection.name}"):
                if name in self._by_name:
                    raise ValueError(f"two sharded collections answer to {name!r}")
                self._by_name[name] = collection
        self.entries = list(collections)

    def get(self, name: str) -> ShardedCollection | None:
        """The sharded collection called ``name`` (bare or ``<bundle>:<collection>``)."""
        return self._by_name.get(name)

    def connect(self) -> None:
        """Connect every collection (blocking)."""
        for collection in self.entries:
            collection.connect()

    @property
    def variants(self) -> dict[str, str]:
        """The variants the collections need loaded, with their fingerprints."""
        return {
            entry.variant: entry.variant_fingerprint
            for entry in self.entries
            if entry.embeds_queries
        }

    async def not_ready(self) -> str | None:
        """Why searches cannot be answered now (the shards down), or None."""
        reasons = []
        for collection in self.entries:
            states = await collection.states()
            if not collection.ready(states):
                down = ", ".join(f"{s.name} ({s.reason})" for s in states if not s.ok)
                reasons.append(f"{collection.name}: shards not answering: {down}")
        return "; ".join(reasons) or None

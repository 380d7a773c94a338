"""The sharded collections of an app: found by bare or qualified name, the variants they need,
and why they are not ready."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from service.engine.collection.collection_view import CollectionView
from service.engine.collection.sharded_collections import ShardedCollections, ShardState


@dataclass
class FakeSharded:
    name: str = "captions"
    bundle: str = "coco"
    bundle_version: str = "v1"
    variant: str = "minilm"
    variant_fingerprint: str = "ab" * 32
    dim: int = 8
    rows: int = 30
    embeds_queries: bool = True
    missing_shards: str = "fail"
    shard_deadline_ms: int = 1000
    down: set[str] = field(default_factory=set)
    connected: bool = False

    def connect(self) -> None:
        self.connected = True

    def view(self) -> CollectionView:
        raise NotImplementedError

    async def states(self) -> list[ShardState]:
        return [
            ShardState(
                name, 10 * i, 10, "v1", name not in self.down, "gone" if name in self.down else None
            )
            for i, name in enumerate(("shard-0", "shard-1", "shard-2"))
        ]

    def ready(self, states: Sequence[ShardState]) -> bool:
        return all(state.ok for state in states)


def test_found_by_bare_and_qualified_name() -> None:
    one = FakeSharded()
    sharded = ShardedCollections([one])
    assert sharded.get("captions") is one
    assert sharded.get("coco:captions") is one
    assert sharded.get("images") is None
    sharded.connect()
    assert one.connected


def test_two_collections_may_not_share_a_name() -> None:
    with pytest.raises(ValueError, match="captions"):
        ShardedCollections([FakeSharded(), FakeSharded(bundle="other")])


def test_only_collections_that_embed_queries_need_their_variant() -> None:
    sharded = ShardedCollections(
        [FakeSharded(), FakeSharded(name="images", variant="clip", embeds_queries=False)]
    )
    assert sharded.variants == {"minilm": "ab" * 32}


def test_not_ready_names_the_shards_down() -> None:
    one = FakeSharded()
    sharded = ShardedCollections([one])
    assert asyncio.run(sharded.not_ready()) is None
    one.down.add("shard-1")
    reason = asyncio.run(sharded.not_ready())
    assert reason is not None
    assert "shard-1 (gone)" in reason

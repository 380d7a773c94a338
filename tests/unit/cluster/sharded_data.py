"""Hard data for sharded search: clustered unit vectors with many exact duplicates scattered
over the rows (so runs of equal scores cross shard borders), written as one bundle, and an
in-process :class:`cluster.served_shards.ShardCalls` over shard searchers."""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cluster.shard_searcher import ShardSearcher
from cluster.shard_split import ShardMap, locate_shards
from storage.writer import CollectionInput, write_bundle

DIM = 8
VARIANT = "hard-variant"
FINGERPRINT = "f" * 64
BUNDLE = "hard"
VERSION = "v1"


def hard_vectors(rows: int, seed: int = 7) -> np.ndarray:
    """``rows`` unit vectors in 12 tight clusters; about a third are exact copies of another
    row anywhere in the collection."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, DIM))
    vectors = centres[rng.integers(0, 12, rows)] + 0.05 * rng.standard_normal((rows, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    copies = rng.choice(rows, size=rows // 3, replace=False)
    vectors[copies] = vectors[rng.integers(0, rows, rows // 3)]
    unit: np.ndarray = vectors.astype(np.float32)
    return unit


def hard_queries(vectors: np.ndarray, count: int, seed: int = 11) -> np.ndarray:
    """Queries: stored vectors (ties at the very top), cluster-ish points and random ones."""
    rng = np.random.default_rng(seed)
    stored = vectors[rng.integers(0, len(vectors), count // 2)].astype(np.float64)
    noisy = vectors[rng.integers(0, len(vectors), count - count // 2)] + 0.2 * rng.standard_normal(
        (count - count // 2, DIM)
    )
    noisy[::3] = rng.standard_normal((len(noisy[::3]), DIM))
    queries = np.concatenate([stored, noisy])
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    result: np.ndarray = queries.astype(np.float32)
    return result


def item_id(row: int) -> str:
    """The id of the item at ``row``."""
    return f"item-{row:05d}"


def write_hard_bundle(
    root: Path,
    rows: int,
    seed: int = 7,
    *,
    variant_name: str = VARIANT,
    variant_fingerprint: str = FINGERPRINT,
) -> Path:
    """The unsplit bundle ``hard/v1`` of ``rows`` hard vectors under ``root``."""
    vectors = hard_vectors(rows, seed)
    return write_bundle(
        root,
        BUNDLE,
        [
            CollectionInput(
                name="captions",
                ids=[item_id(row) for row in range(rows)],
                metadata=[{"text": f"caption {row}", "group": row % 5} for row in range(rows)],
                vectors=vectors,
            )
        ],
        variant_name=variant_name,
        variant_fingerprint=variant_fingerprint,
        version=VERSION,
    )


class LocalShardCalls:
    """Shards answered in this process (no Ray), every argument and answer pickled both ways as
    across processes; the shards named in ``down`` raise, those in ``slow`` answer after
    ``delay_s``."""

    def __init__(self, searchers: Mapping[str, ShardSearcher]) -> None:
        self.searchers = dict(searchers)
        self.down: set[str] = set()
        self.slow: set[str] = set()
        self.delay_s = 0.0
        self.asked: list[tuple[str, str]] = []

    def call(self, shard: str, method: str, args: tuple[object, ...], timeout_s: float) -> Any:
        self.asked.append((shard, method))
        if shard in self.down:
            raise RuntimeError(f"{shard}: replica died")
        if shard in self.slow:
            time.sleep(min(self.delay_s, timeout_s))
            if self.delay_s >= timeout_s:
                raise TimeoutError(f"{shard}: no answer within {timeout_s} s")
        answer = self.searchers[shard].answer(method, pickle.loads(pickle.dumps(args)))
        return pickle.loads(pickle.dumps(answer))

    async def health(self, shard: str) -> object:
        if shard in self.down:
            raise RuntimeError(f"{shard}: replica died")
        if shard in self.slow:
            await asyncio.sleep(self.delay_s)
        return self.searchers[shard].health()


def local_calls(map_path: Path, shard_map: ShardMap) -> LocalShardCalls:
    """A :class:`LocalShardCalls` over every shard of ``shard_map``."""
    return LocalShardCalls(
        {
            located.entry.name: ShardSearcher(
                located.entry, located.version_dir, shard_map.collection
            )
            for located in locate_shards(map_path, shard_map)
        }
    )

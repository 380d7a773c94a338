"""The router's merge equals one index's top-k (ties across shard borders included), and each
failing shard — raising, hanging past the deadline, answering garbage — is missing, under
either policy, never an exception of another kind."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cluster.shard_router import (
    BadShardAnswerError,
    ShardRouter,
    ShardSpec,
    ShardsUnavailableError,
    merge_pages,
    parse_shard_answer,
)
from cluster.shard_split import ShardMap, split_bundle
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import nearest
from storage.reader import load_bundle
from tests.unit.cluster.sharded_data import (
    LocalShardClient,
    hard_queries,
    local_client,
    write_hard_bundle,
)

ROWS = 1500


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ShardMap]:
    """The unsplit hard bundle and its 3-shard map."""
    root = tmp_path_factory.mktemp("hard")
    source = write_hard_bundle(root / "bundles", ROWS)
    map_path = root / "maps" / "shards.json"
    return source, map_path, split_bundle(source, "captions", 3, root / "shards", map_path)


@pytest.fixture(scope="module")
def single(split: tuple[Path, Path, ShardMap]) -> ServedCollection:
    bundle = load_bundle(split[0])
    return ServedCollection(
        "hard-variant", bundle.name, bundle.version, bundle.collections["captions"]
    )


@pytest.fixture(scope="module")
def client(split: tuple[Path, Path, ShardMap]) -> LocalShardClient:
    return local_client(split[1], split[2])


def specs(shard_map: ShardMap) -> list[ShardSpec]:
    return [ShardSpec(e.name, e.row_offset, e.count) for e in shard_map.shards]


def router_over(client: Any, shard_map: ShardMap, **options: Any) -> ShardRouter:
    options.setdefault("deadline_s", 5.0)
    options.setdefault("policy", "fail")
    return ShardRouter(specs(shard_map), client, **options)


@pytest.mark.parametrize(
    ("k", "offset"),
    [(1, 0), (2, 0), (7, 0), (10, 3), (25, 0), (50, 17), (100, 100), (499, 1), (500, 0),
     (600, 900), (ROWS, 0), (10, ROWS - 5), (5, ROWS + 10)],
)  # fmt: skip
def test_merge_equals_the_unsplit_index(
    split: tuple[Path, Path, ShardMap],
    single: ServedCollection,
    client: LocalShardClient,
    k: int,
    offset: int,
) -> None:
    shard_map = split[2]
    router = router_over(client, shard_map)
    queries = hard_queries(single.collection.vectors, 24)
    answer = asyncio.run(router.search(queries, k, offset))
    assert not answer.partial
    for query, page in zip(queries, answer.pages, strict=True):
        expected = nearest(single, query, k, offset=offset)
        got = [(hit.rank, hit.row, hit.item_id, hit.score) for hit in page]
        assert got == [(hit.rank, hit.row, hit.item_id, hit.score) for hit in expected]
        assert [dict(hit.metadata or {}) for hit in page] == [dict(h.metadata) for h in expected]


def test_the_data_really_ties_across_shard_borders(
    split: tuple[Path, Path, ShardMap], single: ServedCollection
) -> None:
    """The merge test means something: some top-10 holds equal scores from different shards."""
    shard_map = split[2]
    borders = [entry.row_offset for entry in shard_map.shards[1:]]
    crossing = 0
    for query in hard_queries(single.collection.vectors, 24):
        hits = nearest(single, query, 10)
        for first, second in itertools.pairwise(hits):
            shard_of = [sum(row >= b for b in borders) for row in (first.row, second.row)]
            crossing += first.score == second.score and shard_of[0] != shard_of[1]
    assert crossing >= 5


def test_merge_pages_orders_by_score_then_row() -> None:
    from cluster.shard_router import _Hit

    a = [_Hit(0.9, 5, "a5", None), _Hit(0.5, 1, "a1", None)]
    b = [_Hit(0.9, 2, "b2", None), _Hit(0.5, 0, "b0", None)]
    merged = merge_pages([a, b], k=3, offset=1)
    assert [(hit.rank, hit.item_id) for hit in merged] == [(2, "a5"), (3, "b0"), (4, "a1")]


class Behaving:
    """Real shards, except that ``faults`` replace some shards' behaviour."""

    def __init__(self, inner: LocalShardClient, faults: dict[str, Callable[..., Any]]) -> None:
        self.inner = inner
        self.faults = faults

    async def search(self, shard: str, queries: np.ndarray, depth: int, meta: bool) -> object:
        answer = await self.inner.search(shard, queries, depth, meta)
        fault = self.faults.get(shard)
        return answer if fault is None else await fault(answer)

    async def health(self, shard: str) -> object:
        fault = self.faults.get(shard)
        report = await self.inner.health(shard)
        return report if fault is None else await fault(report)


async def raises(_: object) -> object:
    raise RuntimeError("actor died")


async def hangs(_: object) -> object:
    await asyncio.sleep(30)
    raise AssertionError("the deadline should have cut this")


def garbage(change: Callable[[dict[str, Any]], object]) -> Callable[[object], Any]:
    async def corrupt(answer: object) -> object:
        return change(copy.deepcopy(answer))  # type: ignore[arg-type]

    return corrupt


def _set(answer: dict[str, Any], path: tuple[Any, ...], value: object) -> dict[str, Any]:
    target: Any = answer
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return answer


GARBAGE: dict[str, Callable[[dict[str, Any]], object]] = {
    "none": lambda _answer: None,
    "wrong shard": lambda answer: _set(answer, ("shard",), "shard-0"),
    "no pages": lambda answer: _set(answer, ("pages",), []),
    "short page": lambda answer: _set(answer, ("pages", 0, "scores"), [0.5]),
    "nan score": lambda answer: _set(answer, ("pages", 0, "scores", 0), float("nan")),
    "int score": lambda answer: _set(answer, ("pages", 0, "scores", 0), 1),
    "row outside": lambda answer: _set(answer, ("pages", 0, "rows", 0), 0),
    "row not int": lambda answer: _set(answer, ("pages", 0, "rows", 0), "7"),
    "id not str": lambda answer: _set(answer, ("pages", 0, "ids", 0), 7),
    "metadata not mapping": lambda answer: _set(answer, ("pages", 0, "metadata", 0), [1]),
    "out of order": lambda answer: _set(
        answer, ("pages", 0, "scores"), list(reversed(answer["pages"][0]["scores"]))
    ),
}  # fmt: skip


@pytest.mark.parametrize("fault", [raises, hangs, *map(garbage, GARBAGE.values())])
def test_a_failing_shard_is_missing_under_partial(
    split: tuple[Path, Path, ShardMap],
    single: ServedCollection,
    client: LocalShardClient,
    fault: Callable[[object], Any],
) -> None:
    shard_map = split[2]
    router = router_over(
        Behaving(client, {"shard-1": fault}), shard_map, policy="partial", deadline_s=0.2
    )
    queries = hard_queries(single.collection.vectors, 4)
    answer = asyncio.run(router.search(queries, 20, 0))
    assert answer.missing == ("shard-1",)
    lost = range(shard_map.shards[1].row_offset, shard_map.shards[2].row_offset)
    for query, page in zip(queries, answer.pages, strict=True):
        kept = [hit for hit in nearest(single, query, ROWS) if hit.row not in lost][:20]
        assert [hit.item_id for hit in page] == [hit.item_id for hit in kept]
        assert [hit.rank for hit in page] == list(range(1, 21))


@pytest.mark.parametrize("fault", [raises, hangs, garbage(GARBAGE["out of order"])])
def test_a_failing_shard_fails_the_search_under_fail(
    split: tuple[Path, Path, ShardMap], client: LocalShardClient, fault: Callable[[object], Any]
) -> None:
    shard_map = split[2]
    router = router_over(Behaving(client, {"shard-2": fault}), shard_map, deadline_s=0.2)
    with pytest.raises(ShardsUnavailableError, match="shard-2") as caught:
        asyncio.run(router.search(np.eye(1, 8, dtype=np.float32), 5))
    assert caught.value.missing == ("shard-2",)


def test_partial_needs_min_shards_answered(
    split: tuple[Path, Path, ShardMap], client: LocalShardClient
) -> None:
    shard_map = split[2]
    faults = {"shard-0": raises, "shard-2": hangs}
    lenient = router_over(Behaving(client, faults), shard_map, policy="partial", deadline_s=0.1)
    answer = asyncio.run(lenient.search(np.eye(1, 8, dtype=np.float32), 5))
    assert answer.missing == ("shard-0", "shard-2")
    assert len(answer.pages[0]) == 5
    strict = router_over(
        Behaving(client, faults), shard_map, policy="partial", deadline_s=0.1, min_shards_answered=2
    )
    with pytest.raises(ShardsUnavailableError, match="shard-0, shard-2"):
        asyncio.run(strict.search(np.eye(1, 8, dtype=np.float32), 5))


def test_the_deadline_bounds_the_search(
    split: tuple[Path, Path, ShardMap], client: LocalShardClient
) -> None:
    import time

    router = router_over(
        Behaving(client, {"shard-0": hangs}), split[2], policy="partial", deadline_s=0.2
    )
    started = time.perf_counter()
    answer = asyncio.run(router.search(np.eye(1, 8, dtype=np.float32), 5))
    assert time.perf_counter() - started < 2.0
    assert answer.missing == ("shard-0",)


def test_statuses_report_each_shard(
    split: tuple[Path, Path, ShardMap], client: LocalShardClient
) -> None:
    router = router_over(Behaving(client, {"shard-0": hangs, "shard-1": raises}), split[2])
    statuses = asyncio.run(router.statuses(0.1))
    assert [(s.name, s.ok) for s in statuses] == [
        ("shard-0", False), ("shard-1", False), ("shard-2", True)
    ]  # fmt: skip
    assert "actor died" in str(statuses[1].reason)
    assert statuses[2].detail["count"] == split[2].shards[2].count


def test_router_refuses_bad_construction(client: LocalShardClient) -> None:
    with pytest.raises(ValueError, match="at least one shard"):
        ShardRouter([], client, deadline_s=1.0, policy="fail")
    with pytest.raises(ValueError, match="min_shards_answered"):
        ShardRouter(
            [ShardSpec("shard-0", 0, 3)], client, deadline_s=1.0, policy="partial",
            min_shards_answered=2,
        )  # fmt: skip


def test_parse_refuses_a_short_shard_answer() -> None:
    spec = ShardSpec("shard-0", 10, 3)
    page = {"scores": [0.5], "rows": [10], "ids": ["a"], "metadata": None}
    with pytest.raises(BadShardAnswerError, match="3 hits"):
        parse_shard_answer({"shard": "shard-0", "pages": [page]}, spec, 1, 5, False)
    full = {"scores": [0.5, 0.5, 0.1], "rows": [10, 11, 12], "ids": ["a", "b", "c"],
            "metadata": None}  # fmt: skip
    parsed = parse_shard_answer({"shard": "shard-0", "pages": [full]}, spec, 1, 5, False)
    assert [hit.row for hit in parsed[0]] == [10, 11, 12]

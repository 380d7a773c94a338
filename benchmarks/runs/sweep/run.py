"""The sweep run (``python -m benchmarks sweep --collection ivf``): one collection's approximate
index measured across the values of its search parameter, over HTTP only.

1. ``GET /v1/collections``: the collection, its index kind and parameter (``nprobe`` for IVF,
   ``ef_search`` for HNSW), the defaults in force and the build's tuning; the values to measure
   are the tuning sweep's, continued by two doublings past the chosen value, unless given.
2. Queries: the API lists no ids, so a pool of stored ids is gathered by exact searches
   (``search_params: {"exact": true}``) along seeded random directions, paged; ``queries`` of
   them are sampled with the seed. Each query is the stored item itself (``{"item": ...}``),
   its own id excluded from every answer (as the build's tuning leaves each query's row out).
3. Exact answers: ``exact: true`` searches, :data:`EXACT_DEPTH` deep.
4. For the exact search and each value: :attr:`SweepConfig.warmup_requests` unrecorded
   searches, then every query once, sequentially, ``k = 10``, timed on the client. Recall@10 is
   tie-aware (:mod:`benchmarks.runs.sweep.recall`); a returned id outside the exact answers is
   scored with ``POST /v1/score`` only when the exact ties reach that deep.
"""

from __future__ import annotations

import logging
import math
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import httpx

from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.runs.environment import environment_info
from benchmarks.runs.setup_error import BenchmarkSetupError
from benchmarks.runs.sweep.config import SweepConfig
from benchmarks.runs.sweep.recall import cut_score, tie_aware_recall
from evaluation.metrics.latency import percentile

logger = logging.getLogger(__name__)

SWEEP_SCHEMA_VERSION: Final = 1
RECALL_K: Final = 10
EXACT_DEPTH: Final = 50
"""Exact answers fetched per query: enough to know the exact score of most returned ids."""
POOL_DIRECTIONS: Final = 8
POOL_PAGE: Final = 100
POOL_FACTOR: Final = 10
"""The id pool holds up to this many ids per query sampled (the whole collection if smaller)."""
SCORE_BATCH: Final = 256
PARAMETER_OF_KIND: Final = {"ivf_flat": "nprobe", "ivf_pq": "nprobe", "hnsw": "ef_search"}
PARAMETER_OF_TUNING: Final = {"nprobe": "nprobe", "efSearch": "ef_search"}
EXACT: Final = "exact"


@dataclass(frozen=True)
class SweepRun:
    """A finished sweep: ``report`` is ``sweep.json``."""

    report: dict[str, Any]


@dataclass(frozen=True)
class _Query:
    item_id: str
    exact_ids: list[str]
    exact_scores: list[float]

    @property
    def wanted(self) -> int:
        return min(RECALL_K, len(self.exact_ids))


def _collection_entry(collections: Sequence[JsonObject], config: SweepConfig) -> JsonObject:
    found = [
        entry
        for entry in collections
        if config.collection in (entry.get("name"), entry.get("qualified_name"))
        and (config.variant is None or entry.get("variant") == config.variant)
    ]
    if len(found) != 1:
        names = sorted(str(entry.get("qualified_name")) for entry in collections)
        what = "no" if not found else "several"
        raise BenchmarkSetupError(
            f"{what} served collection matches {config.collection!r}"
            f"{'' if config.variant is None else f' of variant {config.variant!r}'}; "
            f"served: {names}"
        )
    return found[0]


def _parameter(entry: JsonObject) -> str:
    kind = str(entry.get("index_kind", "flat"))
    tuning = entry.get("tuning") or {}
    parameter = PARAMETER_OF_KIND.get(kind) or PARAMETER_OF_TUNING.get(str(tuning.get("parameter")))
    if parameter is None:
        defaults = entry.get("search_params") or {}
        parameter = next((name for name in ("nprobe", "ef_search") if name in defaults), None)
    if parameter is None:
        raise BenchmarkSetupError(
            f"collection {entry.get('qualified_name')} has a {kind} index ({entry.get('factory')}),"
            " which has no search parameter to sweep"
        )
    return parameter


# The service's own ceiling for either parameter (max_nprobe, max_ef_search defaults).
_LARGEST_VALUE = 1024
_IVF_LISTS = re.compile(r"IVF(\d+)")


def _values(entry: JsonObject, parameter: str, config: SweepConfig) -> list[int]:
    """``--values``, else the build's tuning sweep (which stops at the chosen value) continued
    by two doublings past it, so the curve shows what more recall costs; an IVF index's values
    stop at its number of lists."""
    if config.values is not None:
        return list(config.values)
    tuning = entry.get("tuning") or {}
    swept = sorted({int(point["value"]) for point in tuning.get("sweep") or []})
    if swept:
        lists = _IVF_LISTS.search(str(entry.get("factory") or ""))
        ceiling = min(_LARGEST_VALUE, int(lists.group(1))) if lists else _LARGEST_VALUE
        beyond = {min(ceiling, swept[-1] * factor) for factor in (2, 4)}
        return sorted(set(swept) | beyond)
    default = (entry.get("search_params") or {}).get(parameter)
    if default is None:
        raise BenchmarkSetupError(
            f"collection {entry.get('qualified_name')} has no tuning sweep and no default "
            f"{parameter}; give --values"
        )
    return [int(default)]


class _Searcher:
    """The run's searches of one collection over HTTP."""

    def __init__(self, client: CrisscrossClient, entry: JsonObject) -> None:
        self.client = client
        self.collection = str(entry["qualified_name"])
        self.variant = str(entry["variant"])

    def item(self, item_id: str) -> JsonObject:
        return {"item": {"collection": self.collection, "id": item_id}}

    async def search(
        self,
        query: JsonObject,
        k: int,
        params: JsonObject,
        *,
        exclude: Sequence[str] = (),
        offset: int = 0,
    ) -> JsonObject:
        body: JsonObject = {
            "query": query,
            "collection": self.collection,
            "variant": self.variant,
            "k": k,
            "include_metadata": False,
            "search_params": params,
        }
        if exclude:
            body["exclude"] = list(exclude)
        if offset:
            body["offset"] = offset
        answer = await self.client.request_json("POST", "/v1/search", body, retry=False)
        used = answer.get("search_params")
        if used != params:
            raise BenchmarkSetupError(
                f"asked {self.collection} for search_params {params}, it searched with {used}"
            )
        return answer


async def _id_pool(searcher: _Searcher, dim: int, count: int, wanted: int, seed: int) -> list[str]:
    """Up to ``wanted`` stored ids (every one when the collection holds fewer): exact searches
    along seeded random directions, paged."""
    rng = random.Random(seed)
    target = min(count, wanted)
    per_direction = math.ceil(target / POOL_DIRECTIONS)
    pool: dict[str, None] = {}
    for _ in range(POOL_DIRECTIONS):
        direction = [rng.gauss(0.0, 1.0) for _ in range(dim)]
        offset: int | None = 0
        while offset is not None and offset < per_direction and len(pool) < target:
            page = await searcher.search(
                {"vector": direction},
                min(POOL_PAGE, per_direction - offset),
                {"exact": True},
                offset=offset,
            )
            pool.update((str(result["id"]), None) for result in page["results"])
            offset = page.get("next_offset")
    return list(pool)


async def _exact_queries(searcher: _Searcher, items: Sequence[str], depth: int) -> list[_Query]:
    queries = []
    for item_id in items:
        answer = await searcher.search(
            searcher.item(item_id), depth, {"exact": True}, exclude=[item_id]
        )
        results = answer["results"]
        queries.append(
            _Query(
                item_id=item_id,
                exact_ids=[str(result["id"]) for result in results],
                exact_scores=[float(result["score"]) for result in results],
            )
        )
    return [query for query in queries if query.exact_ids]


async def _measure(
    searcher: _Searcher, queries: Sequence[_Query], params: JsonObject, warmup: int
) -> tuple[list[list[str]], list[float]]:
    """Every query once after ``warmup`` unrecorded searches: the returned ids and the
    client-side latencies in ms, sequentially."""
    for index in range(warmup):
        query = queries[index % len(queries)]
        await searcher.search(
            searcher.item(query.item_id), RECALL_K, params, exclude=[query.item_id]
        )
    returned: list[list[str]] = []
    latencies: list[float] = []
    for query in queries:
        started = time.perf_counter()
        answer = await searcher.search(
            searcher.item(query.item_id), RECALL_K, params, exclude=[query.item_id]
        )
        latencies.append((time.perf_counter() - started) * 1000.0)
        returned.append([str(result["id"]) for result in answer["results"]])
    return returned, latencies


async def _recall(
    searcher: _Searcher, queries: Sequence[_Query], returned: Sequence[list[str]]
) -> float:
    """Mean tie-aware recall@10 of ``returned`` (per query); ids outside a query's exact answers
    are scored exactly with ``POST /v1/score`` when its ties reach the answers' depth."""
    known = [dict(zip(q.exact_ids, q.exact_scores, strict=True)) for q in queries]
    cuts = [cut_score(q.exact_scores, RECALL_K) for q in queries]
    unknown = [
        (position, item)
        for position, (query, ids) in enumerate(zip(queries, returned, strict=True))
        for item in ids
        if item not in known[position] and query.exact_scores[-1] >= cuts[position]
    ]
    for start in range(0, len(unknown), SCORE_BATCH):
        chunk = unknown[start : start + SCORE_BATCH]
        pairs = [
            (searcher.item(queries[position].item_id), searcher.item(item))
            for position, item in chunk
        ]
        scored = await searcher.client.score(pairs, variant=searcher.variant)
        for (position, item), score in zip(chunk, scored.scores, strict=True):
            known[position][item] = score
    recalls = [
        tie_aware_recall(ids, known[position], cuts[position], queries[position].wanted)
        for position, ids in enumerate(returned)
    ]
    return sum(recalls) / len(recalls)


def _point(value: int | str, recall: float, latencies: Sequence[float], build: Any) -> JsonObject:
    return {
        "value": value,
        "recall_at_10": round(recall, 6),
        "build_recall_at_10": build,
        "p50_ms": percentile(latencies, 50.0),
        "p99_ms": percentile(latencies, 99.0),
        "mean_ms": sum(latencies) / len(latencies),
    }


async def run_sweep(
    config: SweepConfig, *, transport: httpx.AsyncBaseTransport | None = None
) -> SweepRun:
    """Run the sweep against the live service at ``config.url`` (``transport``: an httpx
    transport instead of the network, for tests).

    Raises:
        BenchmarkSetupError: the collection is unknown or ambiguous, has no parameter to sweep,
            or the service did not search with the parameters asked for.
        CrisscrossError: the service refused a request (a value above its limits, ...).
    """
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    async with CrisscrossClient(
        config.url, timeout_s=config.request_timeout_s, max_connections=2, transport=transport
    ) as client:
        await client.wait_ready(config.ready_timeout_s)
        entry = _collection_entry(await client.collections(), config)
        parameter = _parameter(entry)
        values = _values(entry, parameter, config)
        searcher = _Searcher(client, entry)
        count = int(entry["count"])
        if count < 2:
            raise BenchmarkSetupError(f"collection {searcher.collection} holds fewer than 2 items")
        pool = await _id_pool(
            searcher, int(entry["dim"]), count, POOL_FACTOR * config.queries, config.seed
        )
        items = random.Random(config.seed).sample(pool, min(config.queries, len(pool)))
        logger.info(
            "sweep: %d queries of %s, %s in %s", len(items), searcher.collection, parameter, values
        )
        queries = await _exact_queries(searcher, items, min(EXACT_DEPTH, count - 1))
        build = {
            int(point["value"]): point["recall_at_10"]
            for point in (entry.get("tuning") or {}).get("sweep") or []
        }
        points = []
        measured: list[int | str] = [EXACT, *values]
        for value in measured:
            params: JsonObject = {"exact": True} if value == EXACT else {parameter: value}
            returned, latencies = await _measure(searcher, queries, params, config.warmup_requests)
            recall = await _recall(searcher, queries, returned)
            points.append(
                _point(
                    value, recall, latencies, build.get(value) if isinstance(value, int) else None
                )
            )
            logger.info(
                "sweep: %s=%s recall@10 %.4f p50 %.2f ms",
                parameter,
                value,
                recall,
                points[-1]["p50_ms"],
            )
    report: dict[str, Any] = {
        "schema_version": SWEEP_SCHEMA_VERSION,
        "kind": "sweep",
        "url": config.url,
        "collection": searcher.collection,
        "variant": searcher.variant,
        "bundle": entry.get("bundle"),
        "bundle_version": entry.get("bundle_version"),
        "count": count,
        "index_kind": entry.get("index_kind"),
        "factory": entry.get("factory"),
        "index_device": entry.get("index_device"),
        "on_disk": entry.get("on_disk"),
        "parameter": parameter,
        "default_search_params": entry.get("search_params"),
        "tuning": entry.get("tuning"),
        "values": values,
        "queries": len(queries),
        "k": RECALL_K,
        "query_source": (
            f"{len(items)} stored items sampled with seed {config.seed} from {len(pool)} ids "
            f"found by exact searches along {POOL_DIRECTIONS} seeded random directions; each "
            "query's own id excluded from every answer"
        ),
        "recall": "tie-aware recall@10 against exact search: a returned id counts when its "
        "exact score is at least the 10th exact score - 1e-6",
        "latency": "client-side, sequential, one request at a time, after the warm-up",
        "exact": points[0],
        "points": points[1:],
        "settings": config.settings(),
        "environment": environment_info(),
        "started_at": started_at.isoformat(timespec="seconds"),
        "duration_s": time.perf_counter() - started,
    }
    return SweepRun(report=report)

"""The mixed run (``python -m benchmarks mixed``): does search keep its latency while writers
upsert and delete, and does every acknowledged write show at once?

1. Setup: wait for ``GET /readyz``; drop the collection if it exists, create it fresh (client
   vectors of ``dim``, one field ``{"group": "integer"}``); preload ``preload`` items in batches
   of ``preload_batch``; ``warmup_requests`` unrecorded searches.
2. ``idle``: ``searchers`` closed-loop clients search along seeded random unit vectors
   (``k``, no filter) for ``phase_s`` seconds.
3. ``writing``: the same searchers for ``phase_s`` seconds beside ``writers`` closed-loop
   writers. Each request of a writer deletes ``batch`` of its earlier ids (its share of the
   preload, then its own writes) with probability ``delete_share``, else upserts ``batch`` new
   ids. After each acknowledged upsert it reads one of the items just written back, at once and
   side by side, with ``items/get`` and with a k=1 search along the item's own vector: the
   service promises read-your-writes, so the first answer must hold it (else it is counted not
   visible at first read, and polled for up to ``visibility_timeout_s``); the lag is the time
   from the ack to the first answer that holds it. After each acknowledged delete it reads every
   deleted id with ``items/get`` and searches along one deleted item's vector: a deleted id
   still returned is counted resurrected.
4. The collection's facts (``GET /v1/collections/{name}``), then it is dropped unless ``keep``.

A 503 with ``Retry-After`` is retried after that wait and counted (``retried_503``); any other
non-2xx answer, timeout or broken connection is an error, counted by status.

``mixed.json``: per phase the searches (count, per second, errors, p50/p95/p99/max/mean); in
``writing`` also the upserts and deletes (requests, latency, items/s, a per-second timeline),
the read-your-writes checks and the delete checks; totals of errors, retries and violations;
the client machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import httpx
from tqdm import tqdm

import crisscross_client
from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.runs.environment import environment_info, load_average
from benchmarks.runs.mixed.caller import Caller, Outcome
from benchmarks.runs.mixed.config import MixedRunConfig
from benchmarks.runs.mixed.payloads import (
    FIELDS,
    PRELOAD_STREAM,
    ItemRef,
    Vectors,
    batch_refs,
    query_bodies,
    unit_vectors,
    upsert_body,
    vector_search,
    writer_stream,
)
from benchmarks.runs.mixed.summary import (
    DeleteChecks,
    RequestTally,
    Visibility,
    ratio,
    throughput_timeline,
)
from benchmarks.runs.setup_error import BenchmarkSetupError

logger = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1
IDLE: Final = "idle"
WRITING: Final = "writing"
QUERY_POOL: Final = 1024
"""Distinct query vectors the searchers cycle through."""
PROGRESS_EVERY_S: Final = 5.0
POLL_S: Final = 0.005
"""Pause between two reads of a write not seen yet."""
SEARCH_PATH: Final = "/v1/search"


@dataclass(frozen=True)
class MixedRun:
    """A finished run: ``report`` is ``mixed.json``; ``searches`` are the searchers'
    ``(seconds since the idle phase began, latency ms, phase)`` of every 2xx answer, for the
    plot."""

    report: dict[str, Any]
    searches: list[tuple[float, float, str]]


@dataclass
class _Writes:
    """What the writers of the ``writing`` phase did and checked."""

    upserts: RequestTally = field(default_factory=RequestTally)
    deletes: RequestTally = field(default_factory=RequestTally)
    checks: RequestTally = field(default_factory=RequestTally)
    get_visibility: Visibility = field(default_factory=Visibility)
    search_visibility: Visibility = field(default_factory=Visibility)
    delete_checks: DeleteChecks = field(default_factory=DeleteChecks)
    acks: list[tuple[float, int]] = field(default_factory=list)
    upserted: int = 0
    deleted: int = 0
    delete_not_found: int = 0


def _found(outcome: Outcome, item_id: str, *, search: bool) -> bool:
    """Whether a 2xx answer holds ``item_id``: among a get's items, or first of a search."""
    body = outcome.body or {}
    if search:
        results = body.get("results") or []
        return bool(results) and results[0].get("id") == item_id
    return any(item.get("id") == item_id for item in body.get("items") or [])


class _Mixed:
    """One run's state: the config, the measured client and the collection's paths."""

    def __init__(self, config: MixedRunConfig, caller: Caller, pools: list[list[ItemRef]]) -> None:
        self.config = config
        self.caller = caller
        self.pools = pools
        name = config.collection
        self.items_path = f"/v1/collections/{name}/items"
        self.get_path = f"/v1/collections/{name}/items/get"
        self.delete_path = f"/v1/collections/{name}/items/delete"
        self.queries = query_bodies(config.seed, QUERY_POOL, config.dim, name, config.k)
        self.searches: list[tuple[float, float, str]] = []
        self.origin = time.monotonic()
        self.writes = _Writes()

    # -- searchers ----------------------------------------------------------------------------

    async def warm_up(self) -> None:
        for n in range(self.config.warmup_requests):
            outcome = await self.caller.post(SEARCH_PATH, self.queries[n % len(self.queries)])
            if not outcome.ok:
                raise BenchmarkSetupError(f"a warm-up search answered {outcome.status}")

    async def search_loop(
        self, index: int, phase: str, deadline: float, tally: RequestTally
    ) -> None:
        n = index * (len(self.queries) // self.config.searchers)
        while time.monotonic() < deadline:
            outcome = await self.caller.post(SEARCH_PATH, self.queries[n % len(self.queries)])
            n += 1
            tally.record(outcome.status, outcome.latency_ms, outcome.retries)
            if outcome.ok:
                self.searches.append((outcome.answered_at - self.origin, outcome.latency_ms, phase))

    # -- writers ------------------------------------------------------------------------------

    async def write_loop(self, writer: int, deadline: float) -> None:
        config = self.config
        rng = random.Random(f"mixed-{config.seed}-{writer}")
        pool = self.pools[writer]
        stream = writer_stream(writer)
        batch = 0
        while time.monotonic() < deadline:
            if pool and rng.random() < config.delete_share:
                await self.delete(rng, pool)
                continue
            refs = batch_refs(stream, batch, config.batch)
            vectors = unit_vectors(config.seed, stream, batch, config.batch, config.dim)
            batch += 1
            if await self.upsert(rng, refs, vectors):
                pool.extend(refs)

    async def upsert(self, rng: random.Random, refs: list[ItemRef], vectors: Vectors) -> bool:
        """One upsert and, once acknowledged, its read-your-writes checks; whether it was
        acknowledged."""
        writes = self.writes
        body = upsert_body(refs, vectors, self.config.vector_format)
        outcome = await self.caller.post(self.items_path, body)
        writes.upserts.record(outcome.status, outcome.latency_ms, outcome.retries)
        if not outcome.ok:
            return False
        writes.upserted += len(refs)
        writes.acks.append((outcome.answered_at, len(refs)))
        pick = rng.randrange(len(refs))
        item_id = refs[pick].id
        search = vector_search(vectors[pick], self.config.collection, 1)
        await asyncio.gather(
            self.until_seen(
                self.get_path, {"ids": [item_id]}, item_id, outcome, writes.get_visibility
            ),
            self.until_seen(SEARCH_PATH, search, item_id, outcome, writes.search_visibility),
        )
        return True

    async def until_seen(
        self,
        path: str,
        body: JsonObject,
        item_id: str,
        ack: Outcome,
        visibility: Visibility,
    ) -> None:
        """Read ``item_id`` until an answer holds it or ``visibility_timeout_s`` passed; a read
        that fails ends the check (counted as an error, not as a violation)."""
        reads = 0
        while True:
            outcome = await self.caller.post(path, body)
            self.writes.checks.record(outcome.status, outcome.latency_ms, outcome.retries)
            if not outcome.ok:
                return
            reads += 1
            if _found(outcome, item_id, search=path == SEARCH_PATH):
                visibility.record((outcome.answered_at - ack.answered_at) * 1000.0, reads)
                return
            if outcome.answered_at - ack.answered_at > self.config.visibility_timeout_s:
                visibility.record(None, reads)
                logger.warning("%s never seen by %s after its ack", item_id, path)
                return
            await asyncio.sleep(POLL_S)

    async def delete(self, rng: random.Random, pool: list[ItemRef]) -> None:
        """Delete up to ``batch`` ids drawn from ``pool`` (taken out of it) and check them."""
        writes = self.writes
        chosen: list[ItemRef] = []
        for _ in range(min(self.config.batch, len(pool))):
            index = rng.randrange(len(pool))
            pool[index], pool[-1] = pool[-1], pool[index]
            chosen.append(pool.pop())
        ids = [ref.id for ref in chosen]
        outcome = await self.caller.post(self.delete_path, {"ids": ids})
        writes.deletes.record(outcome.status, outcome.latency_ms, outcome.retries)
        if not outcome.ok:
            return
        deleted = int((outcome.body or {}).get("deleted", 0))
        writes.deleted += deleted
        writes.delete_not_found += len(ids) - deleted
        probe = chosen[rng.randrange(len(chosen))]
        search = vector_search(
            probe.vector(self.config.seed, self.config.dim), self.config.collection, 1
        )
        got, searched = await asyncio.gather(
            self.caller.post(self.get_path, {"ids": ids}),
            self.caller.post(SEARCH_PATH, search),
        )
        for check in (got, searched):
            writes.checks.record(check.status, check.latency_ms, check.retries)
        wanted = set(ids)
        still = sum(1 for item in (got.body or {}).get("items") or [] if item.get("id") in wanted)
        resurrected = searched.ok and _found(searched, probe.id, search=True)
        writes.delete_checks.record(
            ids=len(ids), still_in_get=still, searched=searched.ok, found_by_search=resurrected
        )
        if still or resurrected:
            logger.warning("a deleted id was read back after its delete's ack: %s", probe.id)

    # -- phases -------------------------------------------------------------------------------

    async def phase(self, name: str) -> dict[str, Any]:
        config = self.config
        started = time.monotonic()
        deadline = started + config.phase_s
        search = RequestTally()
        jobs: list[Coroutine[Any, Any, None]] = [
            self.search_loop(index, name, deadline, search) for index in range(config.searchers)
        ]
        if name == WRITING:
            jobs += [self.write_loop(writer, deadline) for writer in range(config.writers)]
        ticker = asyncio.create_task(self.tick(name, started, search))
        try:
            await asyncio.gather(*jobs)
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        ended = time.monotonic()
        wall_s = ended - started
        entry: dict[str, Any] = {"wall_s": wall_s, "search": search.summary(wall_s)}
        if name == WRITING:
            entry.update(self.writing_entry(started, ended))
        self.log_phase(name, entry)
        return entry

    def writing_entry(self, started: float, ended: float) -> dict[str, Any]:
        writes = self.writes
        wall_s = ended - started
        return {
            "upserts": writes.upserts.summary(wall_s),
            "items_upserted": writes.upserted,
            "items_per_s": writes.upserted / wall_s,
            "deletes": writes.deletes.summary(wall_s),
            "ids_deleted": writes.deleted,
            "ids_deleted_per_s": writes.deleted / wall_s,
            "delete_not_found": writes.delete_not_found,
            "timeline": throughput_timeline(writes.acks, started, ended),
            "visibility": {
                "get": writes.get_visibility.summary(),
                "search": writes.search_visibility.summary(),
            },
            "delete_checks": writes.delete_checks.summary(),
            "checks": writes.checks.summary(wall_s),
        }

    async def tick(self, name: str, started: float, search: RequestTally) -> None:
        if not self.config.show_progress:
            return
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            elapsed = time.monotonic() - started
            line = f"{name}: {elapsed:.0f} of {self.config.phase_s:g} s, {search.ok} searches"
            if name == WRITING:
                line += (
                    f", {self.writes.upserted:,} items upserted "
                    f"({self.writes.upserted / elapsed:,.0f}/s), {self.writes.deleted:,} deleted"
                )
            logger.info("%s", line)

    @staticmethod
    def log_phase(name: str, entry: dict[str, Any]) -> None:
        search = entry["search"]
        logger.info(
            "%s: %d searches (%.0f/s), p50 %s ms, p99 %s ms, %d errors",
            name,
            search["ok"],
            search["per_s"] or 0.0,
            _ms(search["p50_ms"]),
            _ms(search["p99_ms"]),
            search["errors"],
        )
        if name == WRITING:
            logger.info(
                "writing: %d items upserted (%.0f/s), %d ids deleted; not visible at first "
                "read: %d (get), %d (search); resurrected deletes: %d",
                entry["items_upserted"],
                entry["items_per_s"],
                entry["ids_deleted"],
                entry["visibility"]["get"]["not_visible_at_first_read"],
                entry["visibility"]["search"]["not_visible_at_first_read"],
                entry["delete_checks"]["resurrected"],
            )


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


async def _drop(client: CrisscrossClient, name: str) -> bool:
    """Drop the live collection ``name``; whether it existed."""
    try:
        await client.request_json("DELETE", f"/v1/collections/{name}")
    except crisscross_client.CrisscrossError as error:
        if error.status == 404:
            return False
        raise
    return True


async def _create(client: CrisscrossClient, config: MixedRunConfig) -> JsonObject:
    body = {"name": config.collection, "dim": config.dim, "fields": dict(FIELDS)}
    try:
        return await client.request_json("POST", "/v1/collections", body)
    except crisscross_client.CrisscrossError as error:
        if error.status == 409:
            raise BenchmarkSetupError(
                f"the service refused to create live collection {config.collection!r} "
                f"({error.code}: {error.message}); start it with --collections-dir"
            ) from error
        raise


async def _preload(client: CrisscrossClient, config: MixedRunConfig) -> dict[str, Any]:
    """Write the preload in batches; its items, requests, seconds and items/s."""
    path = f"/v1/collections/{config.collection}/items"
    started = time.monotonic()
    requests = 0
    with tqdm(
        total=config.preload, desc="preload", unit="item", disable=not config.show_progress
    ) as bar:
        for batch, first in enumerate(range(0, config.preload, config.preload_batch)):
            count = min(config.preload_batch, config.preload - first)
            refs = batch_refs(PRELOAD_STREAM, batch, count)
            vectors = unit_vectors(config.seed, PRELOAD_STREAM, batch, count, config.dim)
            answer = await client.request_json(
                "POST", path, upsert_body(refs, vectors, config.vector_format)
            )
            if answer.get("upserted") != count:
                raise BenchmarkSetupError(f"a preload batch of {count} answered {answer}")
            requests += 1
            bar.update(count)
    seconds = time.monotonic() - started
    return {
        "items": config.preload,
        "requests": requests,
        "seconds": seconds,
        "items_per_s": config.preload / seconds if seconds > 0 and config.preload else None,
    }


def _preload_pools(config: MixedRunConfig) -> list[list[ItemRef]]:
    """Each writer's ids to delete from at the start: every ``writers``-th preloaded item."""
    pools: list[list[ItemRef]] = [[] for _ in range(config.writers)]
    for index in range(config.preload):
        batch, row = divmod(index, config.preload_batch)
        pools[index % config.writers].append(ItemRef(PRELOAD_STREAM, batch, row))
    return pools


def _totals(phases: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Errors, retries and violations over every measured request and check."""
    writing = phases[WRITING]
    tallies = [phases[IDLE]["search"], writing["search"]]
    tallies += [writing["upserts"], writing["deletes"], writing["checks"]]
    visibility = writing["visibility"]
    return {
        "errors": sum(int(entry["errors"]) for entry in tallies),
        "retried_503": sum(int(entry["retried_503"]) for entry in tallies),
        "not_visible_at_first_read": sum(
            int(visibility[kind]["not_visible_at_first_read"]) for kind in ("get", "search")
        ),
        "never_visible": sum(int(visibility[kind]["never_visible"]) for kind in ("get", "search")),
        "resurrected_deletes": int(writing["delete_checks"]["resurrected"]),
        "delete_not_found": int(writing["delete_not_found"]),
    }


def _collection_facts(info: JsonObject) -> dict[str, Any]:
    keys = ("count", "seq", "rows", "base_count", "base_version", "index", "log_bytes")
    return {key: info.get(key) for key in keys}


async def run_mixed(
    config: MixedRunConfig, transport: httpx.AsyncBaseTransport | None = None
) -> MixedRun:
    """Preload a fresh live collection, then search it idle and beside writers (see the
    module).

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).
    """
    load_before = load_average()
    connections = config.searchers + 2 * config.writers + 2
    async with CrisscrossClient(
        config.url, timeout_s=config.timeout_s, max_connections=2, transport=transport
    ) as client:
        await client.wait_ready(config.ready_timeout_s)
        if await _drop(client, config.collection):
            logger.info("dropped the existing collection %r", config.collection)
        created = await _create(client, config)
        try:
            logger.info(
                "collection %r: %d-d client vectors as %s; preloading %d items",
                config.collection,
                config.dim,
                config.vector_format,
                config.preload,
            )
            preload = await _preload(client, config)
            async with Caller(
                config.url,
                timeout_s=config.timeout_s,
                max_connections=connections,
                transport=transport,
            ) as caller:
                mixed = _Mixed(config, caller, _preload_pools(config))
                await mixed.warm_up()
                mixed.origin = time.monotonic()
                logger.info("idle: %d searchers for %g s", config.searchers, config.phase_s)
                phases = {IDLE: await mixed.phase(IDLE)}
                logger.info(
                    "writing: %d searchers beside %d writers for %g s",
                    config.searchers,
                    config.writers,
                    config.phase_s,
                )
                phases[WRITING] = await mixed.phase(WRITING)
            final = await client.request_json("GET", f"/v1/collections/{config.collection}")
        except BaseException:
            if not config.keep:
                with contextlib.suppress(Exception):
                    await _drop(client, config.collection)
            raise
        if not config.keep:
            await _drop(client, config.collection)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "service": config.url,
        "settings": config.settings(),
        "collection": {
            "name": config.collection,
            "dim": created.get("dim", config.dim),
            "fields": created.get("fields", dict(FIELDS)),
            "final": _collection_facts(final),
            "kept": config.keep,
        },
        "preload": preload,
        "phases": phases,
        "search_p99_ratio": ratio(
            phases[WRITING]["search"]["p99_ms"], phases[IDLE]["search"]["p99_ms"]
        ),
        "totals": _totals(phases),
        "environment": {
            **environment_info(),
            "load_average_before": load_before,
            "load_average_after": load_average(),
        },
    }
    return MixedRun(report=report, searches=mixed.searches)

"""``python -m benchmarks load``: throughput and tail latency of a live service, up to and past
its knee.

Phases:

1. **Setup.** Read the split's captions (``<data>/coco-karpathy-captions/captions_<split>.csv``),
   shuffle them with the seed and pre-serialise one ``POST /v1/search`` per caption
   (``{"query": {"text": ...}, "collection", "k", "include_metadata": true}``: what an app
   sends). Wait for ``GET /readyz``, read ``GET /v1/collections`` / ``GET /v1/variants`` (httpx,
   off the clock), and check one answer in full (status 200, ``k`` results with metadata).
2. **Closed loop** at each ``closed_levels`` concurrency: warm-up requests first (not
   recorded), then up to ``max_requests`` or ``duration_s``. The largest closed-loop 2xx
   throughput is the **saturation throughput**.
3. **Open loop** (Poisson arrivals) at offered rates: given, or ``open_fractions`` of the
   saturation throughput (default 0.25 … 2.0: up to and past the knee). Before each level the
   service is given time to drain what a previous overloaded level left queued (single probes
   until one answers about as fast as unloaded).
4. **Summary.** ``efficiency_ratio`` = saturation ÷ the bare in-process throughput of the same
   work (``scripts/bench_inprocess.py``'s JSON, when given); ``overload_2x``: the open level
   nearest 2× saturation — its admitted (2xx) p99 against the unloaded p99 (closed c=1, else
   the lowest concurrency), and the share and latency of its 503 answers.

Every request goes over the light raw client (:mod:`benchmarks.rawhttp`), one keep-alive
connection per closed-loop worker, a LIFO pool of at most ``max_connections`` in the open loop.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.client import CrisscrossClient, JsonObject
from benchmarks.cxc import BenchmarkSetupError
from benchmarks.datasets import captions_path, read_captions
from benchmarks.load import (
    LevelRun,
    RawSender,
    Sender,
    SenderPool,
    closed_loop,
    latencies_ok_ms,
    onset_summary,
    open_loop,
    poisson_schedule,
    summarize,
)
from benchmarks.load_report import (
    LOAD_LATENCY_PLOT,
    LOAD_PLOT,
    SCHEMA_VERSION,
    closed_key,
    open_key,
    render_load_markdown,
)
from benchmarks.plots import plot_latency, plot_load
from benchmarks.rawhttp import Endpoint, RawConnection, TransportFailure, build_request
from benchmarks.report import environment_info, write_json

logger = logging.getLogger(__name__)

DEFAULT_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2.0)
"""Open-loop offered rates as fractions of the closed-loop saturation throughput."""
OVERLOAD_FACTOR = 2.0
"""The overload check looks at the open level nearest this multiple of saturation …"""
OVERLOAD_RANGE = (1.5, 3.0)
"""… among those within this range of multiples."""


@dataclass(frozen=True)
class LoadRunConfig:
    """Everything ``python -m benchmarks load`` can be told.

    Attributes:
        url: the service root, ``http://127.0.0.1:PORT``.
        data_dir: data folder holding ``coco-karpathy-captions/captions_<split>.csv``.
        split: split name in the captions file name.
        closed_levels: closed-loop concurrencies (workers = connections).
        open_rates: open-loop offered rates, requests/s; ``None`` = ``open_fractions`` of the
            saturation throughput; ``()`` = no open loop.
        open_fractions: multiples of saturation used when ``open_rates`` is ``None``.
        duration_s: longest a level sends, seconds (closed: no start after it; open: the
            measured schedule's length, after the warm-up).
        open_warmup_s: open loop: seconds of each level's arrivals sent before the measured
            ``duration_s`` (the service adapts to a new load meanwhile); reported apart as the
            level's ``onset``.
        max_requests: most requests per level.
        warmup_requests: unrecorded requests before each closed level.
        max_connections: open loop: most connections at once.
        drain_s: open loop: how long answers are awaited after the last intended send, seconds.
        timeout_s: per-request timeout on the wire, seconds.
        settle_s: longest wait for the service to drain between open levels, seconds.
        k: results per search.
        collection: the searched collection.
        variant: encoder variant; the service default when ``None``.
        include_metadata: ask for each hit's metadata (what an app does).
        seed: caption order and Poisson schedules.
        inprocess_json: ``scripts/bench_inprocess.py`` output, for the efficiency ratio.
        ready_timeout_s: longest wait for ``GET /readyz``, seconds.
    """

    url: str
    data_dir: Path
    split: str = "val"
    closed_levels: tuple[int, ...] = (1, 8, 32)
    open_rates: tuple[float, ...] | None = None
    open_fractions: tuple[float, ...] = DEFAULT_FRACTIONS
    duration_s: float = 20.0
    open_warmup_s: float = 2.0
    max_requests: int = 20_000
    warmup_requests: int = 50
    max_connections: int = 256
    drain_s: float = 10.0
    timeout_s: float = 10.0
    settle_s: float = 30.0
    k: int = 10
    collection: str = "captions"
    variant: str | None = None
    include_metadata: bool = True
    seed: int = 0
    inprocess_json: Path | None = None
    ready_timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if not self.closed_levels or min(self.closed_levels) < 1:
            raise ValueError("closed_levels must hold concurrencies ≥ 1")
        if self.open_rates is not None and any(rate <= 0 for rate in self.open_rates):
            raise ValueError("open rates must be > 0")
        if not self.open_fractions or min(self.open_fractions) <= 0:
            raise ValueError("open fractions must be > 0")
        if self.duration_s <= 0 or self.drain_s < 0 or self.timeout_s <= 0:
            raise ValueError("need duration_s > 0, drain_s ≥ 0, timeout_s > 0")
        if self.open_warmup_s < 0:
            raise ValueError("open_warmup_s must be ≥ 0")
        if self.max_requests < 1 or self.warmup_requests < 0 or self.max_connections < 1:
            raise ValueError("need max_requests ≥ 1, warmup_requests ≥ 0, max_connections ≥ 1")
        if self.k < 1:
            raise ValueError("k must be ≥ 1")


@dataclass
class LoadRun:
    """A finished run: the ``load.json`` object and each level's 2xx latencies (ms)."""

    report: dict[str, Any]
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)


def search_body(
    text: str, collection: str, k: int, *, include_metadata: bool, variant: str | None
) -> bytes:
    """The JSON body of one text search, as bytes."""
    body: JsonObject = {"query": {"text": text}, "collection": collection, "k": k}
    body["include_metadata"] = include_metadata
    if variant is not None:
        body["variant"] = variant
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def search_payloads(
    endpoint: Endpoint,
    texts: Sequence[str],
    collection: str,
    k: int,
    *,
    include_metadata: bool = True,
    variant: str | None = None,
) -> list[bytes]:
    """One pre-serialised ``POST /v1/search`` request per text."""
    return [
        build_request(
            endpoint,
            "POST",
            "/v1/search",
            search_body(text, collection, k, include_metadata=include_metadata, variant=variant),
        )
        for text in texts
    ]


def rate_levels(
    saturation_qps: float, fractions: Sequence[float]
) -> list[tuple[float, float | None]]:
    """Offered rates from fractions of saturation: (rate, fraction) pairs, rates rounded to
    whole requests/s (to 0.1 below 10/s), duplicates dropped."""
    levels: list[tuple[float, float | None]] = []
    seen: set[float] = set()
    for fraction in fractions:
        raw = saturation_qps * fraction
        rate = float(round(raw)) if raw >= 10 else max(0.1, round(raw, 1))
        if rate not in seen:
            seen.add(rate)
            levels.append((rate, fraction))
    return levels


def overload_check(
    open_entries: dict[str, dict[str, Any]],
    saturation_qps: float,
    unloaded_p99_ms: float | None,
) -> dict[str, Any] | None:
    """The ``overload_2x`` entry: the open level nearest 2× saturation (within 1.5–3×).

    ``ratio`` = admitted (2xx) p99 ÷ unloaded p99; ``rejected_share`` = 503 answers ÷ requests
    of the level. ``None`` when no level is in range.
    """
    if saturation_qps <= 0:
        return None
    candidates = [
        (abs(float(entry["offered_rps"]) / saturation_qps - OVERLOAD_FACTOR), key, entry)
        for key, entry in open_entries.items()
        if OVERLOAD_RANGE[0] <= float(entry["offered_rps"]) / saturation_qps <= OVERLOAD_RANGE[1]
    ]
    if not candidates:
        return None
    _, key, entry = min(candidates, key=lambda item: item[0])
    admitted = entry.get("p99_ms")
    requests = int(entry["requests"])
    ratio = (
        admitted / unloaded_p99_ms
        if isinstance(admitted, float) and unloaded_p99_ms and unloaded_p99_ms > 0
        else None
    )
    return {
        "level": key,
        "offered_rps": entry["offered_rps"],
        "saturation_multiple": round(float(entry["offered_rps"]) / saturation_qps, 3),
        "admitted_p99_ms": admitted,
        "unloaded_p99_ms": unloaded_p99_ms,
        "ratio": None if ratio is None else round(ratio, 3),
        "rejected_share": round(int(entry["rejected"]) / requests, 4) if requests else None,
        "rejected_p99_ms": entry.get("rejected_p99_ms"),
        "errors": entry["errors"],
        "qps": entry["qps"],
    }


def read_inprocess_qps(path: Path) -> tuple[float, dict[str, Any]]:
    """``inprocess_qps`` and the whole object of a ``scripts/bench_inprocess.py`` JSON file.

    Raises:
        BenchmarkSetupError: unreadable, or no positive ``inprocess_qps``.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BenchmarkSetupError(f"cannot read in-process results {path}: {error}") from error
    value = data.get("inprocess_qps") if isinstance(data, dict) else None
    if not isinstance(value, int | float) or value <= 0:
        raise BenchmarkSetupError(f"{path} holds no positive 'inprocess_qps'")
    return float(value), data


class _Session:
    """One run's connection target, payloads and running request index."""

    def __init__(self, config: LoadRunConfig, endpoint: Endpoint, payloads: list[bytes]) -> None:
        self.config = config
        self.endpoint = endpoint
        self.payloads = payloads
        self.next_index = 0

    def sender(self) -> RawSender:
        return RawSender(
            RawConnection(self.endpoint, timeout_s=self.config.timeout_s), self.payloads
        )

    def payload(self, index: int) -> bytes:
        """The request bytes of request number ``index`` (payloads cycle)."""
        return self.payloads[index % len(self.payloads)]

    def take(self, count: int) -> int:
        """Reserve ``count`` request indices; returns the first."""
        first = self.next_index
        self.next_index += count
        return first


async def _check_answer(session: _Session, count: int) -> None:
    """One search over the raw client, parsed in full: 200, ``k`` results, metadata."""
    connection = RawConnection(session.endpoint, timeout_s=session.config.timeout_s)
    try:
        response = await connection.request(session.payload(0))
    except TransportFailure as failure:
        raise BenchmarkSetupError(f"the first search failed: {failure}") from failure
    finally:
        await connection.aclose()
    if response.status != 200:
        raise BenchmarkSetupError(
            f"the first search answered {response.status}: {response.body[:300]!r}"
        )
    try:
        answer = json.loads(response.body)
    except ValueError as error:
        raise BenchmarkSetupError(f"the first search's body is not JSON: {error}") from error
    results = answer.get("results") if isinstance(answer, dict) else None
    expected = min(session.config.k, count)
    if not isinstance(results, list) or len(results) != expected:
        raise BenchmarkSetupError(f"the first search returned no list of {expected} results")
    if session.config.include_metadata and not all(
        isinstance(hit, dict) and hit.get("metadata") for hit in results
    ):
        raise BenchmarkSetupError("the first search's results carry no metadata")


async def _connect(sender: Sender) -> None:
    if isinstance(sender, RawSender):
        await sender.connection.connect()


def _connection_counts(senders: Sequence[Sender]) -> tuple[int, int]:
    """(TCP connects, resends) so far over ``senders``' raw connections."""
    raw = [sender.connection for sender in senders if isinstance(sender, RawSender)]
    return sum(c.connects for c in raw), sum(c.resends for c in raw)


async def _closed_level(session: _Session, concurrency: int) -> LevelRun:
    config = session.config
    senders = [session.sender() for _ in range(concurrency)]
    try:
        for sender in senders:
            await _connect(sender)
        if config.warmup_requests:
            warm = max(config.warmup_requests, concurrency)
            await closed_loop(
                senders,
                max_requests=warm,
                duration_s=config.duration_s,
                first_index=session.take(warm),
            )
        connects, resends = _connection_counts(senders)
        run = await closed_loop(
            senders,
            max_requests=config.max_requests,
            duration_s=config.duration_s,
            first_index=session.take(config.max_requests),
        )
        connects_after, resends_after = _connection_counts(senders)
        run.connections, run.resends = connects_after - connects, resends_after - resends
        return run
    finally:
        for sender in senders:
            await sender.aclose()


async def _settle(session: _Session, unloaded_p50_ms: float | None) -> float:
    """Probe with single requests until one answers within about the unloaded latency (the
    service drained what a previous level queued) or ``settle_s`` passes; returns seconds."""
    config = session.config
    target_ms = max(3.0 * (unloaded_p50_ms or 50.0), (unloaded_p50_ms or 50.0) + 20.0)
    started = time.perf_counter()
    connection = RawConnection(session.endpoint, timeout_s=max(config.timeout_s, config.settle_s))
    try:
        while True:
            began = time.perf_counter()
            try:
                response = await connection.request(session.payload(session.take(1)))
                ok = response.status == 200
            except TransportFailure:
                ok = False
            took_ms = (time.perf_counter() - began) * 1000.0
            waited = time.perf_counter() - started
            if ok and took_ms <= target_ms:
                return waited
            if waited >= config.settle_s:
                logger.warning(
                    "service still slow after %.0f s (last probe %.0f ms); going on",
                    waited,
                    took_ms,
                )
                return waited
    finally:
        await connection.aclose()


async def _open_level(
    session: _Session, rate: float, schedule: list[float], expected_in_flight: int
) -> LevelRun:
    config = session.config
    pool = SenderPool(session.sender, config.max_connections)
    try:
        await pool.prewarm(expected_in_flight, _connect)
        connects, resends = _connection_counts(pool.senders)
        run = await open_loop(
            pool,
            schedule,
            rate=rate,
            drain_s=config.drain_s,
            first_index=session.take(len(schedule)),
            warmup_s=config.open_warmup_s,
        )
        connects_after, resends_after = _connection_counts(pool.senders)
        run.connections, run.resends = connects_after - connects, resends_after - resends
        return run
    finally:
        await pool.aclose()


def level_schedule(config: LoadRunConfig, rate: float, seed: list[int]) -> list[float]:
    """An open level's Poisson send times: the warm-up's (``open_warmup_s``), then at most
    ``max_requests`` over ``duration_s``."""
    drawn = poisson_schedule(rate, config.open_warmup_s + config.duration_s, 2**62, seed)
    warmup = [offset for offset in drawn if offset < config.open_warmup_s]
    measured = [offset for offset in drawn if offset >= config.open_warmup_s]
    return warmup + measured[: config.max_requests]


async def _service_facts(config: LoadRunConfig) -> tuple[int, dict[str, Any]]:
    """Wait for readiness; the collection's size and what the service says it serves."""
    async with CrisscrossClient(config.url, timeout_s=config.timeout_s) as client:
        await client.wait_ready(config.ready_timeout_s)
        collections = await client.collections()
        try:
            variants: list[JsonObject] | None = await client.variants()
        except Exception:  # optional information only
            variants = None
    served = {str(entry.get("name")): entry for entry in collections}
    if config.collection not in served:
        raise BenchmarkSetupError(
            f"the service serves no {config.collection!r} collection (has {sorted(served)})"
        )
    entry = served[config.collection]
    return int(entry.get("count") or 0), {
        "collection": entry,
        "variants": variants,
    }


def _load_average() -> list[float] | None:
    """The machine's 1/5/15-minute load averages (runnable processes), if the OS tells."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


async def run_load(config: LoadRunConfig) -> LoadRun:
    """Run every phase against the live service and assemble ``load.json``.

    Raises:
        BenchmarkSetupError: the service does not serve the collection or answers the first
            search wrongly; a bad in-process file; no closed level had a 2xx answer.
        benchmarks.client.ServiceNotReadyError: ``/readyz`` never answered 200.
        benchmarks.datasets.DatasetError, OSError: the captions file.
    """
    started_run = time.perf_counter()
    load_before = _load_average()
    inprocess: tuple[float, dict[str, Any]] | None = None
    if config.inprocess_json is not None:
        inprocess = read_inprocess_qps(config.inprocess_json)
    texts = [
        caption.text for caption in read_captions(captions_path(config.data_dir, config.split))
    ]
    if not texts:
        raise BenchmarkSetupError("the captions file holds no captions")
    random.Random(config.seed).shuffle(texts)
    endpoint = Endpoint.from_url(config.url)
    payloads = search_payloads(
        endpoint,
        texts,
        config.collection,
        config.k,
        include_metadata=config.include_metadata,
        variant=config.variant,
    )
    count, facts = await _service_facts(config)
    session = _Session(config, endpoint, payloads)
    await _check_answer(session, count)

    durations: dict[str, float] = {}
    latencies: dict[str, list[float]] = {}
    closed: dict[str, dict[str, Any]] = {}
    for concurrency in config.closed_levels:
        key = closed_key(concurrency)
        logger.info("closed loop: concurrency %d (≤ %.0f s)", concurrency, config.duration_s)
        began = time.perf_counter()
        run = await _closed_level(session, concurrency)
        closed[key] = summarize(run)
        latencies[key] = latencies_ok_ms(run)
        durations[key] = round(time.perf_counter() - began, 3)
        logger.info(
            "  %s: %.1f qps, p50 %s ms, p99 %s ms",
            key,
            closed[key]["qps"],
            closed[key]["p50_ms"],
            closed[key]["p99_ms"],
        )
    saturation = max(float(entry["qps"]) for entry in closed.values())
    if saturation <= 0:
        raise BenchmarkSetupError("no closed-loop level got a 2xx answer")
    unloaded = closed[closed_key(min(config.closed_levels))]
    unloaded_p50 = unloaded.get("p50_ms")
    unloaded_p99 = unloaded.get("p99_ms")
    unloaded_mean_s = float(unloaded.get("mean_ms") or 50.0) / 1000.0

    if config.open_rates is None:
        levels = rate_levels(saturation, config.open_fractions)
    else:
        levels = [(rate, None) for rate in config.open_rates]
    open_entries: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for number, (rate, fraction) in enumerate(levels):
        key = open_key(rate)
        settled = await _settle(session, unloaded_p50 if isinstance(unloaded_p50, float) else None)
        expected = min(config.max_connections, math.ceil(rate * unloaded_mean_s * 2.0) + 2)
        logger.info(
            "open loop: %.1f req/s (%s× saturation; ≤ %.0f s)",
            rate,
            "–" if fraction is None else f"{fraction:g}",
            config.duration_s,
        )
        schedule = level_schedule(config, rate, [config.seed, number])
        if not any(offset >= config.open_warmup_s for offset in schedule):
            skipped.append(
                f"{key}: no Poisson arrival in the {config.duration_s:g} s after the warm-up; "
                "skipped"
            )
            logger.warning("%s", skipped[-1])
            continue
        began = time.perf_counter()
        run = await _open_level(session, rate, schedule, expected)
        entry = summarize(run)
        entry["saturation_multiple"] = round(rate / saturation, 3)
        entry["settle_s"] = round(settled, 3)
        entry["onset"] = onset_summary(run.warmup)
        open_entries[key] = entry
        latencies[key] = latencies_ok_ms(run)
        durations[key] = round(time.perf_counter() - began, 3)
        logger.info(
            "  %s: %.1f qps, p50 %s ms, p99 %s ms, 503 %d, errors %d",
            key,
            entry["qps"],
            entry["p50_ms"],
            entry["p99_ms"],
            entry["rejected"],
            entry["errors"],
        )

    inprocess_qps = inprocess[0] if inprocess else None
    warnings = [
        f"{key}: {warning}"
        for group in (closed, open_entries)
        for key, entry in group.items()
        for warning in entry["warnings"]
    ] + skipped
    collection = facts["collection"]
    durations["total"] = round(time.perf_counter() - started_run, 3)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "collection": {"name": config.collection, "count": count},
        "variant": collection.get("variant"),
        "bundle": collection.get("bundle"),
        "bundle_version": collection.get("bundle_version"),
        "closed": closed,
        "open": open_entries,
        "saturation_qps": round(saturation, 3),
        "inprocess_qps": inprocess_qps,
        "efficiency_ratio": round(saturation / inprocess_qps, 4) if inprocess_qps else None,
        "overload_2x": overload_check(
            open_entries, saturation, unloaded_p99 if isinstance(unloaded_p99, float) else None
        ),
        "inprocess": inprocess[1] if inprocess else None,
        "warnings": warnings,
        "settings": {
            "split": config.split,
            "k": config.k,
            "include_metadata": config.include_metadata,
            "closed_levels": list(config.closed_levels),
            "open_rates": None if config.open_rates is None else list(config.open_rates),
            "open_fractions": list(config.open_fractions),
            "duration_s": config.duration_s,
            "max_requests": config.max_requests,
            "warmup_requests": config.warmup_requests,
            "open_warmup_s": config.open_warmup_s,
            "max_connections": config.max_connections,
            "drain_s": config.drain_s,
            "timeout_s": config.timeout_s,
            "seed": config.seed,
            "queries": len(texts),
            "client": "raw asyncio HTTP/1.1 keep-alive (benchmarks.rawhttp)",
        },
        "service": {"collection": collection, "variants": facts["variants"]},
        "durations_s": durations,
        "environment": environment_info()
        | {"load_average_before": load_before, "load_average_after": _load_average()},
    }
    return LoadRun(report=report, latencies_ms=latencies)


def write_load_outputs(run: LoadRun, out_dir: Path) -> dict[str, Path]:
    """Write ``load.json``, ``load.md``, ``load.png`` (knee and throughput) and
    ``load_latency.png`` (closed-loop distributions) into ``out_dir``.

    Returns:
        ``json``, ``markdown``, ``plot``, ``latency_plot`` → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    written = {"json": write_json(report, out_dir / "load.json")}
    markdown = out_dir / "load.md"
    markdown.write_text(render_load_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    title = f"Crisscross load — {report.get('variant')} / {report.get('bundle_version')}"
    written["plot"] = plot_load(
        report["open"], report["closed"], report["saturation_qps"], out_dir / LOAD_PLOT, title
    )
    closed_latencies = {key: run.latencies_ms[key] for key in report["closed"]}
    written["latency_plot"] = plot_latency(
        closed_latencies, out_dir / LOAD_LATENCY_PLOT, f"{title} (closed loop)"
    )
    return written

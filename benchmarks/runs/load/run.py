"""The load run (``python -m benchmarks load``): throughput and tail latency of a live service,
up to and past its knee.

Setup: read the split's captions (``<data>/coco-karpathy-captions/captions_<split>.csv``),
shuffle them with the seed and pre-serialise one ``POST /v1/search`` per caption; wait for
``GET /readyz``, read ``GET /v1/collections`` / ``GET /v1/variants`` (httpx, off the clock), and
check one answer in full (status 200, ``k`` results with metadata). Then :data:`PHASES`:

1. ``closed``: at each ``closed_levels`` concurrency, warm-up requests first (not recorded),
   then up to ``max_requests`` or ``duration_s``. The largest closed-loop 2xx throughput is the
   **saturation throughput**.
2. ``open`` (Poisson arrivals): at offered rates given, or ``open_fractions`` of the saturation
   throughput (default 0.25 … 2.0: up to and past the knee). Before each level the service is
   given time to drain what a previous overloaded level left queued (single probes until one
   answers about as fast as unloaded).

Summary: ``efficiency_ratio`` = saturation ÷ the bare in-process throughput of the same work
(``scripts/bench_inprocess.py``'s JSON, when given); ``overload_2x``: the open level nearest 2×
saturation — its admitted (2xx) p99 against the unloaded p99 (closed c=1, else the lowest
concurrency), and the share and latency of its 503 answers. The keys of ``load.json`` are
:class:`LoadReport`'s.

Every request goes over the light raw client (:mod:`benchmarks.drivers.raw_http`), one
keep-alive connection per closed-loop worker, a LIFO pool of at most ``max_connections`` in the
open loop (:mod:`benchmarks.runs.load.levels`).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypedDict

from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.drivers.raw_http import Endpoint
from benchmarks.runs.environment import environment_info, load_average
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.levels import LoadSession, check_answer, search_payloads
from benchmarks.runs.load.phases import PHASES, LoadContext
from benchmarks.runs.load.summary import overload_check, read_inprocess_qps
from benchmarks.runs.phases import run_phases
from benchmarks.runs.setup_error import BenchmarkSetupError
from formats.karpathy import read_captions
from formats.layout import captions_path

logger = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1
CLIENT: Final = "raw asyncio HTTP/1.1 keep-alive (benchmarks.drivers.raw_http)"
"""How ``load.json``'s ``settings.client`` names the load client (a stable string)."""


class LoadReport(TypedDict):
    """The keys of ``load.json``.

    ``load.json`` (schema version 1)::

        schema_version, service_url, created_at, collection {name, count}, variant, bundle,
        bundle_version
        closed.c<N>        one closed-loop level (N workers, one connection each)
        open.r<rate>       one open-loop level; <rate> is the offered rate in requests/s as written
                           by ``open_key`` (``r48``, ``r2_5`` for 2.5)
            both:  p50_ms, p95_ms, p99_ms, max_ms, mean_ms   2xx answers only, ms
                   qps                 2xx answers per second of the level's window
                   answered_rps        every HTTP answer (2xx, 503, other) per second
                   requests, ok        measured requests; 2xx answers
                   errors              non-2xx answers other than 503, plus requests with no answer
                   errors_by_status    "<status>" | "timeout" | "connection" | "connect" |
                                       "protocol" | "unsent" → count
                   rejected            503 answers (overloaded / not ready) — not in errors
                   rejected_p50_ms, rejected_p99_ms   their latency (a fast refusal is cheap)
                   rejected_sent_p99_ms   the same from the moment a connection took them
                                       (without the client's dispatch lag and pool wait)
                   client_cpu_ms_per_request   client CPU (process_time) ÷ requests, ms
                   client_cpu_cores    client CPU ÷ wall time (1.0 = one core busy)
                   in_flight_mean, in_flight_peak   client's own count of requests on the wire
                   littles_law_xw      throughput of finished requests × their mean latency
                   littles_law_reference   closed: N; open: in_flight_mean
                   littles_law_ok      the two agree within 10 %
                   client_bound        the client, not the service, may have limited the level
                   warnings            human-readable flags; wall_s; connections (opened in level)
                   mode, concurrency   "closed" | "open"; workers | max connections
            open only: offered_rps (nominal), scheduled_rps (the drawn Poisson schedule),
                   saturation_multiple, dispatch_lag_p99_ms, pool_wait_p99_ms, backlogged,
                   settle_s (wait for the service to drain before the level), onset
                   (the warm-up's requests, ok, p50_ms, p99_ms, rejected, rejected_p99_ms, errors:
                   sent at the level's rate before its measured window, not in its other numbers)
        saturation_qps     the largest closed-level qps
        inprocess_qps      bare in-process queries/s (scripts/bench_inprocess.py) or null
        efficiency_ratio   saturation_qps ÷ inprocess_qps, or null
        overload_2x        {level, offered_rps, saturation_multiple, admitted_p99_ms,
                            unloaded_p99_ms, ratio, rejected_share, rejected_p99_ms,
                            rejected_sent_p99_ms, errors, qps}
                           for the open level nearest 2× saturation (1.5–3×), or null
        inprocess          the in-process JSON as given, or null
        warnings           every level's warnings, prefixed by the level key
        settings, service {collection, variants}, durations_s,
        environment        {cpu_count, platform, python, machine, load_average_before,
                            load_average_after} of the client machine

    Latency of an open-loop request runs from its intended (scheduled) send time.
    """

    schema_version: int
    service_url: str
    created_at: str
    collection: dict[str, Any]
    variant: Any
    bundle: Any
    bundle_version: Any
    closed: dict[str, dict[str, Any]]
    open: dict[str, dict[str, Any]]
    saturation_qps: float
    inprocess_qps: float | None
    efficiency_ratio: float | None
    overload_2x: dict[str, Any] | None
    inprocess: dict[str, Any] | None
    warnings: list[str]
    settings: dict[str, Any]
    service: dict[str, Any]
    durations_s: dict[str, float]
    environment: dict[str, object]


@dataclass
class LoadRun:
    """A finished run: the ``load.json`` object and each level's 2xx latencies (ms)."""

    report: LoadReport
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)


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


async def run_load(config: LoadRunConfig) -> LoadRun:
    """Run the setup and :data:`PHASES` against the live service and assemble ``load.json``.

    Raises:
        BenchmarkSetupError: the service does not serve the collection or answers the first
            search wrongly; a bad in-process file; no closed level had a 2xx answer.
        benchmarks.drivers.http_client.ServiceNotReadyError: ``/readyz`` never answered 200.
        formats.errors.FormatError, OSError: the captions file.
    """
    started_run = time.perf_counter()
    load_before = load_average()
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
    session = LoadSession(config, endpoint, payloads)
    await check_answer(session, count)
    context = LoadContext(config, session)
    await run_phases(PHASES, context)

    saturation = context.saturation_qps
    unloaded_p99 = context.unloaded.get("p99_ms")
    inprocess_qps = inprocess[0] if inprocess else None
    warnings = [
        f"{key}: {warning}"
        for group in (context.closed, context.open)
        for key, entry in group.items()
        for warning in entry["warnings"]
    ] + context.skipped
    collection = facts["collection"]
    durations = context.durations_s
    durations["total"] = round(time.perf_counter() - started_run, 3)
    report: LoadReport = {
        "schema_version": SCHEMA_VERSION,
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "collection": {"name": config.collection, "count": count},
        "variant": collection.get("variant"),
        "bundle": collection.get("bundle"),
        "bundle_version": collection.get("bundle_version"),
        "closed": context.closed,
        "open": context.open,
        "saturation_qps": round(saturation, 3),
        "inprocess_qps": inprocess_qps,
        "efficiency_ratio": round(saturation / inprocess_qps, 4) if inprocess_qps else None,
        "overload_2x": overload_check(
            context.open, saturation, unloaded_p99 if isinstance(unloaded_p99, float) else None
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
            "client": CLIENT,
        },
        "service": {"collection": collection, "variants": facts["variants"]},
        "durations_s": durations,
        "environment": environment_info()
        | {"load_average_before": load_before, "load_average_after": load_average()},
    }
    return LoadRun(report=report, latencies_ms=context.latencies_ms)

"""The compare run (``python -m benchmarks compare --variants a,b``): several encoder variants of
one live service, measured in one run — quality against cost — over HTTP only.

Setup: ``GET /v1/variants``: every requested variant must be loaded; its precision, providers
really in use (per tower), dimension and served bundle versions go into the report. Then
:data:`PHASES`:

1. ``quality``: variant after variant, the same CxC tasks (the quality run,
   :func:`benchmarks.runs.quality.run.run_quality` with ``variant=...``, so each variant's own
   collections and sizes are used) on the same queries (``limit_queries`` keeps each task's
   first N);
2. ``latency``: closed-loop text searches at each concurrency level, the same shuffled caption
   texts for every variant, the variants interleaved chunk by chunk
   (:mod:`benchmarks.runs.compare.latency`).

The report (:class:`CompareReport`) holds one entry per variant (facts, tasks, headline
quality numbers with their 95 % intervals, latency), the
schedule and the Pareto-optimal variants per quality and cost metric
(:mod:`evaluation.metrics.pareto`); its Markdown and plot are :mod:`benchmarks.report`'s.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypedDict

import httpx

from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.compare.latency import interleaved_latency, latency_schedule
from benchmarks.runs.environment import environment_info
from benchmarks.runs.phases import Phase, run_phases
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.service_facts import loaded_variants
from evaluation.metrics.bootstrap import DEFAULT_LEVEL
from evaluation.metrics.pareto import (
    INTERVAL_METHODS,
    pareto_sets,
    quality_intervals,
    quality_metrics,
)
from formats.karpathy import read_captions
from formats.layout import captions_path

logger = logging.getLogger(__name__)

COMPARE_SCHEMA_VERSION: Final = 1
VARIANT_FACTS: Final = (
    "dim",
    "precision",
    "towers",
    "providers",
    "tower_providers",
    "bundle_versions",
)
"""What ``GET /v1/variants`` says about a variant that the report keeps."""


class CompareReport(TypedDict):
    """``compare.json`` (schema version 1): one entry per variant under ``variants`` (``name``,
    the :data:`VARIANT_FACTS`, ``bundle``, ``bundle_version``, ``bundle_versions_seen``,
    ``collections``, ``tasks``, ``quality``, ``skipped``, ``checks``, ``latency.c<N>``).

    ``variants[].quality``: each headline number of ``tasks``
    (:func:`~evaluation.metrics.pareto.quality_metrics`, ×100) → ``{"value", "ci95": [low,
    high]}`` (``ci95`` absent when the entry lacks the counts);
    ``quality_intervals``: how they were computed (``level``, ``samples``, ``seed``,
    ``methods``: metric kind → method, :data:`~evaluation.metrics.pareto.INTERVAL_METHODS`)."""

    schema_version: int
    kind: str
    dataset: str
    split: str
    data_dir: str
    service_url: str
    created_at: str
    baseline: str
    variants: list[dict[str, Any]]
    latency_schedule: dict[str, Any]
    pareto: dict[str, list[str]]
    quality_intervals: dict[str, object]
    settings: dict[str, object]
    durations_s: dict[str, float]
    environment: dict[str, object]


@dataclass
class CompareRun:
    """The outcome of :func:`run_compare`: the report, the raw latencies (variant → level name
    ``c<N>`` → latencies in ms) and each variant's per-query sample (variant → the quality run's
    ``queries``, the same query ids for every variant; empty when ``html_queries`` is 0)."""

    report: CompareReport
    latencies_ms: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class CompareContext:
    """What the compare run's phases share and accumulate.

    Attributes:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests), or ``None``.
        loaded: variant → its ``GET /v1/variants`` entry.
        collections: ``GET /v1/collections``'s list.
        texts: the latency queries (the split's captions, shuffled with the seed).
        entries: variant → its report entry.
        latencies_ms: variant → level → latencies (ms).
        orders: the variant order of every latency round.
        queries: variant → its per-query sample.
        durations_s: phase → wall time, s.
    """

    config: CompareConfig
    transport: httpx.AsyncBaseTransport | None
    loaded: dict[str, JsonObject]
    collections: list[JsonObject]
    texts: list[str]
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    latencies_ms: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    orders: list[list[str]] = field(default_factory=list)
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)
    durations_s: dict[str, float] = field(default_factory=dict)


def quality_block(tasks: Mapping[str, Any], config: CompareConfig) -> dict[str, Any]:
    """A variant's ``quality``: each headline number (×100) with its 95 % interval."""
    intervals = quality_intervals(tasks, config.bootstrap_samples, config.seed, DEFAULT_LEVEL)
    block: dict[str, Any] = {}
    for name, value in quality_metrics(tasks).items():
        block[name] = {"value": value}
        if name in intervals:
            block[name]["ci95"] = list(intervals[name])
    return block


def _pool(config: CompareConfig) -> int:
    """Connections the client keeps: the most requests ever in flight."""
    return max(config.replay_concurrency, *config.concurrency_levels)


def _latency_skip_reason(
    facts: Mapping[str, Any], collections: Sequence[JsonObject], variant: str, collection: str
) -> str | None:
    towers = facts.get("towers")
    if isinstance(towers, list) and "text" not in towers:
        return f"variant {variant!r} has no text tower (latency queries are caption texts)"
    if not any(
        entry.get("variant") == variant and entry.get("name") == collection for entry in collections
    ):
        return f"variant {variant!r} serves no {collection!r} collection"
    return None


def sampled_ids(queries: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Stream → the query ids of a per-query sample, in its order."""
    ids: dict[str, list[str]] = {stream["name"]: [] for stream in queries.get("streams", [])}
    for record in queries.get("records", []):
        ids.setdefault(record["stream"], []).append(record["query"])
    return {stream: tuple(found) for stream, found in ids.items()}


async def quality_phase(context: CompareContext) -> None:
    """Each variant's quality run, in the order given; the first variant's per-query sample
    picks the query ids every later variant records."""
    config = context.config
    pinned: dict[str, tuple[str, ...]] | None = None
    for variant in config.variants:
        phase = time.perf_counter()
        logger.info("quality: variant %s, tasks %s", variant, ",".join(config.tasks))
        quality_config = config.quality_config(variant, pinned)
        run = await run_quality(quality_config, transport=context.transport)
        context.durations_s[f"quality_{variant}"] = time.perf_counter() - phase
        if run.queries is not None:
            context.queries[variant] = run.queries
            if pinned is None:
                pinned = sampled_ids(run.queries)
        report = run.report
        facts = context.loaded[variant]
        context.entries[variant] = {
            "name": variant,
            **{key: facts.get(key) for key in VARIANT_FACTS},
            "bundle": report.get("bundle"),
            "bundle_version": report.get("bundle_version"),
            "bundle_versions_seen": report.get("bundle_versions_seen"),
            "collections": report.get("collections"),
            "tasks": report.get("tasks"),
            "quality": quality_block(report.get("tasks") or {}, config),
            "skipped": dict(report.get("skipped") or {}),
            "checks": report.get("checks"),
            "latency": {},
        }


async def latency_phase(context: CompareContext) -> None:
    """The interleaved latency of every variant that can answer text searches."""
    config = context.config
    timed = []
    for variant in config.variants:
        reason = _latency_skip_reason(
            context.loaded[variant], context.collections, variant, config.collection
        )
        if reason is None:
            timed.append(variant)
        else:
            logger.warning("latency skipped: %s", reason)
            context.entries[variant]["skipped"]["latency"] = reason
    if not timed:
        return
    phase = time.perf_counter()
    async with CrisscrossClient(
        config.url,
        timeout_s=config.request_timeout_s,
        max_connections=_pool(config),
        transport=context.transport,
    ) as client:
        merged, context.orders = await interleaved_latency(client, config, timed, context.texts)
    context.durations_s["latency"] = time.perf_counter() - phase
    for variant, levels in merged.items():
        context.entries[variant]["latency"] = {
            name: result.as_report() for name, result in levels.items()
        }
        context.latencies_ms[variant] = {
            name: result.latencies_ms for name, result in levels.items()
        }


PHASES: Final[tuple[Phase[CompareContext], ...]] = (
    Phase("quality", quality_phase),
    Phase("latency", latency_phase),
)
"""The compare run's phases, in order."""


async def run_compare(
    config: CompareConfig, transport: httpx.AsyncBaseTransport | None = None
) -> CompareRun:
    """Measure every variant's quality and cost against the live service and build the report.

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).

    Raises:
        ServiceNotReadyError: ``/readyz`` never answered 200.
        ServiceError: the service refused a request.
        BenchmarkSetupError: a variant is not loaded, serves collections that do not match the
            data, or can answer none of the tasks.
        FormatError / ValueError / OSError: the data files are missing or malformed.
    """
    started = time.perf_counter()
    captions = read_captions(captions_path(config.data_dir, config.split))
    texts = [caption.text for caption in captions]
    random.Random(config.seed).shuffle(texts)
    async with CrisscrossClient(
        config.url,
        timeout_s=config.request_timeout_s,
        max_connections=_pool(config),
        transport=transport,
    ) as client:
        await client.wait_ready(config.ready_timeout_s)
        loaded = await loaded_variants(client, config.variants)
        collections = await client.collections()
    context = CompareContext(config, transport, loaded, collections, texts)
    await run_phases(PHASES, context)
    context.durations_s["total"] = time.perf_counter() - started

    variants_out = [context.entries[name] for name in config.variants]
    report: CompareReport = {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "kind": "compare",
        "dataset": config.dataset,
        "split": config.split,
        "data_dir": str(config.data_dir),
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "baseline": config.variants[0],
        "variants": variants_out,
        "latency_schedule": latency_schedule(config, context.orders),
        "pareto": pareto_sets(variants_out),
        "quality_intervals": {
            "level": DEFAULT_LEVEL,
            "samples": config.bootstrap_samples,
            "seed": config.seed,
            "methods": dict(INTERVAL_METHODS),
        },
        "settings": config.settings(),
        "durations_s": {name: round(value, 3) for name, value in context.durations_s.items()},
        "environment": environment_info(),
    }
    return CompareRun(report=report, latencies_ms=context.latencies_ms, queries=context.queries)

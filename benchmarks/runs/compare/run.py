"""The compare run (``python -m benchmarks compare --variants a,b`` or ``--setting NAME=...``):
several rows — encoder variants of one live service, or lever settings (a variant and the
search levers every search carries: :mod:`benchmarks.runs.compare.levers`) — measured in one
run, quality against cost, over HTTP only.

Setup: ``GET /v1/variants``: every variant a row names (or re-ranks by) must be loaded; a
setting that names none gets the service's default variant; each row's variant's precision,
providers really in use (per tower), dimension and served bundle versions go into the report.
Then :data:`PHASES`:

1. ``quality``: row after row, the same CxC tasks (the quality run,
   :func:`benchmarks.runs.quality.run.run_quality` with the row's ``variant`` and search
   fields, so each variant's own collections and sizes are used and every retrieval search of
   every task carries the row's levers) on the same queries (``limit_queries`` keeps each
   task's first N). ``POST /v1/score`` takes no search levers, so the correlation and BISON
   tasks of a row whose variant an earlier row measured are that row's (``pair_tasks_from``);
2. ``latency``: closed-loop text searches at each concurrency level, the same shuffled caption
   texts for every row, the rows interleaved chunk by chunk
   (:mod:`benchmarks.runs.compare.latency`).

The report (:class:`CompareReport`) holds one entry per row (facts, tasks, headline quality
numbers with their 95 % intervals, latency), the schedule and the Pareto-optimal rows per
quality and cost metric (:mod:`evaluation.metrics.pareto`); its Markdown and plot are
:mod:`benchmarks.report`'s.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, NotRequired, TypedDict

import httpx

from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.compare.latency import interleaved_latency, latency_schedule
from benchmarks.runs.compare.levers import LeverSetting
from benchmarks.runs.environment import environment_info
from benchmarks.runs.phases import Phase, run_phases
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.service_facts import loaded_variants
from benchmarks.runs.setup_error import BenchmarkSetupError
from evaluation.data.task_plan import CORRELATION_TASKS
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
PAIR_TASKS: Final = (*CORRELATION_TASKS, "bison")
"""Tasks scored with ``POST /v1/score``: the search levers do not reach them."""


class CompareReport(TypedDict):
    """``compare.json`` (schema version 1): one entry per row under ``variants`` (``name``,
    the :data:`VARIANT_FACTS`, ``bundle``, ``bundle_version``, ``bundle_versions_seen``,
    ``collections``, ``tasks``, ``quality``, ``skipped``, ``checks``, ``latency.c<N>``).

    A run of lever settings (``--setting``) also has ``lever_settings`` (one ``{"name", ...the
    setting's keys}`` per row, its variant resolved) and, in each row's entry after ``name``,
    ``variant``, ``levers`` (the setting's keys) and ``request`` (the fields every search
    carried); then ``modes_answered`` (the ``mode`` values its latency answers named) and,
    where the correlation / BISON numbers are an earlier row's of the same variant,
    ``pair_tasks_from`` (that row's name). A run of ``--variants`` has none of these.

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
    lever_settings: NotRequired[list[dict[str, object]]]
    variants: list[dict[str, Any]]
    latency_schedule: dict[str, Any]
    pareto: dict[str, list[str]]
    quality_intervals: dict[str, object]
    settings: dict[str, object]
    durations_s: dict[str, float]
    environment: dict[str, object]


@dataclass
class CompareRun:
    """The outcome of :func:`run_compare`: the report, the raw latencies (row → level name
    ``c<N>`` → latencies in ms) and each row's per-query sample (row → the quality run's
    ``queries``, the same query ids for every row; empty when ``html_queries`` is 0)."""

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
        rows: the rows, each with its variant named (:func:`resolved_rows`).
        entries: row name → its report entry.
        latencies_ms: row → level → latencies (ms).
        orders: the row order of every latency round.
        queries: row → its per-query sample.
        durations_s: phase → wall time, s.
        modes: row → the ``mode`` values its latency answers named.
    """

    config: CompareConfig
    transport: httpx.AsyncBaseTransport | None
    loaded: dict[str, JsonObject]
    collections: list[JsonObject]
    texts: list[str]
    rows: tuple[LeverSetting, ...] = ()
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    latencies_ms: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    orders: list[list[str]] = field(default_factory=list)
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)
    durations_s: dict[str, float] = field(default_factory=dict)
    modes: dict[str, set[str]] = field(default_factory=dict)


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


def _row_head(config: CompareConfig, row: LeverSetting) -> dict[str, Any]:
    """The first keys of a row's entry: its name and, in a run of lever settings, its variant,
    levers and the fields its searches carry."""
    head: dict[str, Any] = {"name": row.name}
    if config.by_settings:
        head.update(variant=row.variant, levers=row.levers(), request=row.search_fields())
    return head


def _pair_source(
    context: CompareContext, row: LeverSetting, done: Sequence[LeverSetting]
) -> str | None:
    """An earlier row of the same variant whose correlation / BISON numbers this row takes."""
    if not any(task in PAIR_TASKS for task in context.config.tasks):
        return None
    return next((other.name for other in done if other.variant == row.variant), None)


async def quality_phase(context: CompareContext) -> None:
    """Each row's quality run, in the order given; the first row's per-query sample picks the
    query ids every later row records. A row whose variant an earlier row measured runs the
    retrieval tasks only and takes that row's correlation / BISON entries."""
    config = context.config
    pinned: dict[str, tuple[str, ...]] | None = None
    done: list[LeverSetting] = []
    for row in context.rows:
        assert row.variant is not None  # resolved_rows named every row's variant
        source = _pair_source(context, row, done)
        tasks = config.tasks
        if source is not None:
            skipped_there = context.entries[source]["skipped"]
            tasks = tuple(t for t in tasks if t not in PAIR_TASKS and t not in skipped_there)
        done.append(row)
        facts = context.loaded[row.variant]
        entry = _row_head(config, row)
        if source is not None and not tasks:
            logger.info("quality: %s takes every number of %s", row.name, source)
            taken = context.entries[source]
            entry.update({key: value for key, value in taken.items() if key not in entry})
            entry.update(skipped=dict(taken["skipped"]), latency={}, pair_tasks_from=source)
            context.entries[row.name] = entry
            continue
        phase = time.perf_counter()
        logger.info("quality: %s (variant %s), tasks %s", row.name, row.variant, ",".join(tasks))
        quality_config = config.quality_config(row, pinned, tasks)
        run = await run_quality(quality_config, transport=context.transport)
        context.durations_s[f"quality_{row.name}"] = time.perf_counter() - phase
        if run.queries is not None:
            context.queries[row.name] = run.queries
            if pinned is None:
                pinned = sampled_ids(run.queries)
        report = run.report
        measured = dict(report.get("tasks") or {})
        skipped = dict(report.get("skipped") or {})
        if source is not None:
            taken = context.entries[source]
            for task in PAIR_TASKS:
                if task in taken["tasks"]:
                    measured[task] = taken["tasks"][task]
                if task in taken["skipped"]:
                    skipped[task] = taken["skipped"][task]
        entry.update(
            {
                **{key: facts.get(key) for key in VARIANT_FACTS},
                "bundle": report.get("bundle"),
                "bundle_version": report.get("bundle_version"),
                "bundle_versions_seen": report.get("bundle_versions_seen"),
                "collections": report.get("collections"),
                "tasks": measured,
                "quality": quality_block(measured, config),
                "skipped": skipped,
                "checks": report.get("checks"),
                "latency": {},
            }
        )
        if source is not None:
            entry["pair_tasks_from"] = source
        context.entries[row.name] = entry


async def latency_phase(context: CompareContext) -> None:
    """The interleaved latency of every row whose variant can answer text searches."""
    config = context.config
    timed = []
    for row in context.rows:
        assert row.variant is not None  # resolved_rows named every row's variant
        reason = _latency_skip_reason(
            context.loaded[row.variant],
            context.collections,
            row.variant,
            config.latency_collection,
        )
        if reason is None:
            timed.append(row)
        else:
            logger.warning("latency skipped: %s", reason)
            context.entries[row.name]["skipped"]["latency"] = reason
    if not timed:
        return
    phase = time.perf_counter()
    async with CrisscrossClient(
        config.url,
        timeout_s=config.request_timeout_s,
        max_connections=_pool(config),
        transport=context.transport,
    ) as client:
        merged, context.orders = await interleaved_latency(
            client, config, timed, context.texts, context.modes
        )
    context.durations_s["latency"] = time.perf_counter() - phase
    for name, levels in merged.items():
        context.entries[name]["latency"] = {
            level: result.as_report() for level, result in levels.items()
        }
        context.latencies_ms[name] = {
            level: result.latencies_ms for level, result in levels.items()
        }
    if config.by_settings:
        for row in timed:
            answered = sorted(context.modes.get(row.name, ()))
            context.entries[row.name]["modes_answered"] = answered
            if answered and answered != [row.mode or "dense"]:
                logger.warning(
                    "setting %s asked for mode %s; the service answered in %s",
                    row.name,
                    row.mode or "dense (default)",
                    ", ".join(answered),
                )


PHASES: Final[tuple[Phase[CompareContext], ...]] = (
    Phase("quality", quality_phase),
    Phase("latency", latency_phase),
)
"""The compare run's phases, in order."""


def _default_variant(listed: Sequence[JsonObject]) -> str | None:
    """The variant the service answers with when a request names none: the one marked
    ``default``, else the only one."""
    marked = [str(entry.get("name")) for entry in listed if entry.get("default") is True]
    if marked:
        return marked[0]
    return str(listed[0].get("name")) if len(listed) == 1 else None


async def resolved_rows(
    client: CrisscrossClient, config: CompareConfig
) -> tuple[tuple[LeverSetting, ...], dict[str, JsonObject]]:
    """The rows with every variant named (a setting without one gets the service's default)
    and the ``GET /v1/variants`` entry of each variant they name or re-rank by.

    Raises:
        BenchmarkSetupError: a named variant is not loaded, or a setting names no variant and
            the service has no default one.
    """
    rows = config.rows()
    if any(row.variant is None for row in rows):
        default = _default_variant(await client.variants())
        if default is None:
            unnamed = [row.name for row in rows if row.variant is None]
            raise BenchmarkSetupError(
                f"settings {unnamed} name no variant and the service has no default one"
            )
        rows = tuple(row if row.variant is not None else row.with_variant(default) for row in rows)
    wanted = [row.variant for row in rows if row.variant is not None]
    wanted += [name for row in rows if (name := row.rerank_variant()) is not None]
    loaded = await loaded_variants(client, list(dict.fromkeys(wanted)))
    return rows, loaded


async def run_compare(
    config: CompareConfig, transport: httpx.AsyncBaseTransport | None = None
) -> CompareRun:
    """Measure every row's quality and cost against the live service and build the report.

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).

    Raises:
        ServiceNotReadyError: ``/readyz`` never answered 200.
        CrisscrossError: the service refused a request.
        BenchmarkSetupError: a variant is not loaded (or a setting names none and the service
            has no default), serves collections that do not match the data, or can answer none
            of the tasks.
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
        rows, loaded = await resolved_rows(client, config)
        collections = await client.collections()
    context = CompareContext(config, transport, loaded, collections, texts, rows)
    await run_phases(PHASES, context)
    context.durations_s["total"] = time.perf_counter() - started

    variants_out = [context.entries[row.name] for row in rows]
    report: CompareReport = {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "kind": "compare",
        "dataset": config.dataset,
        "split": config.split,
        "data_dir": str(config.data_dir),
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "baseline": rows[0].name,
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
    if config.by_settings:
        report["lever_settings"] = [{"name": row.name, **row.levers()} for row in rows]
    return CompareRun(report=report, latencies_ms=context.latencies_ms, queries=context.queries)

"""The quality run (``python -m benchmarks cxc``): replay CxC and BISON ground truth against a
live service and build ``report.json``.

Setup: wait for ``GET /readyz``; read ``GET /v1/collections`` (sizes, variant, bundle version)
and ``GET /v1/variants`` (the variant's ``towers``); check each served collection's size against
the captions file; plan the requested tasks the service can answer (the others are skipped with
a reason, :mod:`evaluation.data.task_plan`). Then :data:`PHASES`, in order:

1. ``retrieval`` (:mod:`~benchmarks.runs.quality.retrieval`): t2t, i2t, t2i, i2i and MS-COCO's
   original pairs, one ``POST /v1/search`` per distinct query of each group;
2. ``graded`` (:mod:`~benchmarks.runs.quality.graded`): NCS, SR and the false-negative view of
   i2t / t2i from the split's CIDEr-D matrix (``cider="auto"``, the command line's default);
   then ``queries`` (:mod:`~benchmarks.runs.quality.query_records`): the HTML report's bounded
   per-query sample (``html_queries``, on the command line);
3. ``correlation`` and ``bison`` (:mod:`~benchmarks.runs.quality.pairs`): STS / SIS / SITS
   Spearman bootstraps and BISON accuracy from ``POST /v1/score``;
4. ``latency`` (:mod:`~benchmarks.runs.quality.latency`): closed-loop text searches per level.

Every score comes from the service's answers. The same numbers from an in-memory scorer:
:func:`evaluation.in_memory.evaluate_with_scorer`. The report's keys are
:class:`QualityReport`'s; its Markdown and plots are :mod:`benchmarks.report`'s.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, NotRequired, TypedDict

import httpx

from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.drivers.query_sides import ImageSides
from benchmarks.runs.environment import environment_info
from benchmarks.runs.phases import Phase, run_phases
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.context import QualityContext, QualityResults
from benchmarks.runs.quality.graded import graded_phase
from benchmarks.runs.quality.latency import latency_phase
from benchmarks.runs.quality.pairs import bison_phase, correlation_phase
from benchmarks.runs.quality.query_records import query_records_phase
from benchmarks.runs.quality.retrieval import retrieval_phase
from benchmarks.runs.service_facts import optional_variants, variant_collections, variant_towers
from benchmarks.runs.setup_error import BenchmarkSetupError
from evaluation.data.corpus import CxcData, load_cxc_data
from evaluation.data.task_plan import RATING_FILE_OF, ServiceView, plan_tasks
from formats.cxc import RatingKind
from formats.layout import captions_path

logger = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1

PHASES: Final[tuple[Phase[QualityContext], ...]] = (
    Phase("retrieval", retrieval_phase),
    Phase("graded", graded_phase),
    Phase("queries", query_records_phase),
    Phase("correlation", correlation_phase),
    Phase("bison", bison_phase),
    Phase("latency", latency_phase),
)
"""The quality run's phases, in order; each does nothing when its tasks were not planned."""


class QualityReport(TypedDict):
    """The keys of ``report.json`` (DESIGN §7).

    ``report.json`` (schema version 1)::

        schema_version   1
        dataset          "coco-karpathy" | "scenes"
        split            "val" | "test" | ...
        variant          encoder variant that answered; towers: its towers (null when unknown)
        bundle           bundle name; bundle_version: its version (GET /v1/collections)
        bundle_versions_seen  every bundle version named by the answers (one, unless reloaded
                         mid-run)
        service_url      the service root; created_at: UTC ISO-8601 time the run finished
        collection       {"name", "count"} of the captions collection (else the images collection)
        collections      served collection name → item count, for the captions and images
                         collections
        tasks.t2t, tasks.t2t_cocaptions, tasks.i2t, tasks.t2i, tasks.i2t_original,
        tasks.t2i_original, tasks.i2i
                         {"R@1", "R@5", "R@10" (fractions 0–1), "median_rank" (1-based, null when
                          censored), "median_rank_censored", "queries", "k"}
        tasks.sts, tasks.sis, tasks.sits
                         {"spearman_mean", "spearman_std" (both ×100), "samples", "pairs",
                          "query_items", "seed"}; sis/sits also "pairs_skipped" (pairs whose image
                          could be neither referenced nor uploaded)
        tasks.bison      {"accuracy" (0–1, ties count ½), "rows" (scored), "skipped", "ties",
                          "skipped_reasons" {reason: rows}, "uploads"}
        tasks.<retrieval task> with R (eq. 1) on (CLI default): also "R_eq1@1", "R_eq1@5",
                         "R_eq1@10" (share of each query's positives in its top K, averaged)
        tasks.<i2t|i2t_original|t2i|t2i_original> with the CIDEr-D matrix (``--cider auto``): also
                         "NCS@K", "NCS_nonGT@K", "SR@K", "SR_nonGT@K" (K = 1, 5, 10; 0–1, null
                         without a denominator) and "SR_m" (relevant items per query)
        graded_curves    task → {"R_eq1", "NCS", "NCS_nonGT", "SR", "SR_nonGT"}: values for
                         K = 1..10
        false_negatives  "i2t" / "t2i" → {"queries", "cxc_threshold", "cider_m", "cxc_ratings",
                          "results@K", "wrong@K", "wrong_cxc@K", "wrong_cider@K", "wrong_either@K",
                          "wrong_cxc_rated@K" (shares of all top-K results), "examples": [{"query",
                          "retrieved", "rank", "cxc_score", "cider_d", "coco_label", "caption"}]}
        cider            {"used", "cache_file", "captions_sha256", "built", "build_seconds",
                          "shape", "dtype", "settings"} or {"used": false, "reason"}
        skipped          task → why it was not run (missing file, collection or tower)
        recall_curves    task → [R@1, R@2, ..., R@k] (fractions)
        latency.c<N>     {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "qps", "errors", "requests",
                          "concurrency", "in_flight_mean"}
        settings         the run's knobs (k, seed, limits, concurrencies, image_queries, images_dir,
                         bison_file, tasks_requested, ...)
        checks           {"exclude_violations", "order_violations"}: answers breaking the API rules
        durations_s      wall time per phase
        service          {"collections": [...], "variants": [...] | null} as the service reported
        environment      {"cpu_count", "platform", "python", "machine"} of the benchmark client

    A task or load level that was not run is absent from ``tasks`` / ``latency``; ``graded_curves``,
    ``false_negatives`` and ``cider`` are absent when not computed. The Markdown shows R@K, NCS, SR,
    Spearman's r and BISON accuracy ×100, as the papers do.
    """

    schema_version: int
    dataset: str
    split: str
    variant: Any
    towers: list[str] | None
    bundle: Any
    bundle_version: Any
    bundle_versions_seen: list[str]
    service_url: str
    created_at: str
    collection: dict[str, Any] | None
    collections: dict[str, int]
    tasks: dict[str, Any]
    skipped: dict[str, str]
    recall_curves: dict[str, list[float]]
    latency: dict[str, Any]
    settings: dict[str, Any]
    checks: dict[str, int]
    durations_s: dict[str, float]
    service: dict[str, Any]
    environment: dict[str, object]
    graded_curves: NotRequired[dict[str, dict[str, list[float | None]]]]
    false_negatives: NotRequired[dict[str, Any]]
    cider: NotRequired[dict[str, Any]]


@dataclass
class QualityRun:
    """The outcome of :func:`run_quality`: the report and the raw data behind the plots
    (level name ``c<N>`` → the successful requests' latencies, ms) and the HTML report's
    per-query sample (:func:`~benchmarks.runs.quality.query_records.query_records`; ``None``
    when not kept)."""

    report: QualityReport
    latencies_ms: dict[str, tuple[float, ...]] = field(default_factory=dict)
    queries: dict[str, Any] | None = None


def _check_sizes(config: QualityRunConfig, data: CxcData, served: dict[str, int]) -> None:
    expected = {config.collection: len(data.captions), config.images_collection: len(data.images)}
    what = {config.collection: "captions", config.images_collection: "images"}
    source = captions_path(config.data_dir, config.split)
    for name, count in expected.items():
        if name in served and served[name] != count:
            raise BenchmarkSetupError(
                f"the service's {name!r} collection holds {served[name]} items but {source} "
                f"has {count} {what[name]}"
            )


def _load_data(config: QualityRunConfig) -> CxcData:
    kinds = tuple(
        kind for kind in RatingKind if any(RATING_FILE_OF.get(t) is kind for t in config.tasks)
    )
    return load_cxc_data(
        config.data_dir,
        config.split,
        dataset=config.dataset,
        bison_file=config.bison_file,
        kinds=kinds,
        with_bison="bison" in config.tasks,
    )


async def run_quality(
    config: QualityRunConfig, transport: httpx.AsyncBaseTransport | None = None
) -> QualityRun:
    """Run the setup and :data:`PHASES` against the service and build the report.

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).

    Raises:
        ServiceNotReadyError: ``/readyz`` never answered 200.
        CrisscrossError: the service refused a request (its error body is in the message).
        BenchmarkSetupError: a served collection's size does not match the captions file, or
            none of the requested tasks can be answered.
        FormatError / ValueError / OSError: the data files are missing, malformed or
            inconsistent.
    """
    results = QualityResults()
    data = _load_data(config)
    images_dir = config.resolved_images_dir()
    pool = max(config.replay_concurrency, *config.concurrency_levels)

    async with CrisscrossClient(
        config.url, timeout_s=config.request_timeout_s, max_connections=pool, transport=transport
    ) as client:
        started = time.perf_counter()
        await client.wait_ready(config.ready_timeout_s)
        collections = await client.collections()
        variants = await optional_variants(client)
        collections = variant_collections(collections, variants, config.variant)
        results.durations_s["ready"] = time.perf_counter() - started
        served = {str(entry.get("name")): int(entry.get("count", 0)) for entry in collections}
        _check_sizes(config, data, served)
        view = ServiceView(
            collections=served,
            towers=variant_towers(variants, config.variant),
            captions_collection=config.collection,
            images_collection=config.images_collection,
            image_queries=config.image_queries,
            images_dir=images_dir,
            caption_queries=config.caption_queries,
        )
        plan = plan_tasks(config.tasks, data, view)
        for task, reason in plan.skipped.items():
            logger.warning("skipping %s: %s", task, reason)
        if not plan.run:
            raise BenchmarkSetupError(f"the service can answer none of the tasks: {plan.skipped}")
        image_sides = ImageSides(
            collection=config.images_collection,
            served=(frozenset(image.filename for image in data.images) if view.has_images else ()),
            images_dir=images_dir,
            can_upload=view.has_tower("image"),
        )
        context = QualityContext(client, config, data, view, image_sides, plan, served, results)
        await run_phases(PHASES, context)

    report = _report(context, collections, variants)
    return QualityRun(report=report, latencies_ms=results.latencies_ms, queries=results.queries)


def _report(
    context: QualityContext,
    collections: list[JsonObject],
    variants: list[JsonObject] | None,
) -> QualityReport:
    """``report.json`` of a finished run (keys in the order the file lists them)."""
    config, view, results, served = context.config, context.view, context.results, context.served
    images_dir = view.images_dir
    primary = config.collection if view.has_captions else config.images_collection
    target = next((entry for entry in collections if entry.get("name") == primary), {})
    bundle_version = target.get("bundle_version")
    seen = set(results.served_by.bundle_versions)
    if bundle_version is not None:
        seen.add(str(bundle_version))
    if len(seen) > 1:
        logger.warning("answers came from several bundle versions: %s", sorted(seen))
    variant = config.variant or target.get("variant")
    if variant is None and len(results.served_by.variants) == 1:
        variant = next(iter(results.served_by.variants))
    used = (config.collection, config.images_collection)
    report: QualityReport = {
        "schema_version": SCHEMA_VERSION,
        "dataset": config.dataset,
        "split": config.split,
        "variant": variant,
        "towers": sorted(view.towers) if view.towers is not None else None,
        "bundle": target.get("bundle"),
        "bundle_version": bundle_version,
        "bundle_versions_seen": sorted(seen),
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "collection": {"name": primary, "count": served[primary]} if target else None,
        "collections": {name: served[name] for name in used if name in served},
        "tasks": results.tasks,
        "skipped": context.plan.skipped,
        "recall_curves": results.curves,
        "latency": results.latency,
        "settings": {
            "k": config.k,
            "probe_k": config.probe_k,
            "limit_queries": config.limit_queries,
            "replay_concurrency": config.replay_concurrency,
            "bulk_size": config.bulk_size,
            "score_batch": config.score_batch,
            "max_uploads_per_request": config.max_uploads_per_request,
            "max_upload_bytes": config.max_upload_bytes,
            "bootstrap_samples": config.bootstrap_samples,
            "seed": config.seed,
            "concurrency_levels": list(config.concurrency_levels),
            "latency_requests": config.latency_requests,
            "warmup_requests": config.warmup_requests,
            "latency_k": config.latency_k,
            "image_queries": config.image_queries,
            "caption_queries": config.caption_queries,
            "images_dir": str(images_dir) if images_dir is not None else None,
            "bison_file": (
                str(context.data.bison_file) if context.data.bison_file is not None else None
            ),
            "tasks_requested": list(config.tasks),
            "recall_eq1": config.recall_eq1,
            "cider": config.cider,
        },
        "checks": results.checks,
        "durations_s": {name: round(value, 3) for name, value in results.durations_s.items()},
        "service": {"collections": collections, "variants": variants},
        "environment": environment_info(),
    }
    if results.graded_curves:
        report["graded_curves"] = results.graded_curves
    if results.false_negatives:
        report["false_negatives"] = results.false_negatives
    if results.cider is not None:
        report["cider"] = results.cider
    return report

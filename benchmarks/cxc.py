"""The CxC benchmark run: replay CxC ground truth against a live service and report.

Phases, each optional (``CxcRunConfig.tasks``):

1. wait for ``GET /readyz``; read ``GET /v1/collections`` (size, variant, bundle version) and
   ``GET /v1/variants``;
2. ``t2t`` / ``t2t_cocaptions``: one ``POST /v1/search`` per query caption
   (``{"query": {"text": caption}, "collection": "captions", "k": k, "exclude": [query id]}``),
   several in flight, scored against both tasks' positives;
3. ``sts``: every STS pair scored with ``POST /v1/score`` (item references on both sides, batched),
   then the CxC Spearman bootstrap;
4. ``latency``: closed-loop text searches (k = ``latency_k``) at each concurrency level.

Every score comes from the service's answers (DESIGN §7).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.client import (
    CrisscrossClient,
    JsonObject,
    ServiceError,
    item_ref,
    text_query,
)
from benchmarks.correlation import DEFAULT_SAMPLES, bootstrap_spearman
from benchmarks.datasets import (
    Caption,
    Rating,
    RatingKind,
    captions_path,
    read_captions,
    read_ratings,
)
from benchmarks.ground_truth import t2t_cocaptions_task, t2t_task
from benchmarks.latency import closed_loop
from benchmarks.plots import plot_latency, plot_recall_curves
from benchmarks.replay import ServedBy, replay_retrieval, replay_scores
from benchmarks.report import (
    LATENCY_PLOT,
    RECALL_PLOT,
    SCHEMA_VERSION,
    environment_info,
    render_markdown,
    write_json,
)
from benchmarks.retrieval import retrieval_metrics

logger = logging.getLogger(__name__)

RETRIEVAL_TASKS = ("t2t", "t2t_cocaptions")
ALL_TASKS = (*RETRIEVAL_TASKS, "sts", "latency")


class BenchmarkSetupError(RuntimeError):
    """The service does not serve what the data files describe (missing collection, wrong size)."""


@dataclass(frozen=True)
class CxcRunConfig:
    """Settings of one CxC run.

    Attributes:
        url: the service root URL.
        data_dir: the data folder (holds ``cxc/`` and ``coco-karpathy-captions/``).
        split: the split name in the file names (``val``, ``test``).
        dataset: the dataset name written to the report.
        collection: the caption collection's name in the service.
        tasks: which of :data:`ALL_TASKS` to run.
        k: results asked for per retrieval query (≤ the service's ``max_k``; clipped to the
            collection size).
        limit_queries: use only the first N retrieval queries (quick runs); all when ``None``.
        replay_concurrency: requests in flight during the quality replays.
        score_batch: pairs per ``POST /v1/score`` request (≤ the service's ``max_score_pairs``).
        bootstrap_samples: Spearman bootstrap samples.
        seed: seed of the bootstrap and of the latency query order.
        concurrency_levels: closed-loop latency concurrency levels.
        latency_requests: measured requests per level.
        warmup_requests: unrecorded requests per level before measuring.
        latency_k: ``k`` of the latency queries.
        variant: encoder variant to ask for; the service default when ``None``.
        ready_timeout_s: how long to wait for ``/readyz``.
        request_timeout_s: per-request timeout.
        show_progress: draw tqdm progress bars on stderr.
    """

    url: str
    data_dir: Path
    split: str = "val"
    dataset: str = "coco-karpathy"
    collection: str = "captions"
    tasks: tuple[str, ...] = ALL_TASKS
    k: int = 1000
    limit_queries: int | None = None
    replay_concurrency: int = 8
    score_batch: int = 1024
    bootstrap_samples: int = DEFAULT_SAMPLES
    seed: int = 0
    concurrency_levels: tuple[int, ...] = (1, 8)
    latency_requests: int = 300
    warmup_requests: int = 20
    latency_k: int = 10
    variant: str | None = None
    ready_timeout_s: float = 120.0
    request_timeout_s: float = 60.0
    show_progress: bool = True

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tasks) - set(ALL_TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; choose from {list(ALL_TASKS)}")
        if self.k < 10 and any(task in RETRIEVAL_TASKS for task in self.tasks):
            raise ValueError("k must be at least 10 to report R@10")
        if self.limit_queries is not None and self.limit_queries < 1:
            raise ValueError("limit_queries must be at least 1")


@dataclass
class CxcRun:
    """The outcome of :func:`run_cxc`: the report object and the raw data behind the plots."""

    report: dict[str, Any]
    latencies_ms: dict[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass
class _Results:
    """What the phases of one run accumulate for the report."""

    tasks: dict[str, Any] = field(default_factory=dict)
    curves: dict[str, list[float]] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)
    latencies_ms: dict[str, tuple[float, ...]] = field(default_factory=dict)
    checks: dict[str, int] = field(
        default_factory=lambda: {"exclude_violations": 0, "order_violations": 0}
    )
    durations_s: dict[str, float] = field(default_factory=dict)
    served_by: ServedBy = field(default_factory=ServedBy)


def _collection_entry(collections: Sequence[JsonObject], name: str) -> JsonObject:
    for entry in collections:
        if entry.get("name") == name:
            return entry
    names = [entry.get("name") for entry in collections]
    raise BenchmarkSetupError(f"the service has no collection {name!r}; it has {names}")


async def _optional_variants(client: CrisscrossClient) -> list[JsonObject] | None:
    try:
        return await client.variants()
    except ServiceError as error:
        logger.info("GET /v1/variants unavailable: %s", error)
        return None


async def _retrieval_phase(
    client: CrisscrossClient,
    config: CxcRunConfig,
    captions: list[Caption],
    sts: list[Rating],
    k: int,
    results: _Results,
) -> None:
    """t2t / t2t_cocaptions: one text search per query caption, scored for both tasks."""
    builders = {"t2t": t2t_task, "t2t_cocaptions": t2t_cocaptions_task}
    threshold = RatingKind.STS.positive_threshold
    tasks = [
        builders[name](sts, captions, threshold).limited(config.limit_queries)
        for name in RETRIEVAL_TASKS
        if name in config.tasks
    ]
    caption_text = {caption.key: caption.text for caption in captions}
    replay = await replay_retrieval(
        client,
        tasks,
        lambda query: text_query(caption_text[query]),
        k,
        concurrency=config.replay_concurrency,
        variant=config.variant,
        show_progress=config.show_progress,
    )
    results.served_by.merge(replay.served_by)
    results.checks["exclude_violations"] += replay.exclude_violations
    results.checks["order_violations"] += replay.order_violations
    for task in tasks:
        metrics = retrieval_metrics(replay.first_ranks[task.name], k)
        results.tasks[task.name] = metrics.as_report()
        results.curves[task.name] = list(metrics.curve)


async def _sts_phase(
    client: CrisscrossClient, config: CxcRunConfig, sts: list[Rating], results: _Results
) -> None:
    """STS: score every rated caption pair by item reference, then the Spearman bootstrap."""
    left, right = RatingKind.STS.collections
    pairs = [(item_ref(left, rating.item1), item_ref(right, rating.item2)) for rating in sts]
    scored = await replay_scores(
        client,
        pairs,
        batch_size=config.score_batch,
        concurrency=min(config.replay_concurrency, 4),
        variant=config.variant,
        show_progress=config.show_progress,
    )
    results.served_by.merge(scored.served_by)
    result = bootstrap_spearman(
        [rating.item1 for rating in sts],
        scored.scores,
        [rating.agg_score for rating in sts],
        n_samples=config.bootstrap_samples,
        seed=config.seed,
    )
    results.tasks["sts"] = result.as_report()


async def _latency_phase(
    client: CrisscrossClient,
    config: CxcRunConfig,
    captions: list[Caption],
    count: int,
    results: _Results,
) -> None:
    """Closed-loop text searches (captions as queries, shuffled with the seed) per level."""
    texts = [caption.text for caption in captions]
    random.Random(config.seed).shuffle(texts)
    k = min(config.latency_k, count)

    async def send(index: int) -> object:
        return await client.search(
            text_query(texts[index % len(texts)]),
            config.collection,
            k,
            variant=config.variant,
            retry=False,
        )

    for level in config.concurrency_levels:
        started = time.perf_counter()
        logger.info("latency: concurrency %d, %d requests", level, config.latency_requests)
        measured = await closed_loop(send, level, config.latency_requests, config.warmup_requests)
        results.latency[f"c{level}"] = measured.as_report()
        results.latencies_ms[f"c{level}"] = measured.latencies_ms
        results.durations_s[f"latency_c{level}"] = time.perf_counter() - started


async def run_cxc(
    config: CxcRunConfig, transport: httpx.AsyncBaseTransport | None = None
) -> CxcRun:
    """Run the configured CxC phases against the service and build the report object.

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).

    Raises:
        ServiceNotReadyError: ``/readyz`` never answered 200.
        ServiceError: the service refused a request (its error body is in the message).
        BenchmarkSetupError: the service's caption collection is missing or does not match the
            captions file.
        DatasetError / ValueError: the data files are malformed or inconsistent.
    """
    results = _Results()
    captions = read_captions(captions_path(config.data_dir, config.split))
    needs_sts = any(task in config.tasks for task in (*RETRIEVAL_TASKS, "sts"))
    sts_file = RatingKind.STS.path(config.data_dir, config.split)
    sts = read_ratings(sts_file, RatingKind.STS) if needs_sts else []
    pool = max(config.replay_concurrency, *config.concurrency_levels)

    async with CrisscrossClient(
        config.url, timeout_s=config.request_timeout_s, max_connections=pool, transport=transport
    ) as client:
        started = time.perf_counter()
        await client.wait_ready(config.ready_timeout_s)
        collections = await client.collections()
        variants = await _optional_variants(client)
        results.durations_s["ready"] = time.perf_counter() - started
        target = _collection_entry(collections, config.collection)
        count = int(target.get("count", 0))
        if count != len(captions):
            raise BenchmarkSetupError(
                f"the service's {config.collection!r} collection holds {count} items but "
                f"{captions_path(config.data_dir, config.split)} has {len(captions)} captions"
            )
        k = min(config.k, count)
        if any(task in config.tasks for task in RETRIEVAL_TASKS):
            started = time.perf_counter()
            await _retrieval_phase(client, config, captions, sts, k, results)
            results.durations_s["retrieval"] = time.perf_counter() - started
        if "sts" in config.tasks:
            started = time.perf_counter()
            await _sts_phase(client, config, sts, results)
            results.durations_s["sts"] = time.perf_counter() - started
        if "latency" in config.tasks:
            await _latency_phase(client, config, captions, count, results)

    bundle_version = target.get("bundle_version")
    seen = set(results.served_by.bundle_versions)
    if bundle_version is not None:
        seen.add(str(bundle_version))
    if len(seen) > 1:
        logger.warning("answers came from several bundle versions: %s", sorted(seen))
    variant = config.variant or target.get("variant")
    if variant is None and len(results.served_by.variants) == 1:
        variant = next(iter(results.served_by.variants))
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "dataset": config.dataset,
        "split": config.split,
        "variant": variant,
        "bundle": target.get("bundle"),
        "bundle_version": bundle_version,
        "bundle_versions_seen": sorted(seen),
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "collection": {"name": config.collection, "count": count},
        "tasks": results.tasks,
        "recall_curves": results.curves,
        "latency": results.latency,
        "settings": {
            "k": k,
            "limit_queries": config.limit_queries,
            "replay_concurrency": config.replay_concurrency,
            "score_batch": config.score_batch,
            "bootstrap_samples": config.bootstrap_samples,
            "seed": config.seed,
            "concurrency_levels": list(config.concurrency_levels),
            "latency_requests": config.latency_requests,
            "warmup_requests": config.warmup_requests,
            "latency_k": config.latency_k,
        },
        "checks": results.checks,
        "durations_s": {name: round(value, 3) for name, value in results.durations_s.items()},
        "service": {"collections": collections, "variants": variants},
        "environment": environment_info(),
    }
    return CxcRun(report=report, latencies_ms=results.latencies_ms)


def write_outputs(run: CxcRun, out_dir: Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and the PNG plots of a run into ``out_dir``.

    Returns:
        Output kind (``json``, ``markdown``, ``recall_plot``, ``latency_plot``) → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    title = f"{report['dataset']} {report['split']} — {report.get('variant')}"
    written = {"json": write_json(report, out_dir / "report.json")}
    if report["recall_curves"]:
        written["recall_plot"] = plot_recall_curves(
            report["recall_curves"], out_dir / RECALL_PLOT, f"Recall@K — {title}"
        )
    if run.latencies_ms:
        written["latency_plot"] = plot_latency(
            run.latencies_ms, out_dir / LATENCY_PLOT, f"Latency — {title}"
        )
    markdown = out_dir / "report.md"
    markdown.write_text(render_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    return written

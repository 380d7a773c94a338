"""The CxC benchmark run: replay CxC and BISON ground truth against a live service and report.

Phases (DESIGN §7; ``CxcRunConfig.tasks`` picks; tasks the service cannot answer are skipped
with a reason, see :mod:`benchmarks.plan`):

1. wait for ``GET /readyz``; read ``GET /v1/collections`` (sizes, variant, bundle version) and
   ``GET /v1/variants`` (the variant's ``towers``); check each served collection's size against
   the captions file;
2. retrieval, one ``POST /v1/search`` per distinct query of each group, several in flight:
   ``t2t`` / ``t2t_cocaptions`` (caption text → ``captions``, query excluded), ``i2t`` /
   ``i2t_original`` (image → ``captions``), ``t2i`` / ``t2i_original`` (caption text →
   ``images``), ``i2i`` (image → ``images``, query excluded). An image query is the item
   reference ``{"item": {"collection": "images", "id": filename}}`` or, with
   ``image_queries="upload"``, the file's bytes ``{"image": <base64>}``;
3. correlations: every STS / SIS / SITS pair scored with ``POST /v1/score`` (item references;
   a caption side is text when there is no ``captions`` collection; an image side is an upload
   when there is no ``images`` collection), then the CxC Spearman bootstrap;
4. ``bison``: (caption text, image) scored for both images of every row; accuracy;
5. ``latency``: closed-loop text searches (k = ``latency_k``) at each concurrency level.

Beyond binary recall (``recall_eq1``, ``cider="auto"``; the CLI's default): each query's first
result ids are kept, R (eq. 1) is added to every retrieval task, and for i2t / t2i the split's
CIDEr-D matrix (:mod:`benchmarks.cider`, cached) gives NCS, semantic recall
(:mod:`benchmarks.semantic`) and the false-negative view (:mod:`benchmarks.false_negatives`).

Every score comes from the service's answers. The same numbers from an in-memory scorer:
:func:`benchmarks.in_memory.evaluate_with_scorer`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import httpx

from benchmarks.bison import BisonPlan, plan_bison
from benchmarks.cider import load_or_build_cider
from benchmarks.client import (
    CrisscrossClient,
    JsonObject,
    ServiceError,
    item_ref,
    text_query,
)
from benchmarks.corpus import DATASETS, CxcData, load_cxc_data
from benchmarks.correlation import DEFAULT_SAMPLES
from benchmarks.datasets import RatingKind, captions_path
from benchmarks.evaluation import (
    bison_entry,
    correlation_entry,
    retrieval_entries,
    retrieval_groups,
)
from benchmarks.ground_truth import RetrievalTask
from benchmarks.images import (
    IMAGE_QUERY_MODES,
    ImageQueryMode,
    ImageSides,
    PairSide,
    default_images_dir,
    upload_file,
)
from benchmarks.latency import closed_loop
from benchmarks.plan import (
    ALL_TASKS,
    CORRELATION_TASKS,
    RATING_FILE_OF,
    RETRIEVAL_TASKS,
    ServiceView,
    TaskPlan,
    plan_tasks,
)
from benchmarks.plots import (
    plot_false_negatives,
    plot_graded_curves,
    plot_latency,
    plot_original_vs_cxc,
    plot_recall_curves,
)
from benchmarks.replay import ServedBy, replay_retrieval, replay_scores
from benchmarks.report import (
    FALSE_NEGATIVES_PLOT,
    GRADED_PLOT,
    LATENCY_PLOT,
    ORIGINAL_PLOT,
    RECALL_PLOT,
    SCHEMA_VERSION,
    environment_info,
    render_markdown,
    write_json,
)
from benchmarks.semantic import (
    CURVE_DEPTH,
    GRADED_KS,
    direction_of,
    graded_direction,
    ground_truth_size,
    recall_eq1,
)

logger = logging.getLogger(__name__)

CiderMode = Literal["auto", "off"]
CIDER_MODES: tuple[CiderMode, ...] = ("auto", "off")

__all__ = (
    "ALL_TASKS",
    "RETRIEVAL_TASKS",
    "BenchmarkSetupError",
    "CxcRun",
    "CxcRunConfig",
    "run_cxc",
    "variant_towers",
    "write_outputs",
)


class BenchmarkSetupError(RuntimeError):
    """The service does not serve what the data files describe (wrong collection size), or it
    can answer none of the requested tasks."""


@dataclass(frozen=True)
class CxcRunConfig:
    """Settings of one CxC run.

    Attributes:
        url: the service root URL.
        data_dir: the data folder (holds ``cxc/``, ``coco-karpathy-captions/``, ``bison/``).
        split: the split name in the file names (``val``, ``test``).
        dataset: ``coco-karpathy`` or ``scenes``, written to the report (also picks the image
            file-name pattern for BISON images outside the split).
        collection: the caption collection's name in the service.
        images_collection: the image collection's name in the service.
        tasks: which of :data:`ALL_TASKS` to run (those the service cannot answer are skipped).
        k: results asked for per retrieval query (≤ the service's ``max_k``; clipped to the
            target collection's size).
        probe_k: results asked for first per retrieval query; a query with no positive among
            them (for some task) is asked again at ``k`` (same ranks, far fewer bytes).
        limit_queries: use only each retrieval task's first N queries; all when ``None``.
        replay_concurrency: requests in flight during the quality replays.
        score_batch: pairs per ``POST /v1/score`` request (≤ the service's ``max_score_pairs``).
        max_uploads_per_request: image uploads per ``/v1/score`` request (≤ the service's
            ``max_images_per_request``).
        max_upload_bytes: base64 image bytes per ``/v1/score`` request (keep the body under
            the service's ``max_body_bytes``).
        bootstrap_samples: Spearman bootstrap samples.
        seed: seed of the bootstrap and of the latency query order.
        concurrency_levels: closed-loop latency concurrency levels.
        latency_requests: measured requests per level.
        warmup_requests: unrecorded requests per level before measuring.
        latency_k: ``k`` of the latency queries.
        variant: encoder variant to ask for; the service default when ``None``.
        images_dir: folder with the split's image files (uploads); ``<data>/images/<split>``
            when ``None`` and that folder exists.
        image_queries: ``item`` (query images by reference) or ``upload`` (send the bytes).
        bison_file: the BISON CSV; ``<data>/bison/bison_<split>.csv`` or
            ``<data>/bison/bison_shared.csv`` when ``None``.
        ready_timeout_s: how long to wait for ``/readyz``.
        request_timeout_s: per-request timeout.
        show_progress: draw tqdm progress bars on stderr.
        recall_eq1: keep each query's top result ids and add R (eq. 1), ``R_eq1@K``, to every
            retrieval task.
        cider: ``auto``: add NCS, SR and the false-negative view to i2t / t2i from the split's
            CIDEr-D matrix (read from the cache when its hash matches, else built); ``off``:
            none of them.
        cider_cache_dir: where the CIDEr-D matrix is cached (``<data>/cider`` when writable,
            else ``artifacts/cache/cider``, when ``None``).
    """

    url: str
    data_dir: Path
    split: str = "val"
    dataset: str = "coco-karpathy"
    collection: str = "captions"
    images_collection: str = "images"
    tasks: tuple[str, ...] = ALL_TASKS
    k: int = 1000
    probe_k: int = 100
    limit_queries: int | None = None
    replay_concurrency: int = 8
    score_batch: int = 1024
    max_uploads_per_request: int = 32
    max_upload_bytes: int = 900_000
    bootstrap_samples: int = DEFAULT_SAMPLES
    seed: int = 0
    concurrency_levels: tuple[int, ...] = (1, 8)
    latency_requests: int = 300
    warmup_requests: int = 20
    latency_k: int = 10
    variant: str | None = None
    images_dir: Path | None = None
    image_queries: ImageQueryMode = "item"
    bison_file: Path | None = None
    ready_timeout_s: float = 120.0
    request_timeout_s: float = 60.0
    show_progress: bool = True
    recall_eq1: bool = False
    cider: CiderMode = "off"
    cider_cache_dir: Path | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tasks) - set(ALL_TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; choose from {list(ALL_TASKS)}")
        if self.k < 10 and any(task in RETRIEVAL_TASKS for task in self.tasks):
            raise ValueError("k must be at least 10 to report R@10")
        if self.limit_queries is not None and self.limit_queries < 1:
            raise ValueError("limit_queries must be at least 1")
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {list(DATASETS)}; got {self.dataset!r}")
        if self.image_queries not in IMAGE_QUERY_MODES:
            raise ValueError(f"image_queries must be one of {list(IMAGE_QUERY_MODES)}")
        if self.max_uploads_per_request < 2 or self.max_upload_bytes < 1:
            raise ValueError("need max_uploads_per_request ≥ 2 and max_upload_bytes ≥ 1")
        if self.cider not in CIDER_MODES:
            raise ValueError(f"cider must be one of {list(CIDER_MODES)}; got {self.cider!r}")

    def resolved_images_dir(self) -> Path | None:
        """``images_dir``, or ``<data>/images/<split>`` when that exists, or ``None``."""
        if self.images_dir is not None:
            return self.images_dir
        return default_images_dir(self.data_dir, self.split)


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
    top_ids: list[tuple[list[RetrievalTask], dict[str, tuple[str, ...]]]] = field(
        default_factory=list
    )
    graded_curves: dict[str, dict[str, list[float | None]]] = field(default_factory=dict)
    false_negatives: dict[str, Any] = field(default_factory=dict)
    cider: dict[str, Any] | None = None


@dataclass(frozen=True)
class _Context:
    """Everything the phases share: the open client, the settings, the data, the service."""

    client: CrisscrossClient
    config: CxcRunConfig
    data: CxcData
    view: ServiceView
    images: ImageSides

    def collection_name(self, logical: str) -> str:
        """The service's name of the logical collection ``captions`` / ``images``."""
        return self.config.collection if logical == "captions" else self.config.images_collection


async def _optional_variants(client: CrisscrossClient) -> list[JsonObject] | None:
    try:
        return await client.variants()
    except ServiceError as error:
        logger.info("GET /v1/variants unavailable: %s", error)
        return None


def variant_towers(
    variants: Sequence[JsonObject] | None, wanted: str | None
) -> frozenset[str] | None:
    """The towers of the variant a run uses, from ``GET /v1/variants``.

    Args:
        variants: the route's ``variants`` list, or ``None`` when it was unavailable.
        wanted: the variant asked for; else the one marked ``default``, else the only one.

    Returns:
        e.g. ``frozenset({"text", "image"})``; ``None`` when unknown (no route, no such variant,
        or no ``towers`` field).
    """
    chosen = _chosen_variant(variants, wanted)
    towers = chosen.get("towers") if chosen is not None else None
    if not isinstance(towers, list):
        return None
    return frozenset(str(tower) for tower in towers)


def _chosen_variant(variants: Sequence[JsonObject] | None, wanted: str | None) -> JsonObject | None:
    if not variants:
        return None
    if wanted is not None:
        return next((entry for entry in variants if entry.get("name") == wanted), None)
    chosen = next((entry for entry in variants if entry.get("default") is True), None)
    if chosen is None and len(variants) == 1:
        chosen = variants[0]
    return chosen


def variant_collections(
    collections: Sequence[JsonObject], variants: Sequence[JsonObject] | None, wanted: str | None
) -> list[JsonObject]:
    """The ``GET /v1/collections`` entries a run searches: those of the run's variant.

    A service may serve a ``captions`` collection per variant; sizes, bundle name and version
    must come from the one the queries reach.

    Args:
        collections: the route's ``collections`` list.
        variants: ``GET /v1/variants``'s list, or ``None`` when it was unavailable.
        wanted: the variant asked for; else the one marked ``default``, else the only one.

    Returns:
        The entries naming that variant; all entries when the variant is unknown or no entry
        names it (an older service without a ``variant`` field).
    """
    chosen = _chosen_variant(variants, wanted)
    name = chosen.get("name") if chosen is not None else wanted
    mine = [entry for entry in collections if name is not None and entry.get("variant") == name]
    return mine or list(collections)


def _check_sizes(config: CxcRunConfig, data: CxcData, served: dict[str, int]) -> None:
    expected = {config.collection: len(data.captions), config.images_collection: len(data.images)}
    what = {config.collection: "captions", config.images_collection: "images"}
    source = captions_path(config.data_dir, config.split)
    for name, count in expected.items():
        if name in served and served[name] != count:
            raise BenchmarkSetupError(
                f"the service's {name!r} collection holds {served[name]} items but {source} "
                f"has {count} {what[name]}"
            )


def _query_builder(context: _Context, task: RetrievalTask) -> Callable[[str], JsonObject]:
    """Query id → the ``query`` object of ``/v1/search`` for the task's query collection:
    caption text; an image's item reference, or its file's bytes in upload mode."""
    if task.query_collection == "captions":
        text_of = {caption.key: caption.text for caption in context.data.captions}
        return lambda query: text_query(text_of[query])
    images = context.collection_name("images")
    images_dir = context.view.images_dir
    if context.config.image_queries == "upload" and images_dir is not None:
        return lambda query: upload_file(images_dir / query)
    return lambda query: item_ref(images, query)


async def _retrieval_phase(context: _Context, plan: TaskPlan, results: _Results) -> None:
    """Every retrieval group: one search per distinct query, scored for each task."""
    config = context.config
    for group in retrieval_groups(context.data, plan.run, config.limit_queries):
        started = time.perf_counter()
        first = group[0]
        target = context.collection_name(first.target_collection)
        k = min(config.k, context.view.collections[target])
        keep_top = min(_keep_depth(context, group), k)
        replay = await replay_retrieval(
            context.client,
            group,
            _query_builder(context, first),
            k,
            concurrency=config.replay_concurrency,
            variant=config.variant,
            show_progress=config.show_progress,
            collection=target,
            probe_k=config.probe_k,
            keep_top=keep_top,
        )
        results.served_by.merge(replay.served_by)
        results.checks["exclude_violations"] += replay.exclude_violations
        results.checks["order_violations"] += replay.order_violations
        entries, curves = retrieval_entries(group, replay.first_ranks, k)
        if config.recall_eq1:
            for task in group:
                ranked = [replay.top_ids[query] for query in task.queries]
                wanted = [task.positives[query] for query in task.queries]
                entries[task.name].update(
                    {
                        f"R_eq1@{cut}": value
                        for cut, value in recall_eq1(ranked, wanted, GRADED_KS).items()
                    }
                )
                depth = range(1, min(CURVE_DEPTH, k) + 1)
                curve = recall_eq1(ranked, wanted, depth)
                results.graded_curves.setdefault(task.name, {})["R_eq1"] = list(curve.values())
        if keep_top:
            results.top_ids.append((group, replay.top_ids))
        results.tasks.update(entries)
        results.curves.update(curves)
        results.durations_s[f"retrieval_{first.name}"] = time.perf_counter() - started


def _keep_depth(context: _Context, group: Sequence[RetrievalTask]) -> int:
    """Result ids to keep per query: 10 for R (eq. 1); for the CIDEr-D metrics of i2t / t2i
    also the query's ground truth, which the non-GT variants skip over."""
    direction = direction_of(group[0])
    if context.config.cider != "off" and direction is not None:
        return CURVE_DEPTH + ground_truth_size(context.data, direction)
    return CURVE_DEPTH if context.config.recall_eq1 else 0


def _semantic_phase(context: _Context, results: _Results) -> None:
    """NCS, SR and the false-negative view of every i2t / t2i group, from the CIDEr-D matrix."""
    config = context.config
    if config.cider == "off":
        return
    groups = [(group, top) for group, top in results.top_ids if direction_of(group[0]) is not None]
    if not groups:
        results.cider = {"used": False, "reason": "no i2t or t2i task was run"}
        return
    started = time.perf_counter()
    cached = load_or_build_cider(
        config.data_dir, config.split, config.cider_cache_dir, show_progress=config.show_progress
    )
    results.cider = {"used": True, **cached.as_report()}
    for group, top in groups:
        graded = graded_direction(
            group, top, cached.scores, context.data, show_progress=config.show_progress
        )
        for name, extra in graded.entries.items():
            results.tasks[name].update(extra)
            results.graded_curves.setdefault(name, {}).update(graded.curves[name])
        direction = str(direction_of(group[0]))
        results.false_negatives[direction] = graded.false_negatives
    results.durations_s["cider_metrics"] = time.perf_counter() - started


def _caption_side(context: _Context, key: str, text_of: dict[str, str]) -> PairSide:
    if context.view.has_captions:
        return item_ref(context.config.collection, key)
    return text_query(text_of[key])


async def _correlation_phase(context: _Context, kind: RatingKind, results: _Results) -> None:
    """One CxC rating file: score every pair that can be referenced, then the bootstrap."""
    config = context.config
    started = time.perf_counter()
    ratings = context.data.ratings[kind]
    text_of = {caption.key: caption.text for caption in context.data.captions}
    left_collection, right_collection = kind.collections

    def side(collection: str, item: str) -> PairSide | None:
        if collection == "captions":
            return _caption_side(context, item, text_of)
        return context.images.side(item)

    kept = []
    pairs: list[tuple[PairSide, PairSide]] = []
    for rating in ratings:
        left, right = side(left_collection, rating.item1), side(right_collection, rating.item2)
        if left is not None and right is not None:
            kept.append(rating)
            pairs.append((left, right))
    skipped = len(ratings) - len(kept)
    if skipped:
        logger.warning("%s: %d of %d pairs cannot be referenced", kind.value, skipped, len(ratings))
    scored = await replay_scores(
        context.client,
        pairs,
        batch_size=config.score_batch,
        concurrency=min(config.replay_concurrency, 4),
        variant=config.variant,
        show_progress=config.show_progress,
        max_uploads=config.max_uploads_per_request,
        max_upload_bytes=config.max_upload_bytes,
    )
    results.served_by.merge(scored.served_by)
    results.tasks[kind.value] = correlation_entry(
        kept,
        scored.scores,
        n_samples=config.bootstrap_samples,
        seed=config.seed,
        pairs_skipped=None if kind is RatingKind.STS else skipped,
    )
    results.durations_s[kind.value] = time.perf_counter() - started


async def _bison_phase(context: _Context, results: _Results) -> None:
    """BISON: (caption text, image) for both images of each row; accuracy, ties count ½."""
    config = context.config
    started = time.perf_counter()
    rows = context.data.bison or []
    plan: BisonPlan[PairSide] = plan_bison(rows, context.data.image_namer(), context.images.side)
    if plan.skipped:
        logger.warning(
            "bison: %s of %d rows skipped: %s", sum(plan.skipped.values()), plan.total, plan.skipped
        )
    captions = [text_query(text) for text in plan.captions]
    pairs: list[tuple[PairSide, PairSide]] = [
        *zip(captions, plan.true_sides, strict=True),
        *zip(captions, plan.other_sides, strict=True),
    ]
    scored = await replay_scores(
        context.client,
        pairs,
        batch_size=config.score_batch,
        concurrency=min(config.replay_concurrency, 4),
        variant=config.variant,
        show_progress=config.show_progress,
        max_uploads=config.max_uploads_per_request,
        max_upload_bytes=config.max_upload_bytes,
    )
    results.served_by.merge(scored.served_by)
    count = len(plan.rows)
    results.tasks["bison"] = bison_entry(
        scored.scores[:count], scored.scores[count:], plan.skipped, uploads=scored.uploads
    )
    results.durations_s["bison"] = time.perf_counter() - started


async def _latency_phase(context: _Context, count: int, results: _Results) -> None:
    """Closed-loop text searches (captions as queries, shuffled with the seed) per level."""
    client, config = context.client, context.config
    texts = [caption.text for caption in context.data.captions]
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


def _load_data(config: CxcRunConfig) -> CxcData:
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


async def run_cxc(
    config: CxcRunConfig, transport: httpx.AsyncBaseTransport | None = None
) -> CxcRun:
    """Run the configured phases against the service and build the report object.

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).

    Raises:
        ServiceNotReadyError: ``/readyz`` never answered 200.
        ServiceError: the service refused a request (its error body is in the message).
        BenchmarkSetupError: a served collection's size does not match the captions file, or
            none of the requested tasks can be answered.
        DatasetError / ValueError / OSError: the data files are missing, malformed or
            inconsistent.
    """
    results = _Results()
    data = _load_data(config)
    images_dir = config.resolved_images_dir()
    pool = max(config.replay_concurrency, *config.concurrency_levels)

    async with CrisscrossClient(
        config.url, timeout_s=config.request_timeout_s, max_connections=pool, transport=transport
    ) as client:
        started = time.perf_counter()
        await client.wait_ready(config.ready_timeout_s)
        collections = await client.collections()
        variants = await _optional_variants(client)
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
        context = _Context(client, config, data, view, image_sides)
        await _retrieval_phase(context, plan, results)
        _semantic_phase(context, results)
        for name in CORRELATION_TASKS:
            if name in plan.run:
                await _correlation_phase(context, RatingKind(name), results)
        if "bison" in plan.run:
            await _bison_phase(context, results)
        if "latency" in plan.run:
            await _latency_phase(context, served[config.collection], results)

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
    report: dict[str, Any] = {
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
        "skipped": plan.skipped,
        "recall_curves": results.curves,
        "latency": results.latency,
        "settings": {
            "k": config.k,
            "probe_k": config.probe_k,
            "limit_queries": config.limit_queries,
            "replay_concurrency": config.replay_concurrency,
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
            "images_dir": str(images_dir) if images_dir is not None else None,
            "bison_file": str(data.bison_file) if data.bison_file is not None else None,
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
    return CxcRun(report=report, latencies_ms=results.latencies_ms)


def write_outputs(run: CxcRun, out_dir: Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and the PNG plots of a run into ``out_dir``.

    Returns:
        Output kind (``json``, ``markdown``, ``recall_plot``, ``original_plot``,
        ``graded_plot``, ``false_negatives_plot``, ``latency_plot``) → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    title = f"{report['dataset']} {report['split']} — {report.get('variant')}"
    written = {"json": write_json(report, out_dir / "report.json")}
    if report["recall_curves"]:
        written["recall_plot"] = plot_recall_curves(
            report["recall_curves"], out_dir / RECALL_PLOT, f"Recall@K — {title}"
        )
    original = plot_original_vs_cxc(
        report["tasks"], out_dir / ORIGINAL_PLOT, f"CxC vs original pairs — {title}"
    )
    if original is not None:
        written["original_plot"] = original
    if report.get("graded_curves"):
        written["graded_plot"] = plot_graded_curves(
            report["graded_curves"],
            report["recall_curves"],
            out_dir / GRADED_PLOT,
            f"R@K, R (eq. 1), NCS@K, SR@K — {title}",
        )
    if report.get("false_negatives"):
        images_dir = (report.get("settings") or {}).get("images_dir")
        written["false_negatives_plot"] = plot_false_negatives(
            report["false_negatives"],
            out_dir / FALSE_NEGATIVES_PLOT,
            f"False negatives of MS-COCO's labels — {title}",
            Path(images_dir) if images_dir else None,
        )
    if run.latencies_ms:
        written["latency_plot"] = plot_latency(
            run.latencies_ms, out_dir / LATENCY_PLOT, f"Latency — {title}"
        )
    markdown = out_dir / "report.md"
    markdown.write_text(render_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    return written

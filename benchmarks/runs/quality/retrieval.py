"""The retrieval phase: one search per distinct query of each task group (sent in bulk requests),
scored for each task.

``t2t`` / ``t2t_cocaptions`` (caption text → ``captions``, query excluded), ``i2t`` /
``i2t_original`` (image → ``captions``), ``t2i`` / ``t2i_original`` (caption text → ``images``),
``i2i`` (image → ``images``, query excluded). An image query is the item reference
``{"item": {"collection": "images", "id": filename}}`` or, with ``image_queries="upload"``, the
file's bytes ``{"image": <base64>}``. With ``recall_eq1`` (and for the CIDEr-D metrics) each
query's first result ids are kept, and R (eq. 1) is added to every task.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from benchmarks.drivers.http_client import JsonObject
from benchmarks.drivers.query_sides import item_ref, text_query, upload_file
from benchmarks.drivers.replay import replay_retrieval
from benchmarks.runs.quality.context import QualityContext
from benchmarks.runs.quality.graded import direction_of, ground_truth_size
from benchmarks.runs.quality.query_records import RECORD_DEPTH
from evaluation.data.ground_truth import RetrievalTask
from evaluation.data.task_groups import retrieval_groups
from evaluation.entries import retrieval_entries
from evaluation.metrics.semantic import CURVE_DEPTH, GRADED_KS, recall_eq1

BULK_CONCURRENCY = 2
"""Most bulk search requests in flight (fewer when ``replay_concurrency`` is lower)."""


def query_builder(context: QualityContext, task: RetrievalTask) -> Callable[[str], JsonObject]:
    """Query id → the ``query`` object of ``/v1/search`` for the task's query collection:
    caption text; an image's item reference, or its file's bytes in upload mode."""
    if task.query_collection == "captions":
        if context.config.caption_queries == "item":
            captions = context.collection_name("captions")
            return lambda query: item_ref(captions, query)
        text_of = {caption.key: caption.text for caption in context.data.captions}
        return lambda query: text_query(text_of[query])
    images = context.collection_name("images")
    images_dir = context.view.images_dir
    if context.config.image_queries == "upload" and images_dir is not None:
        return lambda query: upload_file(images_dir / query)
    return lambda query: item_ref(images, query)


def keep_depth(context: QualityContext, group: Sequence[RetrievalTask]) -> int:
    """Result ids to keep per query: 10 for R (eq. 1); for the CIDEr-D metrics of i2t / t2i
    also the query's ground truth, which the non-GT variants skip over; the HTML report's
    per-query records (``html_queries`` > 0) show the first :data:`RECORD_DEPTH`."""
    direction = direction_of(group[0])
    if context.config.cider != "off" and direction is not None:
        return CURVE_DEPTH + ground_truth_size(context.data, direction)
    if context.config.recall_eq1:
        return CURVE_DEPTH
    return RECORD_DEPTH if context.config.html_queries else 0


async def retrieval_phase(context: QualityContext) -> None:
    """Every retrieval group: one search per distinct query, scored for each task."""
    config, results = context.config, context.results
    for group in retrieval_groups(context.data, context.plan.run, config.limit_queries):
        started = time.perf_counter()
        first = group[0]
        target = context.collection_name(first.target_collection)
        k = min(config.k, context.view.collections[target])
        keep_top = min(keep_depth(context, group), k)
        replay = await replay_retrieval(
            context.client,
            group,
            query_builder(context, first),
            k,
            bulk_size=config.bulk_size,
            max_uploads=config.max_uploads_per_request,
            concurrency=min(config.replay_concurrency, BULK_CONCURRENCY),
            variant=config.variant,
            show_progress=config.show_progress,
            collection=target,
            probe_k=config.probe_k,
            keep_top=keep_top,
            fields=config.search_fields,
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
            results.top_scores[first.name] = replay.top_scores
        results.tasks.update(entries)
        results.curves.update(curves)
        results.durations_s[f"retrieval_{first.name}"] = time.perf_counter() - started

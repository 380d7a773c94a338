"""From ground truth plus ranks/scores to report entries — shared by every way of scoring.

The live harness (:mod:`benchmarks.cxc`, scores from HTTP answers) and the in-memory path
(:mod:`benchmarks.in_memory`, scores from a Python function) differ only in *where the ranks and
scores come from*. Both build their tasks, group them, and turn each query's first-positive rank
and each pair's score into numbers through the functions here, so the two agree by
construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy.typing as npt

from benchmarks.bison import bison_accuracy
from benchmarks.corpus import CxcData
from benchmarks.correlation import bootstrap_spearman
from benchmarks.datasets import Rating, RatingKind
from benchmarks.ground_truth import (
    RetrievalTask,
    i2i_task,
    i2t_original_task,
    i2t_task,
    t2i_original_task,
    t2i_task,
    t2t_cocaptions_task,
    t2t_task,
)
from benchmarks.plan import RETRIEVAL_TASKS
from benchmarks.retrieval import first_positive_rank, retrieval_metrics


def _ratings(data: CxcData, kind: RatingKind) -> list[Rating]:
    try:
        return data.ratings[kind]
    except KeyError as error:
        raise ValueError(f"no {kind.value.upper()} ratings loaded") from error


def build_retrieval_task(data: CxcData, name: str) -> RetrievalTask:
    """The ground truth of retrieval task ``name`` (one of :data:`RETRIEVAL_TASKS`).

    Raises:
        ValueError: an unknown task, or its rating file was not loaded.
    """
    captions, images = data.captions, data.images
    if name == "t2t":
        return t2t_task(_ratings(data, RatingKind.STS), captions, RatingKind.STS.positive_threshold)
    if name == "t2t_cocaptions":
        sts = _ratings(data, RatingKind.STS)
        return t2t_cocaptions_task(sts, captions, RatingKind.STS.positive_threshold)
    if name == "i2t":
        sits = _ratings(data, RatingKind.SITS)
        return i2t_task(sits, captions, RatingKind.SITS.positive_threshold, images)
    if name == "t2i":
        sits = _ratings(data, RatingKind.SITS)
        return t2i_task(sits, captions, RatingKind.SITS.positive_threshold, images)
    if name == "i2t_original":
        return i2t_original_task(captions, images)
    if name == "t2i_original":
        return t2i_original_task(captions)
    if name == "i2i":
        sis = _ratings(data, RatingKind.SIS)
        return i2i_task(sis, captions, RatingKind.SIS.positive_threshold, images)
    raise ValueError(f"unknown retrieval task {name!r}; choose from {list(RETRIEVAL_TASKS)}")


def retrieval_groups(
    data: CxcData, names: Sequence[str], limit_queries: int | None = None
) -> list[list[RetrievalTask]]:
    """The requested retrieval tasks, grouped by the query stream they share.

    Tasks with the same query collection, target collection and self-exclusion (``t2t`` and
    ``t2t_cocaptions``; ``i2t`` and ``i2t_original``; ``t2i`` and ``t2i_original``; ``i2i``)
    form one group: each distinct query of a group is searched once.

    Args:
        data: the split's data.
        names: task names; non-retrieval names are ignored. Groups follow catalogue order.
        limit_queries: keep only each task's first N queries (all when ``None``).
    """
    groups: dict[tuple[str, str, bool], list[RetrievalTask]] = {}
    for name in RETRIEVAL_TASKS:
        if name not in names:
            continue
        task = build_retrieval_task(data, name).limited(limit_queries)
        key = (task.query_collection, task.target_collection, task.exclude_query)
        groups.setdefault(key, []).append(task)
    return list(groups.values())


def group_queries(tasks: Sequence[RetrievalTask]) -> list[str]:
    """The distinct queries of a group, in first-seen order over its tasks."""
    return list(dict.fromkeys(query for task in tasks for query in task.queries))


def first_ranks_of(
    tasks: Sequence[RetrievalTask], query: str, ranked_ids: Sequence[str]
) -> dict[str, int | None]:
    """For each task that has ``query``, the 1-based rank of its first positive in
    ``ranked_ids`` (``None`` when absent)."""
    return {
        task.name: first_positive_rank(ranked_ids, task.positives[query])
        for task in tasks
        if query in task.positives
    }


def retrieval_entries(
    tasks: Sequence[RetrievalTask], first_ranks: Mapping[str, Sequence[int | None]], k: int
) -> tuple[dict[str, dict[str, object]], dict[str, list[float]]]:
    """Report entries and R@K curves of ``tasks`` from their first-positive ranks.

    Args:
        tasks: the tasks.
        first_ranks: task name → per query (task order) the first-positive rank or ``None``.
        k: results asked for per query (the censoring depth).

    Returns:
        ``(entries, curves)``: task name → ``tasks.<name>`` entry; task name → [R@1..R@k].
    """
    entries: dict[str, dict[str, object]] = {}
    curves: dict[str, list[float]] = {}
    for task in tasks:
        metrics = retrieval_metrics(first_ranks[task.name], k)
        entries[task.name] = metrics.as_report()
        curves[task.name] = list(metrics.curve)
    return entries, curves


def correlation_entry(
    ratings: Sequence[Rating],
    model_scores: npt.ArrayLike,
    *,
    n_samples: int,
    seed: int,
    pairs_skipped: int | None = None,
) -> dict[str, Any]:
    """The ``tasks.sts`` / ``sis`` / ``sits`` entry: the CxC Spearman bootstrap.

    Args:
        ratings: the rated pairs scored (query item = ``item1``).
        model_scores: ``[len(ratings)]`` the model's score of each pair.
        n_samples: bootstrap samples.
        seed: bootstrap seed.
        pairs_skipped: rated pairs that could not be scored (reported when not ``None``).
    """
    result = bootstrap_spearman(
        [rating.item1 for rating in ratings],
        model_scores,
        [rating.agg_score for rating in ratings],
        n_samples=n_samples,
        seed=seed,
    )
    entry = result.as_report()
    if pairs_skipped is not None:
        entry["pairs_skipped"] = pairs_skipped
    return entry


def bison_entry(
    true_scores: npt.ArrayLike,
    other_scores: npt.ArrayLike,
    skipped_reasons: Mapping[str, int],
    uploads: int = 0,
) -> dict[str, Any]:
    """The ``tasks.bison`` entry: accuracy (ties count ½), rows scored, rows skipped.

    Args:
        true_scores: ``[rows]`` scores of (caption, true image).
        other_scores: ``[rows]`` scores of (caption, other image).
        skipped_reasons: rows skipped, by reason.
        uploads: image sides sent as uploads.
    """
    entry = bison_accuracy(true_scores, other_scores, dict(skipped_reasons)).as_report()
    entry["uploads"] = uploads
    return entry

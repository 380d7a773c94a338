"""Retrieval tasks by name, grouped by the query stream they share.

Tasks with the same query collection, target collection and self-exclusion (``t2t`` and
``t2t_cocaptions``; ``i2t`` and ``i2t_original``; ``t2i`` and ``t2i_original``; ``i2i``) form
one group: each distinct query of a group is searched (or scored) once and its ranked list is
read for every task of the group. The live replay and the in-memory scorer both go through
:func:`retrieval_groups` and :func:`first_ranks_of`, so they agree by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.data.corpus import CxcData
from evaluation.data.ground_truth import (
    RetrievalTask,
    i2i_task,
    i2t_original_task,
    i2t_task,
    t2i_original_task,
    t2i_task,
    t2t_cocaptions_task,
    t2t_task,
)
from evaluation.data.task_plan import RETRIEVAL_TASKS
from evaluation.metrics.retrieval import first_positive_rank
from formats.cxc import Rating, RatingKind


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

"""The graded phase: NCS, semantic recall and the false-negative view of i2t / t2i.

For every i2t / t2i group the retrieval phase kept each query's first result ids; this phase
reads the split's CIDEr-D matrix (:mod:`evaluation.data.cider_cache`, built when missing) as the
direction's graded relevance ``N`` — ``N[caption j, image q]`` for i2t, ``N[caption q, image j]``
for t2i — with the MS-COCO ground truth (an image's own captions / a caption's own image) and
CxC's SITS scores, and computes :mod:`evaluation.metrics.semantic`'s NCS / SR and
:mod:`evaluation.metrics.false_negatives`' view (Biten et al. 2022).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from benchmarks.runs.quality.context import QualityContext
from evaluation.data.cider_cache import load_or_build_cider
from evaluation.data.corpus import CxcData
from evaluation.data.ground_truth import RetrievalTask
from evaluation.metrics.false_negatives import LabelledResult, false_negative_view
from evaluation.metrics.semantic import (
    CURVE_DEPTH,
    SR_RELEVANT,
    GradedPerQuery,
    graded_curves,
    graded_entry,
    graded_per_query,
)
from formats.cxc import RatingKind


def direction_of(task: RetrievalTask) -> str | None:
    """``i2t`` (images → captions), ``t2i`` (captions → images), else ``None``."""
    if (task.query_collection, task.target_collection) == ("images", "captions"):
        return "i2t"
    if (task.query_collection, task.target_collection) == ("captions", "images"):
        return "t2i"
    return None


def ground_truth_size(data: CxcData, direction: str) -> int:
    """The largest MS-COCO ground-truth set of a query: captions per image (i2t), 1 (t2i)."""
    if direction == "i2t":
        return max((len(image.captions) for image in data.images), default=0)
    return 1


@dataclass(frozen=True)
class DirectionResult:
    """The CIDEr-D metrics of one direction's retrieval group.

    Attributes:
        entries: task name → the keys to add to its report entry (:func:`graded_entry`).
        curves: task name → NCS / SR curves, K = 1..10 (:func:`graded_curves`).
        false_negatives: the direction's ``false_negatives`` entry.
    """

    entries: dict[str, dict[str, object]]
    curves: dict[str, dict[str, list[float | None]]]
    false_negatives: dict[str, object]


def graded_direction(
    tasks: Sequence[RetrievalTask],
    top_ids: Mapping[str, Sequence[str]],
    scores: npt.NDArray[np.floating],
    data: CxcData,
    *,
    chunk: int = 1024,
    show_progress: bool = True,
) -> DirectionResult:
    """NCS, SR and the false-negative view of one retrieval group (i2t or t2i tasks).

    Args:
        tasks: the group's tasks (same direction), e.g. ``i2t`` and ``i2t_original``.
        top_ids: query id → its first result ids as the service ranked them; at least
            ``10 + |GT|`` of them (or the whole collection).
        scores: the split's CIDEr-D matrix ``[captions, images]`` (caption and image row
            order).
        data: the split's data (captions, images, SITS ratings if loaded).
        chunk: queries per vectorised chunk.
        show_progress: tqdm bar.

    Raises:
        ValueError: the tasks are not one i2t / t2i direction, or ``scores`` has the wrong
            shape.
    """
    directions = {direction_of(task) for task in tasks}
    if len(directions) != 1 or None in directions:
        raise ValueError(f"not one i2t/t2i direction: {[task.name for task in tasks]}")
    direction = str(directions.pop())
    captions, images = data.captions, data.images
    if scores.shape != (len(captions), len(images)):
        raise ValueError(f"CIDEr-D matrix {scores.shape} ≠ ({len(captions)}, {len(images)})")
    caption_row = {caption.key: caption.row for caption in captions}
    image_row = {image.filename: image.row for image in images}
    queries = list(dict.fromkeys(query for task in tasks for query in task.queries))
    if direction == "i2t":
        query_rows = np.array([image_row[query] for query in queries], dtype=np.int64)
        target_row, target_ids = caption_row, [caption.key for caption in captions]
        truth = [np.array([caption_row[key] for key in images[row].captions]) for row in query_rows]
    else:
        query_rows = np.array([caption_row[query] for query in queries], dtype=np.int64)
        target_row, target_ids = image_row, [image.filename for image in images]
        truth = [np.array([image_row[captions[row].filename]]) for row in query_rows]
    matrix = np.asarray(scores)
    depth = CURVE_DEPTH + max(len(rows) for rows in truth)
    m = SR_RELEVANT[direction]
    with_gt: list[GradedPerQuery] = []
    non_gt: list[GradedPerQuery] = []
    labelled: list[LabelledResult] = []
    sits = _sits_scores(data)
    texts = {caption.key: caption.text for caption in captions}
    starts = range(0, len(queries), chunk)
    for start in tqdm(starts, desc=f"NCS/SR {direction}", disable=not show_progress):
        rows = query_rows[start : start + chunk]
        relevance = matrix[:, rows].T if direction == "i2t" else matrix[rows, :]
        relevance = np.asarray(relevance, dtype=np.float64)
        ground_truth = np.zeros(relevance.shape, dtype=bool)
        retrieved = np.full((rows.size, depth), -1, dtype=np.int64)
        for offset, query in enumerate(queries[start : start + chunk]):
            ground_truth[offset, truth[start + offset]] = True
            ranked = [target_row[item] for item in top_ids[query][:depth]]
            retrieved[offset, : len(ranked)] = ranked
        with_gt.append(
            graded_per_query(relevance, retrieved, ground_truth, m=m, exclude_ground_truth=False)
        )
        strict = graded_per_query(
            relevance, retrieved, ground_truth, m=m, exclude_ground_truth=True
        )
        non_gt.append(strict)
        for offset, query in enumerate(queries[start : start + chunk]):
            relevant = set(strict.relevant[offset].tolist())
            for rank, target in enumerate(retrieved[offset, :CURVE_DEPTH].tolist(), start=1):
                if target < 0:
                    break
                pair = (
                    (target_ids[target], query)
                    if direction == "i2t"
                    else (query, target_ids[target])
                )
                labelled.append(
                    LabelledResult(
                        query=query,
                        target=target_ids[target],
                        rank=rank,
                        coco_positive=bool(ground_truth[offset, target]),
                        cxc_score=sits.get(pair),
                        cider_d=float(relevance[offset, target]),
                        cider_relevant=target in relevant,
                    )
                )
    everything = GradedPerQuery.concatenate(with_gt)
    everything_strict = GradedPerQuery.concatenate(non_gt)
    position = {query: index for index, query in enumerate(queries)}
    entries: dict[str, dict[str, object]] = {}
    curves: dict[str, dict[str, list[float | None]]] = {}
    for task in tasks:
        subset = [position[query] for query in task.queries]
        mine, mine_strict = everything.select(subset), everything_strict.select(subset)
        entries[task.name] = graded_entry(mine, mine_strict, m)
        curves[task.name] = graded_curves(mine, mine_strict)
    view = false_negative_view(
        labelled,
        len(queries),
        cxc_threshold=RatingKind.SITS.positive_threshold,
        cider_m=m,
        texts=texts,
    )
    view["cxc_ratings"] = bool(sits)
    return DirectionResult(entries=entries, curves=curves, false_negatives=view)


def _sits_scores(data: CxcData) -> dict[tuple[str, str], float]:
    """(caption key, image file name) → CxC's SITS score (the largest when rated twice);
    empty when no SITS file was loaded."""
    scores: dict[tuple[str, str], float] = {}
    for rating in data.ratings.get(RatingKind.SITS, []):
        pair = (rating.item1, rating.item2)
        scores[pair] = max(rating.agg_score, scores.get(pair, rating.agg_score))
    return scores


async def graded_phase(context: QualityContext) -> None:
    """NCS, SR and the false-negative view of every i2t / t2i group, from the CIDEr-D matrix."""
    config, results = context.config, context.results
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
    if config.html_queries:
        results.cider_matrix = cached.scores
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

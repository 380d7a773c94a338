"""The metric pipeline on an in-memory scorer: every task's numbers without HTTP.

:func:`evaluate_with_scorer` computes what a live run reports under ``tasks`` — CxC retrieval in
all directions, the STS/SIS/SITS Spearman bootstraps and BISON — from a plain Python scoring
function, through the same task builders, ranking rule and metric code as the live harness
(:mod:`evaluation.entries`, :func:`evaluation.metrics.retrieval.rank_by_scores`).
Tests plug an oracle in (e.g. the scenes generator's ground-truth scorer) and compare a live run
with it; ``scripts/compare_variants.py`` scores exported variants with it.

The scorer sees items as :class:`Side` values and returns a score matrix::

    score_fn(left: Sequence[Side], right: Sequence[Side]) -> array [len(left), len(right)]

Higher is more similar. Retrieval calls it with a chunk of queries against the whole target
collection (in collection row order); pair tasks call it with one left side and all the right
sides rated against it. Ties are broken like the service: score descending, then row
ascending.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.data.bison_rows import plan_bison
from evaluation.data.corpus import CxcData
from evaluation.data.ground_truth import RetrievalTask
from evaluation.data.task_groups import first_ranks_of, group_queries, retrieval_groups
from evaluation.data.task_plan import CORRELATION_TASKS, QUALITY_TASKS, ServiceView, plan_tasks
from evaluation.entries import bison_entry, correlation_entry, retrieval_entries
from evaluation.metrics.correlation import DEFAULT_SAMPLES, DEFAULT_SEED
from evaluation.metrics.retrieval import rank_by_scores
from formats.cxc import Rating, RatingKind


@dataclass(frozen=True, slots=True)
class Side:
    """One item as the in-memory scorer sees it.

    Attributes:
        collection: ``"captions"`` or ``"images"``.
        id: the caption key or image file name; ``None`` for a caption that is not in the
            corpus (a BISON caption without a known caption id).
        text: the caption text (captions only; ``None`` for images).
    """

    collection: str
    id: str | None
    text: str | None = None


ScoreFn = Callable[[Sequence[Side], Sequence[Side]], npt.ArrayLike]
"""``score_fn(left, right)`` → similarity matrix ``[len(left), len(right)]``."""


@dataclass
class InMemoryEvaluation:
    """What :func:`evaluate_with_scorer` returns — the quality parts of a ``report.json``.

    Attributes:
        tasks: task name → the entry a live run would report under ``tasks.<name>``.
        recall_curves: retrieval task → [R@1, ..., R@k] (fractions).
        skipped: task name → why it could not be evaluated (e.g. a missing file).
    """

    tasks: dict[str, Any] = field(default_factory=dict)
    recall_curves: dict[str, list[float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


class _Sides:
    """The :class:`Side` of every corpus item, by collection and id."""

    def __init__(self, data: CxcData) -> None:
        self.by_collection: dict[str, dict[str, Side]] = {
            "captions": {c.key: Side("captions", c.key, c.text) for c in data.captions},
            "images": {i.filename: Side("images", i.filename) for i in data.images},
        }
        self.key_of_sentid = {caption.sentid: caption.key for caption in data.captions}

    def get(self, collection: str, item: str) -> Side:
        return self.by_collection[collection][item]

    def ordered(self, collection: str) -> tuple[list[str], list[Side]]:
        """The collection's ids and sides in row order."""
        sides = self.by_collection[collection]
        return list(sides), list(sides.values())


def _matrix(score_fn: ScoreFn, left: Sequence[Side], right: Sequence[Side]) -> npt.NDArray[Any]:
    matrix = np.asarray(score_fn(left, right), dtype=np.float64)
    if matrix.shape != (len(left), len(right)):
        raise ValueError(
            f"score_fn returned shape {matrix.shape}; expected ({len(left)}, {len(right)})"
        )
    return matrix


def _score_pairs(
    score_fn: ScoreFn, lefts: Sequence[Side], rights: Sequence[Side]
) -> npt.NDArray[np.float64]:
    """Score pairs ``(lefts[i], rights[i])``: one call per distinct left side."""
    rows_of: dict[Side, list[int]] = {}
    for index, left in enumerate(lefts):
        rows_of.setdefault(left, []).append(index)
    scores = np.empty(len(lefts), dtype=np.float64)
    for left, rows in rows_of.items():
        scores[rows] = _matrix(score_fn, [left], [rights[row] for row in rows])[0]
    return scores


def _retrieval(
    group: Sequence[RetrievalTask],
    sides: _Sides,
    score_fn: ScoreFn,
    k: int,
    chunk: int,
    result: InMemoryEvaluation,
) -> None:
    first = group[0]
    target_ids, target_sides = sides.ordered(first.target_collection)
    depth = min(k, len(target_ids))
    queries = group_queries(group)
    rank_of: dict[str, dict[str, int | None]] = {}
    for start in range(0, len(queries), chunk):
        block = queries[start : start + chunk]
        matrix = _matrix(
            score_fn, [sides.get(first.query_collection, query) for query in block], target_sides
        )
        exclude = [{query} for query in block] if first.exclude_query else None
        ranked = rank_by_scores(matrix, target_ids, depth, exclude=exclude)
        for query, ids in zip(block, ranked, strict=True):
            rank_of[query] = first_ranks_of(group, query, ids)
    first_ranks = {task.name: [rank_of[q][task.name] for q in task.queries] for task in group}
    entries, curves = retrieval_entries(group, first_ranks, depth)
    result.tasks.update(entries)
    result.recall_curves.update(curves)


def _correlation(
    kind: RatingKind,
    ratings: Sequence[Rating],
    sides: _Sides,
    score_fn: ScoreFn,
    n_samples: int,
    seed: int,
) -> dict[str, Any]:
    left_collection, right_collection = kind.collections
    scores = _score_pairs(
        score_fn,
        [sides.get(left_collection, rating.item1) for rating in ratings],
        [sides.get(right_collection, rating.item2) for rating in ratings],
    )
    pairs_skipped = None if kind is RatingKind.STS else 0
    return correlation_entry(
        ratings, scores, n_samples=n_samples, seed=seed, pairs_skipped=pairs_skipped
    )


def _bison(data: CxcData, sides: _Sides, score_fn: ScoreFn) -> dict[str, Any]:
    rows = data.bison or []
    images = sides.by_collection["images"]
    plan = plan_bison(rows, data.image_namer(), images.get)
    captions = []
    for index, text in zip(plan.rows, plan.captions, strict=True):
        caption_id = rows[index].caption_id
        key = sides.key_of_sentid.get(caption_id) if caption_id is not None else None
        captions.append(Side("captions", key, text))
    true_scores = _score_pairs(score_fn, captions, plan.true_sides)
    other_scores = _score_pairs(score_fn, captions, plan.other_sides)
    return bison_entry(true_scores, other_scores, plan.skipped)


def evaluate_with_scorer(
    data: CxcData,
    score_fn: ScoreFn,
    *,
    tasks: Sequence[str] = QUALITY_TASKS,
    k: int = 1000,
    limit_queries: int | None = None,
    bootstrap_samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    query_chunk: int = 256,
) -> InMemoryEvaluation:
    """Every requested task's numbers from ``score_fn``, through the live harness's metric code.

    The corpus is the split's whole captions and images (as a service serving both collections
    would hold them). BISON rows whose images are not in the split are skipped and counted.

    Args:
        data: the split's data (:func:`benchmarks.corpus.load_cxc_data`).
        score_fn: ``(left sides, right sides)`` → score matrix ``[len(left), len(right)]``.
        tasks: task names from :data:`QUALITY_TASKS` (``latency`` is ignored).
        k: results kept per query (the censoring depth; clipped to the collection size).
        limit_queries: keep only each retrieval task's first N queries.
        bootstrap_samples: Spearman bootstrap samples.
        seed: bootstrap seed.
        query_chunk: queries per ``score_fn`` call in retrieval (memory:
            ``query_chunk × collection size`` floats).

    Returns:
        The entries under the same keys and with the same values a live run reports when the
        service's scores equal ``score_fn``'s.
    """
    view = ServiceView(
        collections={"captions": len(data.captions), "images": len(data.images)}, towers=None
    )
    plan = plan_tasks([task for task in tasks if task in QUALITY_TASKS], data, view)
    result = InMemoryEvaluation(skipped=dict(plan.skipped))
    sides = _Sides(data)
    for group in retrieval_groups(data, plan.run, limit_queries):
        _retrieval(group, sides, score_fn, k, query_chunk, result)
    for name in CORRELATION_TASKS:
        if name in plan.run:
            kind = RatingKind(name)
            result.tasks[name] = _correlation(
                kind, data.ratings[kind], sides, score_fn, bootstrap_samples, seed
            )
    if "bison" in plan.run:
        result.tasks["bison"] = _bison(data, sides, score_fn)
    return result

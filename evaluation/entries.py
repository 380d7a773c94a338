"""From ranks and scores to ``report.json`` entries — shared by every way of scoring.

The live quality run (:mod:`benchmarks.runs.quality.run`, scores from HTTP answers) and the
in-memory path (:mod:`evaluation.in_memory`, scores from a Python function) differ
only in *where the ranks and scores come from*. Both build their tasks and groups with
:mod:`evaluation.data.task_groups` and turn each query's first-positive rank and each pair's
score into numbers through the functions here, so the two agree by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy.typing as npt

from evaluation.data.ground_truth import RetrievalTask
from evaluation.metrics.bison import bison_accuracy
from evaluation.metrics.correlation import bootstrap_spearman
from evaluation.metrics.retrieval import retrieval_metrics
from formats.cxc import Rating


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

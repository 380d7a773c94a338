"""In-memory retrieval metrics: ranks of the first positive (the live evaluation's tie-aware
ranking, ``evaluation.metrics.retrieval``), ties by row, the three tasks."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.metrics.retrieval import first_positive_ranks
from training.trainer.retrieval import retrieval_metrics, summarise


def _brute_force_ranks(scores: np.ndarray, positives: np.ndarray) -> list[int]:
    """Sort each row by (score descending, column ascending); the first positive's position."""
    ranks = []
    for row_scores, row_positives in zip(scores, positives, strict=True):
        order = sorted(range(len(row_scores)), key=lambda column: (-row_scores[column], column))
        ranks.append(1 + next(i for i, column in enumerate(order) if row_positives[column]))
    return ranks


@pytest.mark.parametrize("seed", range(50))
def test_ranks_and_summary_equal_a_brute_force_sort_on_random_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, n, levels = int(rng.integers(1, 30)), int(rng.integers(1, 40)), int(rng.integers(1, 5))
    scores = (rng.integers(0, levels, size=(q, n)) / levels).astype(np.float32)  # many ties
    if seed % 3 == 0:
        scores[rng.random((q, n)) < 0.1] = -np.inf  # excluded candidates, as t2t's query itself
    positives = rng.random((q, n)) < rng.uniform(0.02, 0.5)
    positives[np.arange(q), rng.integers(0, n, size=q)] = True
    ranks = first_positive_ranks(scores, positives)
    expected = _brute_force_ranks(scores, positives)
    assert ranks.tolist() == expected
    summary = summarise(ranks)
    assert summary["queries"] == q
    for k in (1, 5, 10):
        assert summary[f"R@{k}"] == sum(rank <= k for rank in expected) / q
    assert summary["median_rank"] == float(np.median(expected))


def test_rank_counts_higher_scores_and_earlier_ties() -> None:
    scores = np.array(
        [[0.9, 0.5, 0.7, 0.7], [0.1, 0.2, 0.2, 0.0], [0.3, 0.3, 0.3, 0.3]], dtype=np.float32
    )
    positives = np.array(
        [[False, False, True, False], [False, False, True, True], [False, False, False, True]]
    )
    # Row 0: 0.9 above, no earlier tie → 2. Row 1: best positive 0.2 at column 2, column 1 ties
    # earlier → 2. Row 2: all tie; the positive is last by row → 4.
    assert first_positive_ranks(scores, positives).tolist() == [2, 2, 4]


def test_rank_needs_a_positive_per_row() -> None:
    with pytest.raises(ValueError, match="positive"):
        first_positive_ranks(np.zeros((1, 2), np.float32), np.zeros((1, 2), bool))


def test_summary() -> None:
    summary = summarise(np.array([1, 2, 6, 20], dtype=np.int64))
    assert summary == {
        "R@1": 0.25, "R@5": 0.5, "R@10": 0.75, "median_rank": 4.0, "queries": 4.0,
    }  # fmt: skip
    assert list(summary) == ["R@1", "R@5", "R@10", "median_rank", "queries"]
    assert summarise(np.array([3], dtype=np.int64))["R@10"] == 1.0  # ranks below 10 too
    assert summarise(np.zeros(0, dtype=np.int64)) == {"queries": 0.0}


def test_perfect_embeddings_score_one_everywhere() -> None:
    images = np.eye(3, dtype=np.float32)
    caption_image = np.array([0, 0, 1, 1, 2, 2], dtype=np.int64)
    captions = images[caption_image]
    metrics = retrieval_metrics(images, captions, caption_image)
    assert metrics["i2t"]["R@1"] == 1.0
    assert metrics["t2i"]["R@1"] == 1.0
    assert metrics["t2t"]["R@1"] == 1.0
    assert metrics["i2t"]["queries"] == 3
    assert metrics["t2i"]["queries"] == 6


def test_t2t_excludes_the_query_and_skips_lone_captions() -> None:
    images = np.eye(3, dtype=np.float32)
    caption_image = np.array([0, 0, 1, 2], dtype=np.int64)
    captions = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    metrics = retrieval_metrics(images, captions, caption_image)
    # Only captions 0 and 1 (image 0) have a co-caption. Caption 0 scores 0 against all three
    # others; itself excluded, its co-caption 1 is the first of the tie → rank 1. Caption 1's
    # nearest other caption is caption 2 (image 1), ahead of its co-caption 0 → rank 2.
    assert metrics["t2t"]["queries"] == 2
    assert metrics["t2t"]["R@1"] == 0.5
    assert metrics["t2t"]["R@5"] == 1.0
    assert metrics["t2t"]["median_rank"] == 1.5

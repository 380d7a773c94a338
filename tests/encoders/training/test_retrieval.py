"""In-memory retrieval metrics: ranks of the first positive, ties by row, the three tasks."""

from __future__ import annotations

import numpy as np
import pytest

from encoders.training.retrieval import first_positive_ranks, retrieval_metrics, summarise


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

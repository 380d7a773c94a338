"""Exact top-K and tie-aware recall@K."""

from __future__ import annotations

import numpy as np
import pytest

from studies.scale_simulation.ground_truth import (
    K,
    exact_topk_blocks,
    exact_topk_inmemory,
    tie_aware_recall,
)
from studies.scale_simulation.vectors import F32, I64


@pytest.fixture
def tied() -> tuple[F32, F32, F32]:
    """Rows on one axis scored 1.0, 0.9, ..., 0.2, then 0.1 twice (a tie at the 10th), 0 and
    0.1 less a little under the tolerance."""
    scores = np.array(
        [1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0, 0.1 - 2e-6], np.float32
    )
    db = np.zeros((13, 2), np.float32)
    db[:, 0] = scores
    q = np.array([[1.0, 0.0]], np.float32)
    gt_scores = np.sort(scores)[::-1][None, :K].copy()
    return db, q, gt_scores


def recall(ids: list[int], tied: tuple[F32, F32, F32]) -> float:
    db, q, gt_scores = tied
    return tie_aware_recall(np.array([ids], np.int64), gt_scores, q, lambda rows: db[rows])


def test_a_tie_with_the_kth_neighbour_counts_as_a_hit(tied: tuple[F32, F32, F32]) -> None:
    assert recall(list(range(10)), tied) == 1.0
    assert recall([*range(9), 10], tied) == 1.0  # row 10 ties row 9
    assert recall([*range(9), 12], tied) == 1.0  # within the float tolerance of row 9


def test_misses_padding_and_repeats_count_nothing(tied: tuple[F32, F32, F32]) -> None:
    assert recall([*range(9), 11], tied) == pytest.approx(0.9)
    assert recall([*range(8), -1, -1], tied) == pytest.approx(0.8)
    assert recall([0, 0, 0, 1, 1, 1, 2, 2, 2, 2], tied) == pytest.approx(0.3)
    assert recall([-1] * 10, tied) == 0.0


def test_recall_averages_over_the_queries(tied: tuple[F32, F32, F32]) -> None:
    db, q, gt_scores = tied
    ids: I64 = np.array([list(range(10)), [*range(5), 11, 11, 11, 11, 11]], np.int64)
    two_q = np.repeat(q, 2, axis=0)
    two_gt = np.repeat(gt_scores, 2, axis=0)
    assert tie_aware_recall(ids, two_gt, two_q, lambda rows: db[rows]) == pytest.approx(0.75)


def test_blocks_give_the_in_memory_top_k() -> None:
    rng = np.random.default_rng(0)
    db = rng.standard_normal((1000, 16), dtype=np.float32)
    q = rng.standard_normal((5, 16), dtype=np.float32)
    scores, ids = exact_topk_inmemory(db, q)
    block_scores, block_ids = exact_topk_blocks(db, q, block=64)
    assert ids.shape == (5, K)
    assert np.array_equal(block_ids, ids)
    assert np.allclose(block_scores, scores, atol=1e-5)
    assert np.array_equal(ids, np.argsort(-(q @ db.T), axis=1)[:, :K])

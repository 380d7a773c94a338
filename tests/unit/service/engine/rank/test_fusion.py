"""Fusing a hybrid search's legs (service.engine.rank.fusion): RRF and the normalised weighted sum
equal rankings worked out by hand, ties ordered by row, a leg of equal scores, empty legs."""

from __future__ import annotations

import numpy as np
import pytest

from service.engine.rank.fusion import Fusion, Leg, fuse


def _leg(rows: list[int], scores: list[float] | None = None) -> Leg:
    """A leg; without scores, descending ones (RRF reads only the ranks)."""
    values = scores if scores is not None else [float(len(rows) - n) for n in range(len(rows))]
    return Leg(np.array(rows, dtype=np.int64), np.array(values, dtype=np.float64))


def _assert_leg(leg: Leg, rows: list[int], scores: list[float]) -> None:
    assert leg.rows.tolist() == rows
    assert leg.rows.dtype == np.int64
    assert leg.scores.dtype == np.float64
    assert leg.scores.tolist() == pytest.approx(scores, rel=1e-12, abs=1e-15)


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = fuse(_leg([3, 1, 2]), _leg([2, 5]), Fusion("rrf", k=60))
    # 2: ranks 3 and 1; 3: rank 1; 1 and 5: rank 2 in one leg each (a tie: row 1 first).
    _assert_leg(fused, [2, 3, 1, 5], [1 / 63 + 1 / 61, 1 / 61, 1 / 62, 1 / 62])
    assert fused.scores[2] == fused.scores[3]


def test_rrf_k_damps_the_top_ranks() -> None:
    dense, lexical = _leg([1, 2, 3, 4]), _leg([4, 9])
    # k = 2: row 4 (ranks 4 and 1) beats row 1 (rank 1 only): 1/6 + 1/3 > 1/3.
    _assert_leg(
        fuse(dense, lexical, Fusion("rrf", k=2)),
        [4, 1, 2, 9, 3],
        [1 / 6 + 1 / 3, 1 / 3, 1 / 4, 1 / 4, 1 / 5],
    )
    # k = 60: the same, by smaller margins: 1/64 + 1/61 against 1/61.
    _assert_leg(
        fuse(dense, lexical, Fusion("rrf", k=60)),
        [4, 1, 2, 9, 3],
        [1 / 64 + 1 / 61, 1 / 61, 1 / 62, 1 / 62, 1 / 63],
    )


def test_rrf_ties_of_rows_in_both_legs_go_by_row() -> None:
    # 7 is first in one leg and second in the other, and 4 the other way round: equal sums.
    fused = fuse(_leg([7, 4, 8]), _leg([4, 7]), Fusion("rrf", k=60))
    _assert_leg(fused, [4, 7, 8], [1 / 61 + 1 / 62, 1 / 61 + 1 / 62, 1 / 63])
    assert fused.scores[0] == fused.scores[1]


def test_rrf_ignores_the_scores() -> None:
    one = fuse(_leg([3, 1], [0.9, 0.1]), _leg([1], [40.0]), Fusion("rrf", k=60))
    other = fuse(_leg([3, 1], [0.5, 0.49]), _leg([1], [0.1]), Fusion("rrf", k=60))
    _assert_leg(one, [1, 3], [1 / 62 + 1 / 61, 1 / 61])
    assert one.scores.tolist() == other.scores.tolist()


def test_weighted_sums_normalised_scores() -> None:
    dense = _leg([1, 2, 3], [0.9, 0.5, 0.1])  # normalised 1, 0.5, 0
    lexical = _leg([3, 4], [8.0, 2.0])  # normalised 1, 0
    fused = fuse(dense, lexical, Fusion("weighted", alpha=0.3))
    # 3: 0.3 * 0 + 0.7 * 1; 1: 0.3 * 1; 2: 0.3 * 0.5; 4: 0.7 * 0.
    _assert_leg(fused, [3, 1, 2, 4], [0.7, 0.3, 0.15, 0.0])


def test_weighted_ties_go_by_row() -> None:
    # 2 is best by dense, 1 by keywords; alpha 0.5 weighs them the same.
    dense = _leg([2, 1], [0.8, 0.2])
    lexical = _leg([1, 2], [5.0, 1.0])
    _assert_leg(fuse(dense, lexical, Fusion("weighted", alpha=0.5)), [1, 2], [0.5, 0.5])
    # The lowest of each leg scores 0 there: rows only in one leg at its bottom tie at 0.
    dense = _leg([6, 9], [0.7, 0.3])
    lexical = _leg([5, 8], [3.0, 1.0])
    _assert_leg(
        fuse(dense, lexical, Fusion("weighted", alpha=0.5)), [5, 6, 8, 9], [0.5, 0.5, 0.0, 0.0]
    )


def test_a_leg_of_equal_scores_normalises_to_one() -> None:
    dense = _leg([5, 2], [0.4, 0.4])
    lexical = _leg([9], [3.0])
    _assert_leg(fuse(dense, lexical, Fusion("weighted", alpha=0.5)), [2, 5, 9], [0.5, 0.5, 0.5])
    _assert_leg(fuse(dense, lexical, Fusion("weighted", alpha=0.25)), [9, 2, 5], [0.75, 0.25, 0.25])


def test_alpha_at_the_ends_weighs_one_leg_only() -> None:
    dense = _leg([1, 2], [0.9, 0.1])
    lexical = _leg([3, 2], [4.0, 2.0])
    _assert_leg(fuse(dense, lexical, Fusion("weighted", alpha=1.0)), [1, 2, 3], [1.0, 0.0, 0.0])
    _assert_leg(fuse(dense, lexical, Fusion("weighted", alpha=0.0)), [3, 1, 2], [1.0, 0.0, 0.0])


@pytest.mark.parametrize("fusion", [Fusion("rrf", k=60), Fusion("weighted", alpha=0.3)])
def test_empty_legs(fusion: Fusion) -> None:
    _assert_leg(fuse(_leg([]), _leg([]), fusion), [], [])
    lexical = _leg([4, 2], [2.0, 1.0])
    dense = _leg([4, 2], [0.5, 0.25])
    if fusion.method == "rrf":
        _assert_leg(fuse(_leg([]), lexical, fusion), [4, 2], [1 / 61, 1 / 62])
        _assert_leg(fuse(dense, _leg([]), fusion), [4, 2], [1 / 61, 1 / 62])
    else:
        _assert_leg(fuse(_leg([]), lexical, fusion), [4, 2], [0.7, 0.0])
        _assert_leg(fuse(dense, _leg([]), fusion), [4, 2], [0.3, 0.0])


def test_a_fusion_describes_itself() -> None:
    assert Fusion().describe() == {"method": "rrf", "k": 60}
    assert Fusion("rrf", k=2).describe() == {"method": "rrf", "k": 2}
    assert Fusion("weighted", alpha=0.3).describe() == {"method": "weighted", "alpha": 0.3}

"""Tie-aware recall@k (benchmarks.runs.sweep.recall)."""

from __future__ import annotations

import pytest

from benchmarks.runs.sweep.recall import TIE_TOLERANCE, cut_score, tie_aware_recall

EXACT = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.7, "e": 0.7, "f": 0.5}


def test_the_cut_is_the_kth_exact_score_less_the_tolerance() -> None:
    assert cut_score([0.9, 0.8, 0.7], 2) == pytest.approx(0.8 - TIE_TOLERANCE)
    assert cut_score([0.9, 0.8], 10) == pytest.approx(0.8 - TIE_TOLERANCE)  # fewer than k
    with pytest.raises(ValueError, match="no exact answer"):
        cut_score([], 10)


def test_a_row_tied_with_the_kth_counts_as_a_hit() -> None:
    cut = cut_score([0.9, 0.8, 0.7], 3)  # the exact top 3 kept c; d and e tie with it
    assert tie_aware_recall(["a", "b", "e"], EXACT, cut, 3) == 1.0
    assert tie_aware_recall(["a", "d", "e"], EXACT, cut, 3) == 1.0
    assert tie_aware_recall(["a", "b", "f"], EXACT, cut, 3) == pytest.approx(2 / 3)


def test_a_row_just_below_the_tolerance_misses_and_unknown_rows_miss() -> None:
    cut = cut_score([0.9, 0.8], 2)
    scores = {"a": 0.9, "x": 0.8 - 2 * TIE_TOLERANCE, "y": 0.8 - TIE_TOLERANCE / 2}
    assert tie_aware_recall(["a", "x"], scores, cut, 2) == 0.5
    assert tie_aware_recall(["a", "y"], scores, cut, 2) == 1.0
    assert tie_aware_recall(["a", "zzz"], scores, cut, 2) == 0.5


def test_hits_never_exceed_the_slots() -> None:
    cut = cut_score([0.7, 0.7], 2)
    assert tie_aware_recall(["c", "d", "e"], EXACT, cut, 2) == 1.0
    with pytest.raises(ValueError, match="wanted"):
        tie_aware_recall(["a"], EXACT, cut, 0)

"""Tuning to a target recall: exact answers in blocks, tie-aware recall, the chosen value."""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np
import pytest

from index_builder.index_writer import training_sample
from storage.index_files import search_parameter, trained_empty_index
from storage.index_plan import IndexSpec, plan_index
from storage.index_tuning import (
    exact_kth_scores,
    held_out_rows,
    tie_aware_recall,
    tune_index,
    without_own_rows,
)
from tests.unit.index_builder.hard_vectors import hard_vectors, recall_on

ROWS = 8000
TARGET = 0.95
TOLERANCE = 0.02
"""Recall on separate queries may fall this far below the target met on the held-out rows."""


@pytest.fixture(scope="module")
def corpus() -> np.ndarray:
    return hard_vectors(ROWS, seed=0)


@pytest.fixture(scope="module")
def fresh_queries() -> np.ndarray:
    return hard_vectors(1000, seed=7)


def _built(corpus: np.ndarray, spec: IndexSpec) -> tuple[Any, Any]:
    plan = plan_index(len(corpus), corpus.shape[1], spec)
    assert plan.parameter is not None
    index = trained_empty_index(plan.factory, training_sample(corpus, plan.train_rows or 1, 0))
    index.add(corpus)
    return plan, index


@pytest.mark.parametrize(
    ("spec", "parameter"),
    [(IndexSpec(kind="ivf-flat"), "nprobe"), (IndexSpec(kind="hnsw", m=8), "efSearch")],
)
def test_a_tuned_index_meets_the_target_on_separate_queries_with_the_smallest_value(
    corpus: np.ndarray, fresh_queries: np.ndarray, spec: IndexSpec, parameter: str
) -> None:
    plan, index = _built(corpus, spec)
    tuning = tune_index(
        index, corpus, plan.parameter, plan.candidates, target_recall=TARGET, held_out_queries=500
    )
    assert tuning.parameter == parameter
    assert tuning.met
    assert tuning.recall_at_10 >= TARGET
    # The smallest value meeting it: the sweep stops there and the one before misses.
    assert [point.value for point in tuning.sweep] == list(plan.candidates[: len(tuning.sweep)])
    assert tuning.sweep[-1].value == tuning.value
    assert len(tuning.sweep) >= 2, "data too easy: the first value already met the target"
    assert tuning.sweep[-2].recall_at_10 < TARGET
    # Left set on the index, and it holds for queries the tuning never saw.
    assert search_parameter(index, tuning.parameter) == tuning.value
    assert recall_on(index, corpus, fresh_queries) >= TARGET - TOLERANCE
    # One step smaller is clearly worse on the separate queries too.
    faiss.ParameterSpace().set_index_parameter(index, parameter, float(tuning.sweep[-2].value))
    assert recall_on(index, corpus, fresh_queries) < TARGET


def test_tuning_is_deterministic(corpus: np.ndarray) -> None:
    plan, index = _built(corpus, IndexSpec(kind="ivf-flat"))
    first, second = (
        tune_index(index, corpus, "nprobe", plan.candidates, target_recall=0.9, seed=3)
        for _ in range(2)
    )
    assert [p.recall_at_10 for p in first.sweep] == [p.recall_at_10 for p in second.sweep]
    assert first.value == second.value
    other = tune_index(index, corpus, "nprobe", plan.candidates, target_recall=0.9, seed=4)
    assert other.queries != first.queries or other.sweep != first.sweep


def test_an_unreachable_target_chooses_the_largest_value_and_says_so(corpus: np.ndarray) -> None:
    _, index = _built(corpus, IndexSpec(kind="hnsw", m=8))
    tuning = tune_index(
        index, corpus, "efSearch", (32, 16), target_recall=1.0, held_out_queries=200
    )
    assert not tuning.met
    assert tuning.value == 32
    assert [point.value for point in tuning.sweep] == [16, 32]
    assert tuning.held_out_queries == 200


def test_exact_scores_in_small_blocks_match_one_matrix_and_leave_the_query_out() -> None:
    vectors = hard_vectors(300, d=32, seed=1)
    rows = held_out_rows(300, 40, seed=0)
    scores = vectors[rows] @ vectors.T
    scores[np.arange(len(rows)), rows] = -np.inf
    expected = np.sort(scores, axis=1)[:, -10]
    np.testing.assert_allclose(exact_kth_scores(vectors, rows, 10), expected, rtol=0, atol=1e-6)
    tiny = exact_kth_scores(vectors, rows, 10, block_bytes=4 * 7 * 13)
    np.testing.assert_allclose(tiny, expected, rtol=0, atol=1e-6)


def test_a_row_tied_with_the_tenth_counts_as_a_hit() -> None:
    base = hard_vectors(20, d=16, seed=2)
    vectors = np.concatenate([base, base[5:6]])  # row 20 duplicates row 5
    query = np.array([0])
    kth = exact_kth_scores(vectors, query, 10)
    order = np.argsort(-(vectors[0] @ vectors.T))
    others = [int(row) for row in order if row != 0]
    top = others[:10]
    assert {5, 20} & set(top), "the duplicated row should be near the query for this test"
    # The exact tenth's twin swapped in for it still counts; a row below the tenth does not.
    tenth = top[-1]
    swapped = [*top[:-1], 20 if tenth == 5 else 5 if tenth == 20 else others[10]]
    expected = 1.0 if tenth in (5, 20) else 0.9
    assert tie_aware_recall(vectors, query, np.array([swapped]), kth) == pytest.approx(expected)
    assert tie_aware_recall(vectors, query, np.array([top]), kth) == 1.0
    missing = np.array([[*top[:9], -1]])
    assert tie_aware_recall(vectors, query, missing, kth) == pytest.approx(0.9)


def test_the_query_row_is_dropped_from_the_index_answer() -> None:
    found = np.array([[7, 3, 9, 1], [2, 5, 6, 8]])
    kept = without_own_rows(found, np.array([3, 4]), 3)
    assert kept.tolist() == [[7, 9, 1], [2, 5, 6]]

"""The tie rule (service.engine.rank.tie_rule): score descending then row ascending, exact
scores the same whatever the order of the rows, and a cut settled only past the slack."""

from __future__ import annotations

import numpy as np

from service.engine.rank.tie_rule import SCORE_SLACK, exact_scores, order, settled


def test_equal_scores_are_ordered_by_row() -> None:
    rows = np.array([9, 2, 5, 7, 1], dtype=np.int64)
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1])
    ranked = order(rows, scores)
    assert rows[ranked].tolist() == [2, 7, 5, 9, 1]


def test_exact_scores_do_not_depend_on_the_rows_around_them() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((50, 16)).astype(np.float32)
    query = rng.standard_normal(16).astype(np.float32)
    whole = exact_scores(vectors, query)
    permutation = rng.permutation(50)
    shuffled = exact_scores(vectors[permutation], query)
    assert np.array_equal(whole[permutation], shuffled)
    assert whole.dtype == np.float32
    one_by_one = [exact_scores(vectors[row : row + 1], query)[0] for row in range(50)]
    assert np.array_equal(whole, np.array(one_by_one, dtype=np.float32))


def test_a_cut_is_settled_only_below_the_slack_with_a_full_page() -> None:
    top = np.array([0.9, 0.8, 0.7], dtype=np.float32)
    assert settled(0.7 - 2 * SCORE_SLACK, top, 3, SCORE_SLACK)
    assert not settled(0.7 - SCORE_SLACK / 2, top, 3, SCORE_SLACK)  # an unfetched row may tie
    assert not settled(0.1, top[:2], 3, SCORE_SLACK)  # short of the page
    assert settled(0.6999, top, 3, 0.0)  # an index's own scores need no slack

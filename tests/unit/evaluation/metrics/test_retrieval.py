"""Retrieval metrics against brute-force oracles on small hand-made and random cases."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evaluation.metrics.retrieval import (
    evaluate_rankings,
    first_positive_rank,
    first_positive_ranks,
    median_rank,
    rank_by_scores,
    retrieval_metrics,
)


def _oracle_rank(scores: list[float], ids: list[str], excluded: set[str], k: int) -> list[str]:
    rows = [row for row in range(len(ids)) if ids[row] not in excluded]
    rows.sort(key=lambda row: (-scores[row], row))
    return [ids[row] for row in rows[:k]]


def _oracle_median(ranks: list[int | None]) -> tuple[float | None, bool]:
    value = float(np.median([np.inf if rank is None else rank for rank in ranks]))
    return (None, True) if np.isinf(value) else (value, False)


def test_first_positive_rank() -> None:
    assert first_positive_rank(["a", "b", "c"], {"c", "b"}) == 2
    assert first_positive_rank(["a", "b", "c"], {"z"}) is None
    assert first_positive_rank([], {"a"}) is None


def test_recall_exact_fractions_and_median() -> None:
    metrics = retrieval_metrics([1, 3, None, 7, 12], k=20)
    assert metrics.recall_at == {1: 1 / 5, 5: 2 / 5, 10: 3 / 5}
    assert metrics.median_rank == 7.0
    assert metrics.median_rank_censored is False
    assert metrics.queries == 5
    assert metrics.k == 20
    assert len(metrics.curve) == 20
    assert metrics.curve[11] == 4 / 5
    assert metrics.curve[-1] == 4 / 5


def test_even_count_median_is_mean_of_middle_ranks() -> None:
    assert median_rank([4, 1, 2, 3]) == (2.5, False)
    assert median_rank([1, 2, 3, None]) == (2.5, False)


@pytest.mark.parametrize(
    "ranks",
    [[1, None, None], [1, 2, None, None], [None], [None, None, 5]],
)
def test_censored_median_is_null_and_flagged(ranks: list[int | None]) -> None:
    metrics = retrieval_metrics(ranks, k=10)
    assert metrics.median_rank is None
    assert metrics.median_rank_censored is True
    assert metrics.as_report()["median_rank"] is None
    assert metrics.as_report()["median_rank_censored"] is True


def test_metrics_match_brute_force_on_random_ranks() -> None:
    rng = random.Random(3)
    for _ in range(200):
        k = rng.randint(10, 40)
        ranks: list[int | None] = [
            None if rng.random() < 0.3 else rng.randint(1, k) for _ in range(rng.randint(1, 25))
        ]
        metrics = retrieval_metrics(ranks, k)
        for cut in (1, 5, 10):
            hits = sum(1 for rank in ranks if rank is not None and rank <= cut)
            assert metrics.recall_at[cut] == hits / len(ranks)
        for cut in range(1, k + 1):
            hits = sum(1 for rank in ranks if rank is not None and rank <= cut)
            assert metrics.curve[cut - 1] == hits / len(ranks)
        assert (metrics.median_rank, metrics.median_rank_censored) == _oracle_median(ranks)


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="no queries"):
        retrieval_metrics([], k=10)
    with pytest.raises(ValueError, match="cut-offs"):
        retrieval_metrics([1], k=5)
    with pytest.raises(ValueError, match="ranks must lie"):
        retrieval_metrics([11], k=10)


def test_report_keys() -> None:
    report = retrieval_metrics([1, 2], k=10).as_report()
    assert set(report) == {
        "R@1",
        "R@5",
        "R@10",
        "median_rank",
        "median_rank_censored",
        "queries",
        "k",
    }


def test_tie_rule_score_desc_then_row_asc() -> None:
    ids = ["a", "b", "c", "d", "e"]
    scores = np.array([[0.5, 0.9, 0.5, 0.9, 0.1]], dtype=np.float32)
    assert rank_by_scores(scores, ids, k=5) == [["b", "d", "a", "c", "e"]]
    assert rank_by_scores(scores, ids, k=3, exclude=[{"b"}]) == [["d", "a", "c"]]


def test_rank_by_scores_matches_brute_force_with_many_ties() -> None:
    rng = np.random.default_rng(1)
    ids = [f"id{row}" for row in range(30)]
    scores = rng.integers(0, 4, size=(20, 30)).astype(np.float64) / 4.0
    exclude = [{ids[query], "not-an-id"} for query in range(20)]
    ranked = rank_by_scores(scores, ids, k=12, exclude=exclude)
    for query in range(20):
        expected = _oracle_rank(list(scores[query]), ids, exclude[query], 12)
        assert ranked[query] == expected
        assert ids[query] not in ranked[query]


def test_rank_by_scores_checks_shapes() -> None:
    with pytest.raises(ValueError, match="scores must be"):
        rank_by_scores(np.zeros((2, 3)), ["a", "b"], k=1)
    with pytest.raises(ValueError, match="exclude"):
        rank_by_scores(np.zeros((2, 2)), ["a", "b"], k=1, exclude=[set()])


def test_self_exclusion_changes_the_first_positive_rank() -> None:
    # Query "q" is its own best match; its positive "p" comes second overall.
    ids = ["q", "x", "p", "y"]
    scores = np.array([[1.0, 0.2, 0.8, 0.1]])
    with_self = rank_by_scores(scores, ids, k=4)[0]
    without_self = rank_by_scores(scores, ids, k=4, exclude=[{"q"}])[0]
    assert first_positive_rank(with_self, {"p"}) == 2
    assert first_positive_rank(without_self, {"p"}) == 1


def test_evaluate_rankings_skips_queries_without_positives_and_cuts_at_k() -> None:
    rankings = {
        "q1": ["a", "b", "c"],
        "q2": ["c", "a", "b"],
        "q3": ["b", "c", "a"],  # no positives: skipped
    }
    positives: dict[str, set[str]] = {"q1": {"b"}, "q2": {"b"}, "q3": set()}
    metrics = evaluate_rankings(rankings, positives, k=10)
    assert metrics.queries == 2
    assert metrics.recall_at[1] == 0.0
    assert metrics.recall_at[5] == 1.0
    assert metrics.median_rank == 2.5
    # With k = 2 the rank-3 positive of q2 lies beyond the list.
    cut = evaluate_rankings(rankings, positives, k=2, ks=(1, 2))
    assert cut.recall_at == {1: 0.0, 2: 0.5}
    assert cut.median_rank is None
    assert cut.median_rank_censored is True


def test_first_positive_ranks_equal_ranking_by_the_tie_rule() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        queries, items = int(rng.integers(1, 6)), int(rng.integers(1, 12))
        scores = rng.integers(0, 4, size=(queries, items)).astype(np.float32)  # many ties
        positives = rng.random((queries, items)) < 0.3
        positives[np.arange(queries), rng.integers(0, items, size=queries)] = True
        ids = [f"i{column}" for column in range(items)]
        ranked = rank_by_scores(scores, ids, items)
        expected = [
            first_positive_rank(order, {ids[c] for c in np.flatnonzero(row)})
            for order, row in zip(ranked, positives, strict=True)
        ]
        assert first_positive_ranks(scores, positives).tolist() == expected


def test_first_positive_ranks_with_an_excluded_candidate_and_bad_input() -> None:
    scores = np.array([[0.9, 0.5, 0.5, -np.inf]])
    assert first_positive_ranks(scores, np.array([[False, False, True, False]])).tolist() == [3]
    with pytest.raises(ValueError, match="at least one positive"):
        first_positive_ranks(scores, np.zeros((1, 4), dtype=bool))
    with pytest.raises(ValueError, match="one shape"):
        first_positive_ranks(scores, np.zeros((1, 3), dtype=bool))

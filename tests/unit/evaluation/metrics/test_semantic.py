"""R (eq. 1), NCS and SR against brute-force oracles written from the definitions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from evaluation.metrics.semantic import (
    GradedPerQuery,
    graded_curves,
    graded_entry,
    graded_per_query,
    recall_eq1,
    top_relevant,
)


def oracle_relevant(values: Sequence[float], candidates: Sequence[bool], m: int) -> list[int]:
    """rel_m: the m candidates with the largest positive value; ties → lower index first."""
    eligible = [j for j in range(len(values)) if candidates[j] and values[j] > 0]
    return sorted(eligible, key=lambda j: (-values[j], j))[:m]


def oracle_query(
    values: Sequence[float],
    ranked: Sequence[int],
    truth: set[int],
    m: int,
    exclude_truth: bool,
    cut: int,
) -> tuple[float, float, int, int]:
    """(Σ N of top K, Σ N of the ideal top K, |rel_m ∩ top K|, |rel_m|) for one query."""
    candidates = [not (exclude_truth and j in truth) for j in range(len(values))]
    top = [j for j in ranked if candidates[j]][:cut]
    ideal = sorted((values[j] for j in range(len(values)) if candidates[j]), reverse=True)[:cut]
    relevant = oracle_relevant(values, candidates, m)
    return sum(values[j] for j in top), sum(ideal), len(set(relevant) & set(top)), len(relevant)


def oracle_metrics(
    relevance: npt.NDArray[np.float64],
    rankings: Sequence[Sequence[int]],
    truths: Sequence[set[int]],
    m: int,
    exclude_truth: bool,
    cut: int,
) -> tuple[float | None, float | None]:
    """(NCS@K, SR@K) over all queries, by the definitions."""
    parts = [
        oracle_query(list(row), ranked, truth, m, exclude_truth, cut)
        for row, ranked, truth in zip(relevance, rankings, truths, strict=True)
    ]
    ideal = sum(part[1] for part in parts)
    ncs = sum(part[0] for part in parts) / ideal if ideal > 0 else None
    shares = [part[2] / part[3] for part in parts if part[3] > 0]
    return ncs, (sum(shares) / len(shares) if shares else None)


def _run(
    relevance: npt.NDArray[np.float64],
    rankings: Sequence[Sequence[int]],
    truths: Sequence[set[int]],
    m: int,
    exclude: bool,
    depth: int,
) -> GradedPerQuery:
    queries, targets = relevance.shape
    retrieved = np.full((queries, max(len(r) for r in rankings)), -1, dtype=np.int64)
    for row, ranked in enumerate(rankings):
        retrieved[row, : len(ranked)] = ranked
    truth = np.zeros((queries, targets), dtype=bool)
    for row, items in enumerate(truths):
        truth[row, sorted(items)] = True
    return graded_per_query(
        relevance, retrieved, truth, m=m, exclude_ground_truth=exclude, depth=depth
    )


def test_hand_made_case_with_ties() -> None:
    # one query, targets 0..4; target 0 is the ground truth; 1 and 2 tie at 2.0
    relevance = np.array([[3.0, 2.0, 2.0, 1.0, 0.0]])
    ranked = [[4, 0, 2, 1, 3]]
    with_gt = _run(relevance, ranked, [{0}], m=2, exclude=False, depth=3)
    # top 3 = 4, 0, 2 → 0 + 3 + 2 = 5; ideal 3 = 3 + 2 + 2 = 7; rel_2 = {0, 1} (1 beats 2 by row)
    np.testing.assert_allclose(with_gt.retrieved_gain, [[0.0, 3.0, 5.0]])
    np.testing.assert_allclose(with_gt.ideal_gain, [[3.0, 5.0, 7.0]])
    np.testing.assert_array_equal(with_gt.relevant, [[0, 1]])
    np.testing.assert_array_equal(with_gt.semantic_hits, [[0, 1, 1]])
    assert with_gt.ncs(3) == pytest.approx(5 / 7)
    assert with_gt.semantic_recall(3) == pytest.approx(0.5)
    non_gt = _run(relevance, ranked, [{0}], m=2, exclude=True, depth=3)
    # target 0 skipped: top 3 = 4, 2, 1 → 0 + 2 + 2; ideal = 2 + 2 + 1; rel_2 = {1, 2}
    np.testing.assert_allclose(non_gt.retrieved_gain, [[0.0, 2.0, 4.0]])
    np.testing.assert_allclose(non_gt.ideal_gain, [[2.0, 4.0, 5.0]])
    np.testing.assert_array_equal(non_gt.relevant, [[1, 2]])
    assert non_gt.ncs(3) == pytest.approx(4 / 5)
    assert non_gt.semantic_recall(1) == 0.0
    assert non_gt.semantic_recall(3) == 1.0


def test_relevant_set_breaks_ties_by_row_and_ignores_zero_scores() -> None:
    relevance = np.array([[1.0, 3.0, 3.0, 3.0, 0.0], [0.0, 0.0, 0.5, 0.0, 0.0]])
    every = np.ones_like(relevance, dtype=bool)
    np.testing.assert_array_equal(top_relevant(relevance, every, 2), [[1, 2], [2, -1]])
    np.testing.assert_array_equal(
        top_relevant(relevance, every, 5), [[1, 2, 3, 0, -1], [2, -1, -1, -1, -1]]
    )
    only_last = np.array([[False, False, False, True, True]] * 2)
    np.testing.assert_array_equal(top_relevant(relevance, only_last, 2), [[3, -1], [-1, -1]])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("exclude", [False, True])
def test_vectorised_metrics_equal_the_oracle_on_random_tied_cases(seed: int, exclude: bool) -> None:
    rng = np.random.default_rng(seed)
    queries, targets, depth = 9, 14, 5
    relevance = rng.integers(0, 4, size=(queries, targets)).astype(np.float64)  # many ties, zeros
    truths = [
        set(rng.choice(targets, size=rng.integers(1, 4), replace=False).tolist())
        for _ in range(queries)
    ]
    # lists as deep as depth + |GT|, some cut short (a small collection)
    rankings = [
        rng.permutation(targets)[: depth + len(truth) - (row % 3 == 0)].tolist()
        for row, truth in enumerate(truths)
    ]
    relevance[0] = 0.0  # a query with no relevance at all
    for m in (1, 3):
        got = _run(relevance, rankings, truths, m, exclude, depth)
        for cut in range(1, depth + 1):
            ncs, sr = oracle_metrics(relevance, rankings, truths, m, exclude, cut)
            assert got.ncs(cut) == pytest.approx(ncs), (m, cut)
            assert got.semantic_recall(cut) == pytest.approx(sr), (m, cut)
        subset = got.select([2, 5])
        ncs, sr = oracle_metrics(
            relevance[[2, 5]], [rankings[2], rankings[5]], [truths[2], truths[5]], m, exclude, depth
        )
        assert subset.ncs(depth) == pytest.approx(ncs)
        assert subset.semantic_recall(depth) == pytest.approx(sr)


def test_ranking_by_the_relevance_itself_is_ideal() -> None:
    rng = np.random.default_rng(7)
    relevance = rng.integers(0, 5, size=(6, 20)).astype(np.float64)
    truths = [{row} for row in range(6)]
    # the service's tie rule: score descending, then row ascending
    rankings = [np.argsort(-row, kind="stable").tolist() for row in relevance]
    for exclude in (False, True):
        got = _run(relevance, rankings, truths, m=3, exclude=exclude, depth=10)
        assert all(got.ncs(cut) == pytest.approx(1.0) for cut in range(1, 11))
        assert all(got.semantic_recall(cut) == 1.0 for cut in range(3, 11))


def test_chunks_concatenate_and_entries_name_every_key() -> None:
    relevance = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    truths = [{0}, {1}]
    rankings = [[0, 1, 2], [2, 1, 0]]
    whole = _run(relevance, rankings, truths, m=1, exclude=False, depth=2)
    parts = GradedPerQuery.concatenate(
        [
            _run(relevance[:1], rankings[:1], truths[:1], 1, False, 2),
            _run(relevance[1:], rankings[1:], truths[1:], 1, False, 2),
        ]
    )
    for name in ("retrieved_gain", "ideal_gain", "semantic_hits", "relevant", "relevant_count"):
        np.testing.assert_array_equal(getattr(parts, name), getattr(whole, name))
    strict = _run(relevance, rankings, truths, m=1, exclude=True, depth=2)
    entry = graded_entry(whole, strict, m=1, ks=(1, 2))
    assert set(entry) == {
        "NCS@1",
        "NCS@2",
        "NCS_nonGT@1",
        "NCS_nonGT@2",
        "SR@1",
        "SR@2",
        "SR_nonGT@1",
        "SR_nonGT@2",
        "SR_m",
    }
    # query 2 has no relevance: it adds nothing to NCS and is left out of SR
    assert entry["NCS@1"] == pytest.approx(1 / 2)
    assert entry["SR@2"] == 0.0  # rel_1 = {2}, top 2 = 0, 1
    assert entry["SR_nonGT@2"] == 1.0  # GT 0 skipped: top 2 = 1, 2
    curves = graded_curves(whole, strict, depth=2)
    assert curves["NCS"] == [entry["NCS@1"], entry["NCS@2"]]
    nothing = _run(np.zeros((1, 3)), [[0, 1, 2]], [{0}], 1, False, 2)
    assert nothing.ncs(1) is None
    assert nothing.semantic_recall(1) is None


def oracle_recall_eq1(
    ranked: Sequence[Sequence[str]], positives: Sequence[set[str]], cut: int
) -> float:
    return sum(
        len(set(r[:cut]) & p) / len(p) for r, p in zip(ranked, positives, strict=True)
    ) / len(ranked)


def test_recall_eq1_is_the_share_of_positives_found() -> None:
    ranked = [["a", "b", "c", "d"], ["x", "y", "z", "w"], ["c", "a", "b", "e"]]
    positives = [{"a", "c"}, {"q"}, {"a", "b", "c", "e", "f"}]
    got = recall_eq1(ranked, positives, (1, 2, 3, 4))
    assert got[1] == pytest.approx((1 / 2 + 0 + 1 / 5) / 3)
    assert got[4] == pytest.approx((1 + 0 + 4 / 5) / 3)
    for cut in (1, 2, 3, 4):
        assert got[cut] == pytest.approx(oracle_recall_eq1(ranked, positives, cut))
    rng = np.random.default_rng(3)
    items = [str(i) for i in range(12)]
    ranked = [rng.permutation(items).tolist() for _ in range(20)]
    positives = [
        set(rng.choice(items, size=rng.integers(1, 6), replace=False).tolist()) for _ in range(20)
    ]
    got = recall_eq1(ranked, positives, (1, 5, 10))
    for cut in (1, 5, 10):
        assert got[cut] == pytest.approx(oracle_recall_eq1(ranked, positives, cut))
    with pytest.raises(ValueError, match="positive"):
        recall_eq1([["a"]], [set()], (1,))

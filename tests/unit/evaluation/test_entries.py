"""Report entries from ranks and scores: retrieval, correlation, BISON."""

from __future__ import annotations

import pytest

from evaluation.data.ground_truth import RetrievalTask
from evaluation.entries import bison_entry, correlation_entry, retrieval_entries
from evaluation.metrics.correlation import bootstrap_spearman
from formats.cxc import Rating


def _task(name: str) -> RetrievalTask:
    return RetrievalTask(name, "captions", "captions", ("a", "b"), {}, exclude_query=True)


def test_retrieval_entries_and_curves() -> None:
    entries, curves = retrieval_entries(
        [_task("t2t"), _task("t2t_cocaptions")],
        {"t2t": [1, None], "t2t_cocaptions": [1, 2]},
        k=10,
    )
    assert entries["t2t"]["R@1"] == 0.5
    assert entries["t2t"]["median_rank_censored"] is True
    assert entries["t2t_cocaptions"]["median_rank"] == 1.5
    assert curves["t2t_cocaptions"][:2] == [0.5, 1.0]
    assert len(curves["t2t"]) == 10


def test_correlation_entry_is_the_bootstrap_with_skipped_pairs() -> None:
    ratings = [Rating(f"q{i % 5}", f"p{i}", float(i % 6), "m") for i in range(20)]
    scores = [((i * 7) % 11) / 10 for i in range(20)]
    entry = correlation_entry(ratings, scores, n_samples=20, seed=1, pairs_skipped=3)
    expected = bootstrap_spearman(
        [r.item1 for r in ratings], scores, [r.agg_score for r in ratings], 20, 1
    )
    assert entry == {**expected.as_report(), "pairs_skipped": 3}
    assert "pairs_skipped" not in correlation_entry(ratings, scores, n_samples=20, seed=1)


def test_bison_entry_counts_uploads() -> None:
    entry = bison_entry([1.0, 0.2], [0.5, 0.2], {"unnamed_image": 1}, uploads=4)
    assert entry["accuracy"] == pytest.approx(0.75)
    assert (entry["skipped"], entry["uploads"]) == (1, 4)

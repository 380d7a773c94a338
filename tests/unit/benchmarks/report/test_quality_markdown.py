"""``report.md``: one table per kind of task, the plots linked, the reference numbers."""

from __future__ import annotations

from typing import Any

from benchmarks.report.quality_markdown import (
    FALSE_NEGATIVES_PLOT,
    GRADED_PLOT,
    LATENCY_PLOT,
    ORIGINAL_PLOT,
    RECALL_PLOT,
    render_quality_markdown,
)


def test_every_section_of_a_full_report(quality_report: dict[str, Any]) -> None:
    markdown = render_quality_markdown(quality_report)
    assert markdown.startswith("# Crisscross benchmark — coco-karpathy val\n")
    r1 = quality_report["tasks"]["t2t"]["R@1"] * 100
    assert f"| t2t | {r1:.1f} |" in markdown
    for heading in (
        "## Retrieval (R@K ×100)",
        "## Recall: R^V (eq. 2, any positive) vs R (eq. 1, share of positives) ×100",
        "## CIDEr-D graded metrics (Biten et al. 2022; ×100)",
        "## False negatives of MS-COCO's labels (% of top-K results)",
        "## Correlation with human scores (Spearman's r ×100, bootstrap)",
        "## BISON (accuracy ×100; a tie counts ½)",
        "## Skipped tasks",
        "## Latency (client side, closed loop, warm-up excluded)",
    ):
        assert heading in markdown
    for plot in (RECALL_PLOT, ORIGINAL_PLOT, GRADED_PLOT, FALSE_NEGATIVES_PLOT, LATENCY_PLOT):
        assert f"]({plot})" in markdown
    assert "Reference (CxC paper)" in markdown


def test_a_censored_median_and_an_empty_report() -> None:
    entry = {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "median_rank": None, "k": 10, "queries": 3}
    markdown = render_quality_markdown({"tasks": {"t2t": {**entry, "median_rank_censored": True}}})
    assert "| t2t | 0.0 | 0.0 | 0.0 | > 10 | 3 | 10 |" in markdown
    empty = render_quality_markdown({})
    assert "## Retrieval" not in empty
    assert "## Latency" not in empty

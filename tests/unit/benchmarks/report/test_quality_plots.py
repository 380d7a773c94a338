"""The quality run's plots from a full report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.report.quality_plots import (
    plot_false_negatives,
    plot_graded_curves,
    plot_original_vs_cxc,
    plot_recall_curves,
    task_direction,
)


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_every_plot_of_a_full_report(quality_report: dict[str, Any], tmp_path: Path) -> None:
    paths = [
        plot_recall_curves(quality_report["recall_curves"], tmp_path / "r.png", "R@K"),
        plot_original_vs_cxc(quality_report["tasks"], tmp_path / "o.png", "original"),
        plot_graded_curves(
            quality_report["graded_curves"],
            quality_report["recall_curves"],
            tmp_path / "g.png",
            "graded",
        ),
        plot_false_negatives(quality_report["false_negatives"], tmp_path / "f.png", "views"),
    ]
    for path in paths:
        assert path is not None
        assert path.read_bytes().startswith(b"\x89PNG")
    assert plot_original_vs_cxc({"t2t": {"R@1": 0.5}}, tmp_path / "none.png", "x") is None
    assert task_direction("i2t_original") == "i2t"

"""Markdown tables."""

from __future__ import annotations

from benchmarks.report.markdown import markdown_table


def test_a_table() -> None:
    assert markdown_table(["a", "b"], [["1", "2"], ["3", "4"]]) == [
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "| 3 | 4 |",
    ]

"""Pieces of report.md: the results table, the load range, the optional sections."""

from __future__ import annotations

from typing import Any

from studies.scale_simulation.command_line import config_from, parse_args
from studies.scale_simulation.markdown import (
    loadavg_range,
    render_extrapolation,
    render_fit,
    table_rows,
)
from studies.scale_simulation.units import GIB

SCALES: dict[str, Any] = {
    "20000": {
        "kinds": {
            "Flat": {
                "build": {"train_s": 0.0, "add_s": 2.4, "size_bytes": 2 * GIB},
                "memory": {
                    "baseline": {"anon": GIB},
                    "after_queries": {"anon": 3 * GIB, "index_file_rss": 0},
                },
                "loadavg": [1.5, 1.0, 1.0],
                "points": [
                    {"param": 0, "p50_ms": 1.0, "p99_ms": 2.0, "recall_at_10": 1.0},
                ],
            },
            "HNSW32": {"skipped": "too big"},
            "IVF1024,Flat": {
                "build": {"train_s": 1.0, "add_s": 1.0, "size_bytes": GIB},
                "loadavg": [0.5, 1.0, 1.0],
                "points": [
                    {"param": 1, "p50_ms": 0.1, "p99_ms": 0.2, "recall_at_10": 0.5},
                    {"param": 2, "p50_ms": 0.2, "p99_ms": 0.3, "recall_at_10": 0.75},
                ],
            },
            "IVF1024,PQ8": {"build": {"train_s": 1.0, "add_s": 1.0, "size_bytes": GIB}},
        }
    }
}


def test_the_results_table() -> None:
    lines = table_rows(SCALES)
    assert lines[1] == "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    assert lines[2:] == [
        "| 20k | Flat | 0 | 2 | 2.00 | 2.00 | 0.00 | – | 1.000 | 2.000 | 1.000 |",
        "| 20k | HNSW32 | – | – | – | – | – | skipped | – | – | – |",
        "| 20k | IVF1024,Flat | 1 | 1 | 1.00 | – | – | 1 | 0.100 | 0.200 | 0.500 |",
        "| | | | | | | | 2 | 0.200 | 0.300 | 0.750 |",
        "| 20k | IVF1024,PQ8 | 1 | 1 | 1.00 | – | – | – | – | – | not measured |",
    ]
    assert {line.count("|") for line in lines} == {12}


def test_the_load_range() -> None:
    assert loadavg_range({"scales": SCALES}) == "0.50-1.50"
    assert loadavg_range({"scales": {}}) == "not recorded"


def test_sections_without_data_are_left_out() -> None:
    assert render_fit({"fit_check": {}}) == []
    assert render_extrapolation({}, config_from(parse_args([]))) == []

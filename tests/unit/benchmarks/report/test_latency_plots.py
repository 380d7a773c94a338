"""Latency distributions and the load run's knee."""

from __future__ import annotations

from pathlib import Path

from benchmarks.report.latency_plots import plot_latency, plot_load


def test_latency_and_load_plots(tmp_path: Path) -> None:
    latency = plot_latency({"c1": [1.0, 2.0, 2.5], "c8": [4.0, 9.0]}, tmp_path / "l.png", "t")
    assert latency.read_bytes().startswith(b"\x89PNG")
    level = {"p50_ms": 5.0, "p99_ms": 9.0, "qps": 40.0}
    load = plot_load(
        {"r20": {**level, "offered_rps": 20.0}, "r80": {**level, "offered_rps": 80.0}},
        {"c1": level},
        40.0,
        tmp_path / "k.png",
        "knee",
    )
    assert load.read_bytes().startswith(b"\x89PNG")

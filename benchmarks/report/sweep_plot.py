"""``sweep.png``: recall@10 against p50 latency, one labelled point per parameter value joined
in value order, and the exact search as a reference point."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks.report.figures import save_figure


def plot_sweep(report: Mapping[str, Any], path: Path, title: str) -> Path:
    """Draw ``sweep.json``'s points (recall@10 against client p50 latency) into ``path``."""
    parameter = report["parameter"]
    points = report["points"]
    exact = report["exact"]
    figure = Figure(figsize=(7.5, 5.0))
    axes = figure.add_subplot()
    xs = [float(point["p50_ms"]) for point in points]
    ys = [float(point["recall_at_10"]) for point in points]
    axes.plot(xs, ys, marker="o", color="tab:blue", label=f"{parameter} (labelled)")
    for point, x, y in zip(points, xs, ys, strict=True):
        axes.annotate(
            str(point["value"]),
            (x, y),
            textcoords="offset points",
            xytext=(6, -12),
            fontsize=9,
        )
    axes.plot(
        [float(exact["p50_ms"])],
        [float(exact["recall_at_10"])],
        marker="*",
        markersize=12,
        linestyle="none",
        color="tab:red",
        label="exact search",
    )
    low = min([*ys, float(exact["recall_at_10"])])
    axes.set_ylim(max(0.0, min(low - 0.05, 0.9)), 1.01)
    right = max([*xs, float(exact["p50_ms"])])
    axes.set_xlim(0.0, right * 1.15 if right > 0 else 1.0)
    axes.set_xlabel("p50 latency, client side (ms)")
    axes.set_ylabel("recall@10 vs exact (tie-aware)")
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize=9)
    figure.tight_layout()
    return save_figure(figure, path)

"""``compare_pareto.png``: quality against cost, one point per variant and latency level."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks.report.figures import save_figure
from evaluation.metrics.pareto import COST_METRICS, pareto_front, primary_quality, quality_metrics


def plot_pareto(report: Mapping[str, Any], path: Path, title: str) -> Path:
    """Quality (y) against cost (x): one row per headline quality metric, columns p50 latency,
    p99 latency (ms, log scale) and throughput (requests/s); one point per variant and level,
    labelled ``variant c<N>``, colour by variant, marker by level; each level's Pareto front
    is joined by a dashed line.

    Returns:
        ``path``.
    """
    variants: list[Mapping[str, Any]] = list(report.get("variants") or [])
    qualities = primary_quality(variants) or ["(no quality metric)"]
    levels = list(
        dict.fromkeys(level for entry in variants for level in entry.get("latency") or {})
    )
    markers = ("o", "s", "^", "D", "v", "P")
    colours = [f"C{index}" for index in range(len(variants))]
    figure = Figure(figsize=(15.0, 4.2 * len(qualities) + 0.6))
    grid = figure.subplots(len(qualities), len(COST_METRICS), squeeze=False)
    labels = {
        "p50_ms": "p50 latency (ms)",
        "p99_ms": "p99 latency (ms)",
        "qps": "throughput (req/s)",
    }
    for row, quality in zip(grid, qualities, strict=True):
        for axes, (cost, higher_is_better) in zip(row, COST_METRICS, strict=True):
            for level_index, level in enumerate(levels):
                points: dict[str, tuple[float, float]] = {}
                for colour, entry in zip(colours, variants, strict=True):
                    value = ((entry.get("latency") or {}).get(level) or {}).get(cost)
                    score = quality_metrics(entry.get("tasks") or {}).get(quality)
                    if not isinstance(value, int | float) or score is None:
                        continue
                    name = str(entry.get("name"))
                    points[name] = (float(value), score)
                    axes.scatter(
                        [value],
                        [score],
                        color=colour,
                        marker=markers[level_index % len(markers)],
                        s=50,
                        zorder=3,
                        label=f"{name} {level}",
                    )
                    axes.annotate(
                        f"{name} {level}",
                        (value, score),
                        fontsize=7,
                        xytext=(4, 4),
                        textcoords="offset points",
                    )
                front = pareto_front(points, higher_cost_is_better=higher_is_better)
                if len(front) > 1:
                    ordered = sorted(points[name] for name in front)
                    axes.plot(
                        [p[0] for p in ordered],
                        [p[1] for p in ordered],
                        linestyle="--",
                        color="grey",
                        linewidth=0.8,
                    )
            if cost != "qps":
                axes.set_xscale("log")
            better = "higher" if higher_is_better else "lower"
            axes.set_xlabel(f"{labels[cost]}, {better} is better")
            axes.margins(x=0.2, y=0.2)
            axes.set_ylabel(f"{quality} (×100)")
            axes.grid(True, which="both", alpha=0.3)
    handles, legend_labels = grid[0][0].get_legend_handles_labels()
    if handles:
        grid[0][0].legend(handles, legend_labels, fontsize=7, loc="best")
    figure.suptitle(title)
    figure.tight_layout()
    return save_figure(figure, path)

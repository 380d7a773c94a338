"""PNG plots of a benchmark run: recall@K curves and latency distributions.

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend
state, no display needed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def plot_recall_curves(curves: Mapping[str, Sequence[float]], path: Path, title: str) -> Path:
    """Recall@K against K (log scale) for each retrieval task.

    Args:
        curves: task name → R@K for K = 1..k, fractions in 0–1 (plotted ×100).
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``.
    """
    figure = Figure(figsize=(7.0, 4.5))
    axes = figure.add_subplot()
    for name, curve in curves.items():
        if curve:
            cut_offs = np.arange(1, len(curve) + 1)
            axes.plot(cut_offs, np.asarray(curve) * 100.0, label=name)
    axes.set_xscale("log")
    axes.set_xlabel("K")
    axes.set_ylabel("R@K (%)")
    axes.set_ylim(0.0, 100.0)
    axes.grid(True, which="both", alpha=0.3)
    axes.set_title(title)
    if curves:
        axes.legend(loc="lower right")
    figure.tight_layout()
    return _save(figure, path)


def plot_latency(latencies_ms: Mapping[str, Sequence[float]], path: Path, title: str) -> Path:
    """Latency histogram (left, bins shared by all levels) and empirical CDF (right) per level.

    Args:
        latencies_ms: load level name (``"c1"``, ``"c8"``) → successful request latencies, ms.
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``.
    """
    figure = Figure(figsize=(11.0, 4.5))
    histogram, cdf = figure.subplots(1, 2)
    series = {
        name: np.sort(np.asarray(values, dtype=np.float64))
        for name, values in latencies_ms.items()
        if len(values)
    }
    if series:
        edges = np.histogram_bin_edges(np.concatenate(list(series.values())), bins=60)
        for name, ordered in series.items():
            histogram.hist(ordered, bins=edges, alpha=0.5, label=name)
            cdf.plot(ordered, np.arange(1, ordered.size + 1) / ordered.size, label=name)
    histogram.set_xlabel("latency (ms)")
    histogram.set_ylabel("requests")
    histogram.set_title("distribution")
    cdf.set_xlabel("latency (ms)")
    cdf.set_ylabel("share of requests ≤ latency")
    cdf.set_ylim(0.0, 1.0)
    cdf.grid(True, alpha=0.3)
    cdf.set_title("CDF")
    if series:
        histogram.legend()
        cdf.legend(loc="lower right")
    figure.suptitle(title)
    figure.tight_layout()
    return _save(figure, path)

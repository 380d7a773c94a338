"""``mixed.png``: the searchers' latency distributions idle and while writing (empirical CDF,
log scale), and the writers' acknowledged items per second over the writing phase."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from benchmarks.report.figures import save_figure

_COLOURS = {"idle": "tab:blue", "writing": "tab:red"}


def plot_mixed(
    searches: Sequence[tuple[float, float, str]],
    timeline: Sequence[Mapping[str, float]],
    path: Path,
    title: str,
) -> Path:
    """Search latency CDFs per phase (left) and write throughput over time (right).

    Args:
        searches: ``(seconds, latency ms, phase)`` of each successful search.
        timeline: the writing phase's buckets (``t_s``, ``seconds``, ``items_per_s``).
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``.
    """
    figure = Figure(figsize=(11.0, 4.5))
    cdf, throughput = figure.subplots(1, 2)
    for phase, colour in _COLOURS.items():
        ordered = np.sort(
            np.asarray([ms for _, ms, name in searches if name == phase], dtype=float)
        )
        if ordered.size:
            cdf.plot(
                ordered,
                np.arange(1, ordered.size + 1) / ordered.size,
                color=colour,
                label=f"{phase} (p99 {np.percentile(ordered, 99):.1f} ms)",
            )
    if searches:
        cdf.set_xscale("log")
        cdf.legend(loc="lower right", fontsize=8)
    cdf.set_xlabel("search latency, client side (ms)")
    cdf.set_ylabel("share of searches ≤ latency")
    cdf.set_ylim(0.0, 1.0)
    cdf.grid(True, alpha=0.3)
    cdf.set_title("search latency", fontsize=10)
    if timeline:
        throughput.bar(
            [bucket["t_s"] for bucket in timeline],
            [bucket["items_per_s"] for bucket in timeline],
            width=[bucket["seconds"] for bucket in timeline],
            align="edge",
            color="tab:green",
            edgecolor="white",
        )
    throughput.set_xlabel("seconds since the writing phase began")
    throughput.set_ylabel("items upserted per second (acknowledged)")
    throughput.set_ylim(bottom=0)
    throughput.grid(True, alpha=0.3, axis="y")
    throughput.set_title("write throughput", fontsize=10)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return save_figure(figure, path)

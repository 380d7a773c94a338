"""PNG plots of latency: closed-loop distributions (quality, compare and load runs) and the load
run's knee (p50 / p99 and throughput against offered load)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from benchmarks.report.figures import save_figure


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
    return save_figure(figure, path)


def plot_load(
    open_levels: Mapping[str, Mapping[str, object]],
    closed_levels: Mapping[str, Mapping[str, object]],
    saturation_qps: float,
    path: Path,
    title: str,
) -> Path:
    """The knee plot: p50/p99 (ms, log scale) against offered load (left), and achieved
    throughput against offered load (right), from the open-loop levels; the closed-loop
    saturation throughput is drawn as a reference line on both.

    Args:
        open_levels: the report's ``open`` object (``offered_rps``, ``p50_ms``, ``p99_ms``,
            ``qps``, ``answered_rps``, ``rejected``, ``requests`` per level).
        closed_levels: the report's ``closed`` object (names the saturating level).
        saturation_qps: the largest closed-loop throughput, requests/s.
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``.
    """

    def number(value: object) -> float:
        return float(value) if isinstance(value, int | float) else float("nan")

    def series(key: str) -> list[float]:
        return [number(entry.get(key)) for entry in ordered]

    ordered = sorted(open_levels.values(), key=lambda entry: number(entry.get("offered_rps")))
    offered = series("offered_rps")
    figure = Figure(figsize=(11.0, 4.5))
    knee, throughput = figure.subplots(1, 2)
    if ordered:
        knee.plot(offered, series("p50_ms"), marker="o", label="p50 (2xx)")
        p99 = series("p99_ms")
        knee.plot(offered, p99, marker="o", label="p99 (2xx)")
        for x, y, errors in zip(offered, p99, series("errors"), strict=True):
            if errors > 0 and y == y:  # failed requests are not in the percentiles: say so
                knee.annotate(
                    f"+{errors:.0f} failed",
                    (x, y),
                    fontsize=7,
                    xytext=(-10, 6),
                    textcoords="offset points",
                    color="tab:red",
                )
        rejected = series("rejected_p99_ms")
        if any(value == value for value in rejected):  # any non-NaN
            knee.plot(offered, rejected, marker="x", linestyle=":", label="p99 of 503s")
        throughput.plot(offered, series("qps"), marker="o", label="achieved (2xx)")
        throughput.plot(
            offered, series("answered_rps"), marker=".", linestyle="--", label="answered (any)"
        )
        top = max(offered)
        throughput.plot([0.0, top], [0.0, top], color="grey", linewidth=0.8, label="offered")
        knee.set_yscale("log")
    if saturation_qps > 0:
        best = max(
            closed_levels,
            key=lambda key: number(closed_levels[key].get("qps")),
            default="closed loop",
        )
        label = f"saturation ({best}, {saturation_qps:.1f}/s)"
        knee.axvline(saturation_qps, color="grey", linestyle="--", label=label)
        throughput.axhline(saturation_qps, color="grey", linestyle="--", label=label)
    knee.set_xlabel("offered load (requests/s)")
    knee.set_ylabel("latency from intended send (ms)")
    knee.set_title("latency vs offered load")
    knee.grid(True, which="both", alpha=0.3)
    throughput.set_xlabel("offered load (requests/s)")
    throughput.set_ylabel("throughput (requests/s)")
    throughput.set_title("throughput vs offered load")
    throughput.grid(True, alpha=0.3)
    knee.legend(fontsize=8)
    throughput.legend(fontsize=8, loc="upper left")
    figure.suptitle(title)
    figure.tight_layout()
    return save_figure(figure, path)

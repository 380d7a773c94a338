"""``compare_pareto.png``: quality against cost, one point per row (variant, or lever setting
in a run of ``--setting``) and latency level.

Each quality point carries its 95 % interval as an error bar (the report's
``variants[].quality.<metric>.ci95``, :func:`evaluation.metrics.pareto.variant_quality`), and a
row's y-axis never zooms tighter than the intervals and :data:`MIN_SPAN` points allow, so a
difference smaller than the noise does not look like a gap. Latency axes are logarithmic with a
few plainly labelled ticks (:func:`log_ticks`); variants are told apart by colour and levels by
marker in one legend, not by per-point text (``tab20`` colours past ten rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

from benchmarks.report.figures import save_figure
from evaluation.metrics.correlation import DEFAULT_SAMPLES, DEFAULT_SEED
from evaluation.metrics.pareto import COST_METRICS, pareto_front, primary_quality, variant_quality

MIN_SPAN: Final = 5.0
"""The narrowest y-range of a quality row, in points of the ×100 metric."""
MIN_LOG_RATIO: Final = 3.0
"""The narrowest latency range, as the ratio of the right to the left x-limit."""
MAX_TICKS: Final = 6
"""At most this many labelled ticks on a logarithmic axis."""
_MANTISSAS: Final = ((1,), (1, 2, 5), (1, 2, 3, 5, 7), (1, 2, 3, 4, 5, 6, 7, 8, 9))
_MARKERS: Final = ("o", "s", "^", "D", "v", "P")
_COST_LABELS: Final = {
    "p50_ms": "p50 latency (ms)",
    "p99_ms": "p99 latency (ms)",
    "qps": "throughput (req/s)",
}
_FONT: Final = 10.0
_CYCLE: Final = 10
"""Rows told apart by the default colour cycle (``C0``..``C9``); more take ``tab20``."""

Interval = tuple[float, float]


def _plain(value: float, _position: object = None) -> str:
    """A tick label without powers of ten or trailing zeros: ``5``, ``20``, ``0.5``, ``1500``."""
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


def log_ticks(low: float, high: float, max_ticks: int = MAX_TICKS) -> list[float]:
    """Tick positions in ``[low, high]`` (both > 0) of the form ``m · 10^e``: the richest mantissa
    set of ``(1)``, ``(1, 2, 5)``, ``(1, 2, 3, 5, 7)``, ``(1, …, 9)`` that stays within
    ``max_ticks``; the sparsest one's ticks when none does; at least the ends otherwise."""
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high; got {low}, {high}")
    chosen: list[float] = []
    for mantissas in _MANTISSAS:
        ticks = [
            float(f"{mantissa * 10.0**exponent:.12g}")
            for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
            for mantissa in mantissas
            if low <= mantissa * 10.0**exponent <= high
        ]
        if len(ticks) > max_ticks:
            break
        chosen = ticks
        if len(ticks) >= 3:
            break
    return chosen if len(chosen) >= 2 else [low, high]


def log_limits(values: Sequence[float], min_ratio: float = MIN_LOG_RATIO) -> tuple[float, float]:
    """x-limits of positive ``values`` on a log axis: 20 % padding either side, widened around
    the geometric centre to a ratio of at least ``min_ratio``."""
    low, high = min(values) / 1.2, max(values) * 1.2
    if high / low < min_ratio:
        centre = math.sqrt(low * high)
        low, high = centre / math.sqrt(min_ratio), centre * math.sqrt(min_ratio)
    return low, high


def quality_limits(
    points: Sequence[tuple[float, Interval | None]],
    min_span: float = MIN_SPAN,
    bounds: Interval = (0.0, 100.0),
) -> Interval:
    """y-limits of a quality row: every value and whole interval, 15 % padding, at least
    ``min_span`` wide (centred on the data), shifted to stay within ``bounds`` when they allow."""
    ends = [value for value, _ in points]
    ends += [bound for _, interval in points if interval is not None for bound in interval]
    low, high = min(ends), max(ends)
    pad = 0.15 * (high - low)
    low, high = low - pad, high + pad
    if high - low < min_span:
        centre = (low + high) / 2.0
        low, high = centre - min_span / 2.0, centre + min_span / 2.0
    if low < bounds[0] <= min(ends):
        low, high = bounds[0], max(high, bounds[0] + min_span)
    if high > bounds[1] >= max(ends):
        low, high = min(low, bounds[1] - min_span), bounds[1]
    return low, high


def _value_bounds(quality: str) -> Interval:
    return (-100.0, 100.0) if quality.endswith("ρ") else (0.0, 100.0)


def _cost_axis(axes: Axes, cost: str, values: Sequence[float]) -> None:
    if cost == "qps":
        axes.xaxis.set_major_locator(MaxNLocator(nbins=5))
    elif values and min(values) > 0:
        axes.set_xscale("log")
        low, high = log_limits(values)
        axes.set_xlim(low, high)
        axes.xaxis.set_major_locator(FixedLocator(log_ticks(low, high)))
        axes.xaxis.set_minor_formatter(NullFormatter())
    axes.xaxis.set_major_formatter(FuncFormatter(_plain))


def row_colours(names: Sequence[str]) -> dict[str, str]:
    """A colour per row name: the default cycle ``C0``..``C9`` for up to ten rows, else
    ``tab20`` (twenty distinct colours, then repeating)."""
    if len(names) <= _CYCLE:
        return {name: f"C{index}" for index, name in enumerate(names)}
    palette = colormaps["tab20"]
    return {name: to_hex(palette(index % 20)) for index, name in enumerate(names)}


def build_pareto_figure(report: Mapping[str, Any], title: str) -> Figure:
    """Quality (y) against cost (x): one row per headline quality metric, columns p50 latency,
    p99 latency (ms, log scale) and throughput (requests/s); one point per report row (variant,
    or lever setting) and level with its 95 % interval as an error bar, colour by row, marker by
    level; each level's Pareto front (by the point values) is joined by a dashed line."""
    variants: list[Mapping[str, Any]] = list(report.get("variants") or [])
    settings: Mapping[str, Any] = report.get("settings") or {}
    samples = int(settings.get("bootstrap_samples") or DEFAULT_SAMPLES)
    seed = int(settings.get("seed") or DEFAULT_SEED)
    qualities = primary_quality(variants) or ["(no quality metric)"]
    levels = list(
        dict.fromkeys(level for entry in variants for level in entry.get("latency") or {})
    )
    colours = row_colours([str(entry.get("name")) for entry in variants])
    noun = "setting" if report.get("lever_settings") else "variant"
    measured = {str(entry.get("name")): variant_quality(entry, samples, seed) for entry in variants}
    figure = Figure(figsize=(12.0, 3.3 * len(qualities) + 1.6), layout="constrained")
    grid = figure.subplots(
        len(qualities), len(COST_METRICS), squeeze=False, sharex="col", sharey="row"
    )
    for row_index, (row, quality) in enumerate(zip(grid, qualities, strict=True)):
        row_points = [measured[name][quality] for name in measured if quality in measured[name]]
        for column, (axes, (cost, higher_is_better)) in enumerate(
            zip(row, COST_METRICS, strict=True)
        ):
            costs: list[float] = []
            for level_index, level in enumerate(levels):
                points: dict[str, tuple[float, float]] = {}
                for entry in variants:
                    name = str(entry.get("name"))
                    value = ((entry.get("latency") or {}).get(level) or {}).get(cost)
                    if not isinstance(value, int | float) or quality not in measured[name]:
                        continue
                    score, interval = measured[name][quality]
                    points[name] = (float(value), score)
                    costs.append(float(value))
                    axes.errorbar(
                        [value],
                        [score],
                        yerr=(
                            None
                            if interval is None
                            else [[score - interval[0]], [interval[1] - score]]
                        ),
                        color=colours[name],
                        marker=_MARKERS[level_index % len(_MARKERS)],
                        markersize=7,
                        capsize=4,
                        elinewidth=1.4,
                        linestyle="none",
                        zorder=3,
                    )
                front = pareto_front(points, higher_cost_is_better=higher_is_better)
                if len(front) > 1:
                    ordered = sorted(points[name] for name in front)
                    axes.plot(
                        [p[0] for p in ordered],
                        [p[1] for p in ordered],
                        linestyle="--",
                        color="grey",
                        linewidth=0.9,
                        zorder=2,
                    )
            _cost_axis(axes, cost, costs)
            axes.tick_params(labelsize=_FONT)
            axes.grid(True, which="major", alpha=0.35)
            axes.grid(True, which="minor", alpha=0.12)
            if row_index == 0:
                better = "higher" if higher_is_better else "lower"
                axes.set_title(f"{_COST_LABELS[cost]}, {better} is better", fontsize=_FONT + 1)
            if row_index == len(qualities) - 1:
                axes.set_xlabel(_COST_LABELS[cost], fontsize=_FONT + 1)
            if column == 0:
                axes.set_ylabel(f"{quality} (×100)\nbars: 95 % CI", fontsize=_FONT + 1)
        if row_points:
            row[0].set_ylim(*quality_limits(row_points, bounds=_value_bounds(quality)))
    handles = [
        Line2D([], [], color=colour, marker="o", linestyle="none", markersize=8, label=name)
        for name, colour in colours.items()
    ] + [
        Line2D(
            [],
            [],
            color="dimgrey",
            marker=_MARKERS[index % len(_MARKERS)],
            linestyle="none",
            markersize=8,
            label=f"concurrency {level.removeprefix('c')}",
        )
        for index, level in enumerate(levels)
    ]
    if handles:
        figure.legend(
            handles=handles,
            loc="outside lower center",
            ncol=min(len(handles), 6),
            fontsize=_FONT,
            title=(
                f"colour: {noun}, marker: latency level, dashed: Pareto front\n"
                f"error bars: 95 % confidence interval (bootstrap over queries, {samples} "
                f"samples; ρ: mean ± 1.96 sd); y-axes span at least {MIN_SPAN:g} points"
            ),
            title_fontsize=_FONT,
            frameon=False,
        )
    figure.suptitle(title, fontsize=_FONT + 3)
    return figure


def plot_pareto(report: Mapping[str, Any], path: Path, title: str) -> Path:
    """Write :func:`build_pareto_figure` of ``report`` to ``path`` (PNG).

    Returns:
        ``path``.
    """
    return save_figure(build_pareto_figure(report, title), path)

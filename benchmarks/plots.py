"""PNG plots of a benchmark run: recall@K, R (eq. 1) / NCS / SR curves, the false-negative
view and latency distributions.

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend
state, no display needed).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import imread


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def task_direction(task: str) -> str:
    """The retrieval direction of a task name: ``i2t_original`` → ``i2t``."""
    return task.split("_", 1)[0]


def plot_recall_curves(curves: Mapping[str, Sequence[float]], path: Path, title: str) -> Path:
    """Recall@K against K (log scale): one panel per direction (t2t, i2t, t2i, i2i), each with
    that direction's tasks (e.g. ``i2t`` and ``i2t_original``), in one figure.

    Args:
        curves: task name → R@K for K = 1..k, fractions in 0–1 (plotted ×100).
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``.
    """
    directions: dict[str, dict[str, Sequence[float]]] = {}
    for name, curve in curves.items():
        directions.setdefault(task_direction(name), {})[name] = curve
    panels = max(1, len(directions))
    columns = min(panels, 2)
    rows = (panels + columns - 1) // columns
    figure = Figure(figsize=(6.0 * columns, 4.0 * rows + 0.6))
    grid = figure.subplots(rows, columns, squeeze=False)
    axes_list = [axes for row in grid for axes in row]
    for axes, (direction, tasks) in zip(axes_list, directions.items(), strict=False):
        for name, curve in tasks.items():
            if curve:
                cut_offs = np.arange(1, len(curve) + 1)
                axes.plot(cut_offs, np.asarray(curve) * 100.0, label=name)
        axes.set_title(direction)
        axes.legend(loc="lower right")
    for axes in axes_list:
        axes.set_xscale("log")
        axes.set_xlabel("K")
        axes.set_ylabel("R@K (%)")
        axes.set_ylim(0.0, 100.0)
        axes.grid(True, which="both", alpha=0.3)
    for axes in axes_list[len(directions) :]:
        if directions:
            axes.set_visible(False)
    figure.suptitle(title)
    figure.tight_layout()
    return _save(figure, path)


ORIGINAL_PAIRS = (("i2t", "i2t_original"), ("t2i", "t2i_original"))
CUT_OFFS = ("R@1", "R@5", "R@10")


def plot_original_vs_cxc(
    tasks: Mapping[str, Mapping[str, object]], path: Path, title: str
) -> Path | None:
    """Grouped bars of R@1/5/10 (×100): CxC positives vs MS-COCO's original pairs, for i2t and
    t2i (each direction drawn when at least one of its two tasks was run).

    Args:
        tasks: the report's ``tasks`` object.
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``, or ``None`` (nothing written) when neither direction has a task.
    """
    present = [pair for pair in ORIGINAL_PAIRS if any(name in tasks for name in pair)]
    if not present:
        return None
    figure = Figure(figsize=(5.5 * len(present), 4.2))
    grid = figure.subplots(1, len(present), squeeze=False)
    width = 0.38
    positions = np.arange(len(CUT_OFFS))
    for axes, pair in zip(grid[0], present, strict=True):
        for offset, name in zip((-width / 2, width / 2), pair, strict=True):
            entry = tasks.get(name) or {}
            values = [entry.get(cut) for cut in CUT_OFFS]
            heights = [float(v) * 100.0 if isinstance(v, float | int) else 0.0 for v in values]
            label = f"{name} (CxC)" if name == pair[0] else f"{name} (COCO)"
            bars = axes.bar(positions + offset, heights, width, label=label)
            axes.bar_label(bars, fmt="%.1f", fontsize=8)
        axes.set_xticks(positions, list(CUT_OFFS))
        axes.set_ylim(0.0, 118.0)
        axes.set_ylabel("recall (%)")
        axes.set_title(pair[0])
        axes.legend(loc="upper center", fontsize=8, ncols=2)
        axes.grid(True, axis="y", alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    return _save(figure, path)


GRADED_SERIES = ("NCS", "NCS_nonGT", "SR", "SR_nonGT")


def plot_graded_curves(
    graded: Mapping[str, Mapping[str, Sequence[float | None]]],
    recall_curves: Mapping[str, Sequence[float]],
    path: Path,
    title: str,
) -> Path:
    """R@K = R^V (eq. 2), R (eq. 1), NCS@K and SR@K for K = 1..10: one panel per direction.

    Each panel has every task's R^V and R (eq. 1) curves; the NCS / SR curves (both variants)
    are drawn once per direction, from the ``*_original`` task (all queries, as Biten et al.)
    when it has them, else from the CxC task.

    Args:
        graded: the report's ``graded_curves`` (task → series name → values for K = 1..10).
        recall_curves: the report's ``recall_curves`` (task → R@1..R@k).
        path: the PNG file to write.
        title: figure title.

    Returns:
        ``path``.
    """
    directions: dict[str, list[str]] = {}
    for name in graded:
        directions.setdefault(task_direction(name), []).append(name)
    panels = max(1, len(directions))
    columns = min(panels, 2)
    rows = (panels + columns - 1) // columns
    figure = Figure(figsize=(6.5 * columns, 4.2 * rows + 0.6))
    grid = figure.subplots(rows, columns, squeeze=False)
    axes_list = [axes for row in grid for axes in row]
    for axes, (direction, names) in zip(axes_list, directions.items(), strict=False):
        for name in names:
            depth = len(graded[name].get("R_eq1", [])) or 10
            binary = list(recall_curves.get(name, []))[:depth]
            cut_offs = np.arange(1, depth + 1)
            if binary:
                axes.plot(cut_offs[: len(binary)], np.asarray(binary) * 100, label=f"R^V {name}")
            if "R_eq1" in graded[name]:
                axes.plot(cut_offs, _percent(graded[name]["R_eq1"]), "--", label=f"R eq.1 {name}")
        source = next(
            (name for name in names if name.endswith("_original") and "NCS" in graded[name]),
            next((name for name in names if "NCS" in graded[name]), None),
        )
        if source is not None:
            for series, style in zip(GRADED_SERIES, ("-o", ":o", "-s", ":s"), strict=True):
                values = graded[source][series]
                axes.plot(
                    np.arange(1, len(values) + 1),
                    _percent(values),
                    style,
                    markersize=3,
                    label=f"{series} {source}",
                )
        axes.set_title(direction)
        axes.legend(loc="lower right", fontsize=7)
    for axes in axes_list:
        axes.set_xlabel("K")
        axes.set_ylabel("%")
        axes.set_ylim(0.0, 105.0)
        axes.grid(True, alpha=0.3)
    for axes in axes_list[len(directions) :]:
        if directions:
            axes.set_visible(False)
    figure.suptitle(title)
    figure.tight_layout()
    return _save(figure, path)


def _percent(values: Sequence[float | None]) -> npt.NDArray[np.float64]:
    return np.array([np.nan if value is None else value * 100.0 for value in values])


FALSE_NEGATIVE_SHARES = ("wrong", "wrong_cxc", "wrong_cider", "wrong_either")
EXAMPLES_SHOWN = 4


def plot_false_negatives(
    views: Mapping[str, Mapping[str, Any]],
    path: Path,
    title: str,
    images_dir: Path | None = None,
) -> Path:
    """The false-negative view: per direction, bars of the shares of top-K results that
    MS-COCO counts wrong (and, of those, CxC / CIDEr-D rates relevant) at K = 1, 5, 10; below,
    the strongest examples (the image, when its file is in ``images_dir``, and the caption).

    Args:
        views: the report's ``false_negatives`` (direction → entry).
        path: the PNG file to write.
        title: figure title.
        images_dir: the split's image files, for thumbnails.

    Returns:
        ``path``.
    """
    directions = list(views)
    columns = max(EXAMPLES_SHOWN, len(directions))
    figure = Figure(figsize=(3.6 * columns, 3.6 * (1 + len(directions))))
    grid = figure.subplots(1 + len(directions), columns, squeeze=False)
    width = 0.2
    for column, direction in enumerate(directions):
        axes = grid[0][column]
        view = views[direction]
        cuts = [int(key.split("@")[1]) for key in view if key.startswith("results@")]
        positions = np.arange(len(cuts))
        for offset, share in enumerate(FALSE_NEGATIVE_SHARES):
            values = _percent([view.get(f"{share}@{cut}") for cut in cuts])
            bars = axes.bar(positions + (offset - 1.5) * width, values, width, label=share)
            axes.bar_label(bars, fmt="%.0f", fontsize=6)
        axes.set_xticks(positions, [f"top {cut}" for cut in cuts])
        axes.set_ylim(0.0, 105.0)
        axes.set_ylabel("% of top-K results")
        axes.set_title(f"{direction}: COCO-wrong results", fontsize=9)
        axes.legend(fontsize=6)
    for axes in grid[0][len(directions) :]:
        axes.set_visible(False)
    for row, direction in enumerate(directions, start=1):
        examples = list(views[direction].get("examples") or [])[: grid.shape[1]]
        for column, axes in enumerate(grid[row]):
            axes.set_xticks([])
            axes.set_yticks([])
            if column >= len(examples):
                axes.set_visible(False)
                continue
            example = examples[column]
            image = example["query"] if direction == "i2t" else example["retrieved"]
            file = images_dir / str(image) if images_dir is not None else None
            if file is not None and file.is_file():
                axes.imshow(imread(file))
            else:
                axes.text(0.5, 0.5, str(image), ha="center", va="center", fontsize=6)
            cxc = example.get("cxc_score")
            label = (
                f"{direction} rank {example['rank']} · COCO: {example['coco_label']}\n"
                f"CxC {'unrated' if cxc is None else f'{cxc:.2f}'} · "
                f"CIDEr-D {example['cider_d']:.2f}\n"
                + textwrap.fill(str(example.get("caption", "")), 42)
            )
            axes.set_xlabel(label, fontsize=6)
    figure.suptitle(title)
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
    return _save(figure, path)

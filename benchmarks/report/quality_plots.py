"""PNG plots of a quality run: recall@K, CxC vs MS-COCO's original pairs, R (eq. 1) / NCS / SR
curves and the false-negative view (matplotlib's object API on the Agg canvas,
:func:`benchmarks.report.figures.save_figure`)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import imread

from benchmarks.report.figures import save_figure


def _panels(count: int, width: float, height: float) -> tuple[Figure, list[Axes]]:
    """A figure of ``count`` panels (at least one), two per row, each ``width`` × ``height``
    inches; the panels in reading order."""
    panels = max(1, count)
    columns = min(panels, 2)
    rows = (panels + columns - 1) // columns
    figure = Figure(figsize=(width * columns, height * rows + 0.6))
    grid = figure.subplots(rows, columns, squeeze=False)
    return figure, [axes for row in grid for axes in row]


def _finish(figure: Figure, unused: list[Axes], title: str, path: Path) -> Path:
    """Hide the ``unused`` panels, title the figure and save it."""
    for axes in unused:
        axes.set_visible(False)
    figure.suptitle(title)
    figure.tight_layout()
    return save_figure(figure, path)


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
    figure, axes_list = _panels(len(directions), 6.0, 4.0)
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
    return _finish(figure, axes_list[len(directions) :] if directions else [], title, path)


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
    return save_figure(figure, path)


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
    figure, axes_list = _panels(len(directions), 6.5, 4.2)
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
    return _finish(figure, axes_list[len(directions) :] if directions else [], title, path)


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
    return save_figure(figure, path)

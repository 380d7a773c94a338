"""``hostile.png``: the honest client's latency over the run (alone, then beside the crowd) with
the crowd's open connections on a second axis."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from benchmarks.report.figures import save_figure

_COLOURS = {"alone": "tab:blue", "attacked": "tab:red"}


def plot_hostile(
    samples: Sequence[tuple[float, float, str]],
    crowd_open: Sequence[tuple[float, int]],
    path: Path,
    title: str,
) -> Path:
    """Each honest request's latency (ms, log scale) at its time, coloured by phase, and the
    crowd's open connections, into ``path``."""
    figure = Figure(figsize=(9.0, 4.8))
    axes = figure.add_subplot()
    for phase, colour in _COLOURS.items():
        points = [(at, latency) for at, latency, name in samples if name == phase]
        if points:
            axes.scatter(
                [at for at, _ in points],
                [latency for _, latency in points],
                s=4,
                color=colour,
                alpha=0.5,
                label=f"honest search, {phase}",
            )
    axes.set_yscale("log")
    axes.set_xlabel("seconds since the measured run began")
    axes.set_ylabel("honest search latency, client side (ms)")
    axes.grid(True, alpha=0.3)
    crowd = axes.twinx()
    crowd.plot(
        [at for at, _ in crowd_open],
        [count for _, count in crowd_open],
        color="black",
        linewidth=1.0,
        label="crowd connections open",
    )
    crowd.set_ylabel("crowd connections open")
    crowd.set_ylim(bottom=0)
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = crowd.get_legend_handles_labels()
    axes.legend(handles + more_handles, labels + more_labels, loc="upper left", fontsize=8)
    axes.set_title(title, fontsize=10)
    figure.tight_layout()
    return save_figure(figure, path)

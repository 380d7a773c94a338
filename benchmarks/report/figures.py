"""Saving a figure: matplotlib's object API on the Agg canvas (no pyplot, no global backend
state, no display needed)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 120


def save_figure(figure: Figure, path: Path) -> Path:
    """Draw ``figure`` on an Agg canvas and write it to ``path`` as PNG; returns ``path``."""
    FigureCanvasAgg(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    return path

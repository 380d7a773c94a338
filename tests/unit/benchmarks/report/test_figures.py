"""A figure is saved as PNG without pyplot."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from benchmarks.report.figures import save_figure


def test_a_figure_is_written_as_png(tmp_path: Path) -> None:
    figure = Figure(figsize=(2, 2))
    figure.subplots().plot([0, 1], [1, 0])
    path = save_figure(figure, tmp_path / "plots" / "f.png")
    assert path.read_bytes().startswith(b"\x89PNG")

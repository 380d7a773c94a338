"""mixed.png (through the writer that draws it beside mixed.json and mixed.md)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.report.mixed_plot import plot_mixed
from benchmarks.report.writers import write_mixed_outputs
from benchmarks.runs.mixed.run import MixedRun
from tests.unit.benchmarks.report.test_mixed_markdown import REPORT

PNG = b"\x89PNG\r\n\x1a\n"
SEARCHES = [(0.05 * i, 8.0 + i % 5, "idle" if i < 20 else "writing") for i in range(40)]
TIMELINE = [
    {"t_s": 0.0, "seconds": 1.0, "items": 1500, "items_per_s": 1500.0},
    {"t_s": 1.0, "seconds": 1.2, "items": 1800, "items_per_s": 1500.0},
]


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    path = plot_mixed(SEARCHES, TIMELINE, tmp_path / "m.png", "title")
    assert path.read_bytes()[:8] == PNG


def test_an_empty_run_still_plots(tmp_path: Path) -> None:
    path = plot_mixed([], [], tmp_path / "empty.png", "nothing measured")
    assert path.read_bytes()[:8] == PNG


def test_the_writer_writes_json_markdown_and_plot(tmp_path: Path) -> None:
    written = write_mixed_outputs(MixedRun(report=REPORT, searches=SEARCHES), tmp_path / "out")
    assert set(written) == {"json", "markdown", "plot"}
    assert written["plot"] == tmp_path / "out" / "mixed.png"
    assert written["plot"].read_bytes()[:8] == PNG
    assert json.loads(written["json"].read_text(encoding="utf-8")) == REPORT
    assert written["markdown"].read_text(encoding="utf-8").startswith("# Crisscross: searches")

"""hostile.png (through the writer that draws it beside hostile.json and hostile.md)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.report.hostile_plot import plot_hostile
from benchmarks.report.writers import write_hostile_outputs
from benchmarks.runs.hostile.run import HostileRun
from tests.unit.benchmarks.report.test_hostile_markdown import REPORT


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    samples = [(0.1 * i, 10.0 + i % 3, "alone" if i < 10 else "attacked") for i in range(20)]
    path = plot_hostile(samples, [(1.0, 0), (1.5, 1200)], tmp_path / "h.png", "title")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_writer_writes_json_markdown_and_plot(tmp_path: Path) -> None:
    samples = [(0.1 * i, 10.0 + i % 3, "alone" if i < 10 else "attacked") for i in range(20)]
    run = HostileRun(report=REPORT, samples=samples, crowd_open=[(1.0, 0), (1.5, 1200)])
    written = write_hostile_outputs(run, tmp_path)
    assert set(written) == {"json", "markdown", "plot"}
    assert written["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

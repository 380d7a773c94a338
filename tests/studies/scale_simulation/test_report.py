"""The arguments that reproduce a report."""

from __future__ import annotations

from studies.scale_simulation.report import reproducing


def test_reproducing_drops_the_phase() -> None:
    argv = ["--scales", "1000", "--phase", "build", "--cache", "c", "--phase=report", "--seed", "1"]
    assert reproducing(argv) == ["--scales", "1000", "--cache", "c", "--seed", "1"]
    assert reproducing([]) == []

"""The load run's level keys (the phases themselves run in ``test_run``)."""

from __future__ import annotations

from benchmarks.runs.load.phases import closed_key, open_key


def test_level_keys() -> None:
    assert open_key(48.0) == "r48"
    assert open_key(2.5) == "r2_5"
    assert open_key(0.125) == "r0_125"
    assert closed_key(8) == "c8"

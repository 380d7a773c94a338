"""The load run's summary: open rates from saturation, the overload check, the in-process
baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.runs.load.summary import overload_check, rate_levels, read_inprocess_qps
from benchmarks.runs.setup_error import BenchmarkSetupError


def test_rate_levels_and_overload_check() -> None:
    assert rate_levels(95.3, (0.25, 0.5, 1.0, 2.0)) == [
        (24.0, 0.25),
        (48.0, 0.5),
        (95.0, 1.0),
        (191.0, 2.0),
    ]
    assert rate_levels(5.0, (0.5, 0.5, 1.0)) == [(2.5, 0.5), (5.0, 1.0)]
    entries = {
        "r150": {"offered_rps": 150.0, "p99_ms": 90.0, "requests": 100, "rejected": 10},
        "r210": {"offered_rps": 210.0, "p99_ms": 120.0, "requests": 200, "rejected": 50},
    }
    for entry in entries.values():
        entry |= {"rejected_p99_ms": 2.0, "errors": 0, "qps": 100.0}
    check = overload_check(entries, 100.0, 40.0)  # type: ignore[arg-type]
    assert check is not None
    assert check["level"] == "r210"
    assert check["ratio"] == pytest.approx(3.0)
    assert check["rejected_share"] == pytest.approx(0.25)
    assert overload_check({}, 100.0, 40.0) is None


def test_the_in_process_baseline(tmp_path: Path) -> None:
    good = tmp_path / "inprocess.json"
    good.write_text(json.dumps({"inprocess_qps": 300, "single": {"qps": 200.0}}))
    assert read_inprocess_qps(good) == (300.0, {"inprocess_qps": 300, "single": {"qps": 200.0}})
    bad = tmp_path / "bad.json"
    bad.write_text('{"single": {}}')
    with pytest.raises(BenchmarkSetupError, match="inprocess_qps"):
        read_inprocess_qps(bad)
    with pytest.raises(BenchmarkSetupError, match="cannot read"):
        read_inprocess_qps(tmp_path / "missing.json")

"""What a driver records: the in-flight meter's integral, a sample's latency."""

from __future__ import annotations

import pytest

from benchmarks.drivers.samples import InFlightMeter, Sample


def test_in_flight_meter_integrates_the_count() -> None:
    meter = InFlightMeter(start=0.0)
    meter.enter(0.0)
    meter.enter(1.0)
    meter.leave(2.0)
    meter.leave(4.0)
    # 1 in flight for 1 s, 2 for 1 s, 1 for 2 s, 0 for 1 s: area 5 over 5 s.
    assert meter.mean(5.0) == pytest.approx(1.0)
    assert meter.peak == 2
    assert InFlightMeter(start=1.0).mean(1.0) == 0.0


def test_a_sample_s_latency_runs_from_its_intended_send_time() -> None:
    sample = Sample(intended=1.0, dispatched=1.5, sent=2.0, done=3.0, status=200)
    assert sample.latency_ms == pytest.approx(2000.0)
    assert Sample(intended=1.0, dispatched=1.0).latency_ms is None

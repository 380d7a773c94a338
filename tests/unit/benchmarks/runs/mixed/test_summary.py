"""The mixed run's arithmetic: tallies, percentiles, read-your-writes and delete accounting,
the throughput timeline."""

from __future__ import annotations

import pytest

from benchmarks.runs.mixed.summary import (
    DeleteChecks,
    RequestTally,
    Visibility,
    latency_numbers,
    ratio,
    throughput_timeline,
)


def test_latency_numbers_interpolate_and_prefix() -> None:
    numbers = latency_numbers([1.0, 2.0, 3.0, 4.0, 10.0], "lag_")
    assert numbers["lag_p50_ms"] == 3.0
    assert numbers["lag_p95_ms"] == pytest.approx(8.8)
    assert numbers["lag_p99_ms"] == pytest.approx(9.76)
    assert numbers["lag_max_ms"] == 10.0
    assert numbers["lag_mean_ms"] == 4.0
    assert set(latency_numbers([]).values()) == {None}


def test_a_tally_keeps_2xx_latencies_counts_errors_and_retries_apart() -> None:
    tally = RequestTally()
    tally.record("200", 10.0, 0)
    tally.record("200", 30.0, 2)  # retried twice, then answered: not an error
    tally.record("422", 1.0, 0)
    tally.record("timeout", 5000.0, 1)
    summary = tally.summary(wall_s=2.0)
    assert (summary["requests"], summary["ok"], summary["errors"]) == (4, 2, 2)
    assert summary["answers"] == {"200": 2, "422": 1, "timeout": 1}
    assert summary["retried_503"] == 3
    assert summary["per_s"] == 1.0
    assert summary["p50_ms"] == 20.0
    assert summary["max_ms"] == 30.0
    assert RequestTally().summary(0.0)["per_s"] is None


def test_visibility_counts_first_read_misses_and_never_seen_writes() -> None:
    visibility = Visibility()
    visibility.record(2.0, reads=1)
    visibility.record(4.0, reads=1)
    visibility.record(9.0, reads=3)  # seen, but not at its first read
    visibility.record(None, reads=40)  # never seen
    summary = visibility.summary()
    assert summary["checked"] == 4
    assert summary["visible_at_first_read"] == 2
    assert summary["not_visible_at_first_read"] == 2
    assert summary["never_visible"] == 1
    assert summary["reads"] == 45
    assert summary["lag_p50_ms"] == 4.0
    assert summary["lag_max_ms"] == 9.0
    assert visibility.violations == 2
    with pytest.raises(ValueError, match="at least one read"):
        visibility.record(1.0, reads=0)


def test_a_clean_visibility_has_no_violation() -> None:
    visibility = Visibility()
    for lag in (1.0, 2.0, 3.0):
        visibility.record(lag, reads=1)
    assert visibility.summary()["not_visible_at_first_read"] == 0
    assert visibility.summary()["visible_at_first_read"] == 3


def test_delete_checks_add_get_and_search_resurrections() -> None:
    checks = DeleteChecks()
    checks.record(ids=100, still_in_get=0, searched=True, found_by_search=False)
    checks.record(ids=50, still_in_get=3, searched=True, found_by_search=True)
    checks.record(ids=10, still_in_get=0, searched=False, found_by_search=False)
    assert checks.summary() == {
        "deletes": 3,
        "ids": 160,
        "still_in_get": 3,
        "searched": 2,
        "still_in_search": 1,
        "resurrected": 4,
    }


def test_the_timeline_buckets_acks_per_second() -> None:
    acks = [(10.2, 100), (10.9, 100), (11.5, 50), (12.1, 100)]
    buckets = throughput_timeline(acks, start=10.0, end=13.0)
    assert [bucket["t_s"] for bucket in buckets] == [0.0, 1.0, 2.0]
    assert [bucket["items"] for bucket in buckets] == [200, 50, 100]
    assert [bucket["items_per_s"] for bucket in buckets] == [200.0, 50.0, 100.0]


def test_a_short_remainder_widens_the_last_bucket_and_a_long_one_is_its_own() -> None:
    widened = throughput_timeline([(11.95, 30), (12.05, 20)], start=10.0, end=12.1)
    assert [bucket["seconds"] for bucket in widened] == pytest.approx([1.0, 1.1])
    assert widened[-1]["items"] == 50
    assert widened[-1]["items_per_s"] == pytest.approx(50 / 1.1)
    apart = throughput_timeline([(12.6, 30)], start=10.0, end=12.8)
    assert [bucket["seconds"] for bucket in apart] == pytest.approx([1.0, 1.0, 0.8])
    assert apart[-1]["items_per_s"] == pytest.approx(30 / 0.8)


def test_acks_outside_the_span_are_clamped_and_an_empty_span_has_no_buckets() -> None:
    buckets = throughput_timeline([(9.0, 1), (20.0, 2)], start=10.0, end=12.0)
    assert [bucket["items"] for bucket in buckets] == [1, 2]
    assert throughput_timeline([(1.0, 1)], start=5.0, end=5.0) == []
    short = throughput_timeline([(5.1, 4)], start=5.0, end=5.2)
    assert [(bucket["seconds"], bucket["items"]) for bucket in short] == [(pytest.approx(0.2), 4)]
    with pytest.raises(ValueError, match="bucket_s"):
        throughput_timeline([], 0.0, 1.0, bucket_s=0.0)


def test_ratio_is_none_without_both_terms() -> None:
    assert ratio(30.0, 10.0) == 3.0
    assert ratio(None, 10.0) is None
    assert ratio(5.0, None) is None
    assert ratio(5.0, 0.0) is None

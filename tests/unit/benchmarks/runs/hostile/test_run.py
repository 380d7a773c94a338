"""The hostile run's pieces: the counters it reads from /metrics, its summaries of the honest
client and of the crowd's closes (the whole run against a live service: tests/e2e)."""

from __future__ import annotations

from collections import Counter

from benchmarks.drivers.hostile_clients import SLOWLORIS, STALLED, Closure, CrowdResult
from benchmarks.runs.hostile.run import _closes, _counted, _counters, _summary

EXPOSITION = """\
# HELP crisscross_client_refusals_total Connections and requests refused.
# TYPE crisscross_client_refusals_total counter
crisscross_client_refusals_total{reason="head_timeout"} 12.0
crisscross_client_refusals_total{reason="body_timeout"} 3.0
crisscross_requests_total{method="POST",route="/v1/search",status="200"} 100.0
crisscross_request_duration_seconds_count{method="POST",route="/v1/search",status="200"} 100.0
crisscross_connections_open 7.0
"""


def test_counters_reads_the_watched_counters_only() -> None:
    assert _counters(EXPOSITION) == {
        'crisscross_client_refusals_total{reason="head_timeout"}': 12.0,
        'crisscross_client_refusals_total{reason="body_timeout"}': 3.0,
        'crisscross_requests_total{method="POST",route="/v1/search",status="200"}': 100.0,
    }


def test_counted_keeps_what_grew() -> None:
    before = {"a{}": 1.0, "b{}": 5.0}
    after = {"a{}": 1.0, "b{}": 7.0, "c{}": 2.0}
    assert _counted(before, after) == {"b{}": 2.0, "c{}": 2.0}


def test_summary_of_the_honest_client() -> None:
    summary = _summary([1.0, 2.0, 3.0, 4.0], Counter({"200": 4, "503": 1}), 2.0)
    assert summary["requests"] == 5
    assert summary["ok"] == 4
    assert summary["answers"] == {"200": 4, "503": 1}
    assert summary["p50_ms"] == 2.5
    assert summary["max_ms"] == 4.0


def test_closes_judges_each_kind_against_its_deadline() -> None:
    result = CrowdResult(
        closures=[
            Closure(STALLED, 2.1, 408, 3.0),
            Closure(STALLED, 5.0, None, 6.0),
            Closure(SLOWLORIS, 1.0, 408, 1.0),
        ]
    )
    stalled = _closes(result, STALLED, 2.0)
    assert stalled["closed"] == 2
    assert stalled["statuses"] == {"408": 1, "None": 1}
    assert stalled["closed_within_deadline"] == 1  # 2.1 s is within the 1 s allowance
    assert stalled["held_max_s"] == 5.0
    assert _closes(result, SLOWLORIS, 2.0)["closed"] == 1

"""hostile.md from a hostile.json: both phases, the p99 ratio, the closes, the counters."""

from __future__ import annotations

from typing import Any

from benchmarks.report.hostile_markdown import HOSTILE_PLOT, render_hostile_markdown


def phase(p99: float) -> dict[str, Any]:
    return {
        "requests": 100,
        "ok": 99,
        "answers": {"200": 99, "503": 1},
        "p50_ms": 10.0,
        "p95_ms": 15.0,
        "p99_ms": p99,
        "max_ms": 30.0,
        "wall_s": 2.0,
    }


def closes(deadline: float) -> dict[str, Any]:
    return {
        "closed": 5,
        "statuses": {"408": 5},
        "held_p50_s": deadline,
        "held_max_s": deadline + 0.1,
        "configured_deadline_s": deadline,
        "closed_within_deadline": 5,
    }


REPORT: dict[str, Any] = {
    "schema_version": 1,
    "created": "2026-11-27T12:00:00+00:00",
    "service": "http://127.0.0.1:8000",
    "settings": {
        "stalled_bodies": 200,
        "slowloris": 1000,
        "declared_bytes": 100_000,
        "sent_bytes": 10,
        "line_interval_s": 5.0,
        "duration_s": 30.0,
        "attack_s": 75.0,
        "collection": "captions",
        "k": 10,
    },
    "honest": {"alone": phase(20.0), "attacked": phase(25.0), "p99_ratio": 1.25},
    "crowd": {
        "planned": 1200,
        "open_at_start": 1200,
        "peak_open": 1200,
        "connect_failures": {},
        "duration_s": 80.0,
        "stalled_body": closes(60.0),
        "slowloris": closes(10.0),
    },
    "service_counted": {'crisscross_client_refusals_total{reason="head_timeout"}': 1000.0},
    "environment": {"cpu_count": 2, "platform": "Linux", "python": "3.11", "load_average": None},
}


def test_the_markdown_gives_both_phases_the_ratio_and_the_closes() -> None:
    text = render_hostile_markdown(REPORT)
    assert "| alone | 100 | 99 | 503: 1 | 10.0 | 15.0 | 20.0 | 30.0 |" in text
    assert "p99 beside the crowd ÷ p99 alone: **1.25**" in text
    assert "| stalled_body | 5 | 408: 5 | 60.0 | 60.1 | 60 | 5 |" in text
    assert '`crisscross_client_refusals_total{reason="head_timeout"}` | 1000 |' in text
    assert f"]({HOSTILE_PLOT})" in text

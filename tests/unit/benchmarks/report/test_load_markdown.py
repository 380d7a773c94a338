"""``load.md``: the closed and open tables, the summary, the warnings."""

from __future__ import annotations

from benchmarks.report.load_markdown import LOAD_LATENCY_PLOT, LOAD_PLOT, render_load_markdown


def _level(**extra: object) -> dict[str, object]:
    return {
        "requests": 100,
        "p50_ms": 5.0,
        "p95_ms": 9.0,
        "p99_ms": 12.0,
        "max_ms": 20.0,
        "qps": 50.0,
        "errors_by_status": {"500": 1},
        "rejected": 2,
        "rejected_p99_ms": 1.0,
        "client_cpu_ms_per_request": 0.1,
        "in_flight_mean": 1.0,
        "littles_law_xw": 1.0,
        "littles_law_ok": True,
        **extra,
    }


def test_tables_summary_and_warnings() -> None:
    report = {
        "collection": {"name": "captions", "count": 60},
        "settings": {"queries": 60, "seed": 0, "k": 10, "include_metadata": True},
        "closed": {"c1": _level(concurrency=1)},
        "open": {
            "r48": _level(
                offered_rps=48.0,
                saturation_multiple=0.96,
                dispatch_lag_p99_ms=0.5,
                backlogged=0,
                onset={"requests": 9, "p99_ms": 7.0, "rejected": 0},
            )
        },
        "saturation_qps": 50.0,
        "inprocess_qps": 100.0,
        "efficiency_ratio": 0.5,
        "overload_2x": None,
        "warnings": ["c1: something"],
    }
    markdown = render_load_markdown(report)
    assert "| c1 | 1 | 100 | 5.0 | 9.0 | 12.0 | 20.0 | 50.0 | 500: 1 | 2 (1.0 ms) |" in markdown
    assert "| r48 | 48.0 | 0.96 |" in markdown
    assert "| 9, 7.0, 0 |" in markdown
    assert "efficiency ratio **0.500**" in markdown
    assert "no open level between 1.5× and 3× saturation" in markdown
    assert "- c1: something" in markdown
    assert f"]({LOAD_PLOT})" in markdown
    assert f"]({LOAD_LATENCY_PLOT})" in markdown


def test_the_overload_line_times_refusals_from_the_intended_send_and_from_the_send() -> None:
    overload = {
        "level": "r100",
        "saturation_multiple": 2.0,
        "admitted_p99_ms": 30.0,
        "unloaded_p99_ms": 15.0,
        "ratio": 2.0,
        "rejected_share": 0.5,
        "rejected_p99_ms": 10.5,
        "rejected_sent_p99_ms": 4.25,
        "errors": 0,
    }
    markdown = render_load_markdown({"closed": {}, "open": {}, "overload_2x": overload})
    assert (
        "503 share 50.0 % with p99 10.5 ms from the intended send time, 4.2 ms from the send"
        in markdown
    )


def test_an_empty_run_has_no_level_tables() -> None:
    markdown = render_load_markdown({"closed": {}, "open": {}})
    assert "## Closed loop" not in markdown
    assert "## Open loop" not in markdown
    assert "not given (`--inprocess-json`)" in markdown

"""mixed.md from a mixed.json: both phases' searches, the writes, the read-your-writes and
delete checks, the totals."""

from __future__ import annotations

from typing import Any

from benchmarks.report.mixed_markdown import MIXED_PLOT, render_mixed_markdown


def requests(ok: int, per_s: float | None, p99: float, answers: dict[str, int]) -> dict[str, Any]:
    return {
        "requests": sum(answers.values()),
        "ok": ok,
        "errors": sum(answers.values()) - ok,
        "answers": answers,
        "retried_503": 2,
        "per_s": per_s,
        "p50_ms": 10.0,
        "p95_ms": 15.0,
        "p99_ms": p99,
        "max_ms": 40.0,
        "mean_ms": 11.0,
    }


def visibility(late: int) -> dict[str, Any]:
    return {
        "checked": 300,
        "visible_at_first_read": 300 - late,
        "not_visible_at_first_read": late,
        "never_visible": 0,
        "reads": 300 + late,
        "lag_p50_ms": 3.0,
        "lag_p95_ms": 6.0,
        "lag_p99_ms": 8.0,
        "lag_max_ms": 9.5,
        "lag_mean_ms": 3.5,
    }


REPORT: dict[str, Any] = {
    "schema_version": 1,
    "created": "2026-11-28T12:00:00+00:00",
    "service": "http://127.0.0.1:8000",
    "settings": {
        "collection": "mixed-bench",
        "dim": 384,
        "vector_format": "base64",
        "preload": 20_000,
        "preload_batch": 1000,
        "searchers": 4,
        "writers": 2,
        "batch": 100,
        "delete_share": 0.1,
        "phase_s": 20.0,
        "k": 10,
    },
    "collection": {
        "name": "mixed-bench",
        "dim": 384,
        "fields": {"group": "integer"},
        "final": {"count": 41_000, "seq": 350, "rows": 45_000, "base_count": 0, "index": "Flat"},
        "kept": False,
    },
    "preload": {"items": 20_000, "requests": 20, "seconds": 4.0, "items_per_s": 5000.0},
    "phases": {
        "idle": {"wall_s": 20.0, "search": requests(4000, 200.0, 20.0, {"200": 4000})},
        "writing": {
            "wall_s": 20.0,
            "search": requests(2000, 100.0, 50.0, {"200": 2000, "500": 1, "timeout": 2}),
            "upserts": requests(300, 15.0, 90.0, {"200": 300}),
            "items_upserted": 30_000,
            "items_per_s": 1500.0,
            "deletes": requests(30, 1.5, 30.0, {"200": 30}),
            "ids_deleted": 3000,
            "ids_deleted_per_s": 150.0,
            "delete_not_found": 0,
            "timeline": [{"t_s": 0.0, "seconds": 1.0, "items": 1500, "items_per_s": 1500.0}],
            "visibility": {"get": visibility(0), "search": visibility(1)},
            "delete_checks": {
                "deletes": 30,
                "ids": 3000,
                "still_in_get": 0,
                "searched": 30,
                "still_in_search": 0,
                "resurrected": 0,
            },
            "checks": requests(660, 33.0, 9.0, {"200": 660}),
        },
    },
    "search_p99_ratio": 2.5,
    "totals": {
        "errors": 3,
        "retried_503": 10,
        "not_visible_at_first_read": 1,
        "never_visible": 0,
        "resurrected_deletes": 0,
        "delete_not_found": 0,
    },
    "environment": {
        "cpu_count": 2,
        "platform": "Linux",
        "python": "3.11",
        "load_average_before": [0.1, 0.1, 0.1],
        "load_average_after": [1.9, 0.5, 0.2],
    },
}


def test_the_markdown_gives_both_phases_and_the_ratio() -> None:
    text = render_mixed_markdown(REPORT)
    assert text.startswith("# Crisscross: searches while writing")
    assert "| idle | 4000 | 200 | 0 | 2 | 10.0 | 15.0 | 20.0 | 40.0 |" in text
    assert "| writing | 2003 | 100 | 3 (500: 1, timeout: 2) | 2 | 10.0 | 15.0 | 50.0 |" in text
    assert "p99 while writing ÷ p99 idle: **2.50**" in text
    assert f"]({MIXED_PLOT})" in text
    assert "sent as `vector_base64`" in text
    assert "20,000 items preloaded in 4.0 s (5,000 items/s)" in text


def test_the_markdown_gives_the_writes_and_the_checks() -> None:
    text = render_mixed_markdown(REPORT)
    assert "| upsert | 300 | 1,500 | 0 | 2 | 10.0 | 15.0 | 90.0 | 40.0 |" in text
    assert "| delete | 30 | 150 | 0 |" in text
    assert "30,000 items upserted and 3,000 ids deleted in 20.0 s" in text
    assert "| `items/get` of one id | 300 | 300 | 0 | 0 | 3.0 | 8.0 | 9.5 |" in text
    assert "| k=1 search along its own vector | 300 | 299 | 1 | 0 | 3.0 | 8.0 | 9.5 |" in text
    assert "| 30 | 3000 | 0 | 30 | 0 |" in text
    assert "**Totals**: 3 errors, 10 503s retried, 1 writes not visible at first read" in text
    assert "41000 items, seq 350" in text
    assert "dropped." in text
    assert "load average before [0.1, 0.1, 0.1], after [1.9, 0.5, 0.2]" in text


def test_json_vectors_and_missing_numbers_read_plainly() -> None:
    report = {
        **REPORT,
        "settings": {**REPORT["settings"], "vector_format": "json"},
        "search_p99_ratio": None,
        "preload": {"items": 0, "requests": 0, "seconds": 0.0, "items_per_s": None},
    }
    text = render_mixed_markdown(report)
    assert "sent as `vector` lists" in text
    assert "p99 ratio: –" in text
    assert "0 items preloaded in 0.0 s (– items/s)" in text

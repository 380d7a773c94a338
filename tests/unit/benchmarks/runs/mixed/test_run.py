"""The whole mixed run against an in-memory fake of the live-collection routes: a clean run
reports no violation, and each fault (a read that misses a fresh write, a delete that keeps its
ids, 503s to retry, failing searches, writes unavailable) lands where it belongs. The run
against a real service: tests/e2e/test_mixed_load.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from benchmarks.runs.mixed.config import MixedRunConfig
from benchmarks.runs.mixed.run import IDLE, WRITING, MixedRun, _preload_pools, run_mixed
from benchmarks.runs.setup_error import BenchmarkSetupError
from tests.unit.benchmarks.runs.mixed.fake_live import FakeCollection, FakeLive

SMALL: dict[str, Any] = {
    "url": "http://fake",
    "dim": 8,
    "preload": 50,
    "preload_batch": 20,
    "searchers": 2,
    "writers": 2,
    "batch": 10,
    "delete_share": 0.3,
    "phase_s": 0.25,
    "warmup_requests": 2,
    "visibility_timeout_s": 0.5,
    "show_progress": False,
}


def run(service: FakeLive, **overrides: Any) -> MixedRun:
    config = MixedRunConfig(**{**SMALL, **overrides})
    return asyncio.run(run_mixed(config, transport=service.transport()))


def test_a_clean_run_writes_searches_checks_and_drops_its_collection() -> None:
    service = FakeLive()
    service.collections["mixed-bench"] = FakeCollection(dim=3, fields={})  # a stale one
    result = run(service)
    report = result.report
    assert service.dropped == ["mixed-bench", "mixed-bench"]  # the stale one, then its own
    assert not service.collections
    assert report["collection"]["dim"] == 8
    assert report["collection"]["fields"] == {"group": "integer"}
    assert report["collection"]["kept"] is False
    assert report["preload"]["items"] == 50
    assert report["preload"]["requests"] == 3
    idle, writing = report["phases"][IDLE], report["phases"][WRITING]
    for phase in (idle, writing):
        assert phase["search"]["ok"] > 0
        assert phase["search"]["errors"] == 0
        assert phase["search"]["p99_ms"] is not None
    assert "upserts" not in idle
    upserts = writing["upserts"]
    assert upserts["ok"] > 0
    assert writing["items_upserted"] == upserts["ok"] * 10
    assert writing["items_per_s"] == pytest.approx(writing["items_upserted"] / writing["wall_s"])
    assert sum(bucket["items"] for bucket in writing["timeline"]) == writing["items_upserted"]
    for kind in ("get", "search"):
        visibility = writing["visibility"][kind]
        assert visibility["checked"] == upserts["ok"]
        assert visibility["visible_at_first_read"] == upserts["ok"]
        assert visibility["reads"] == upserts["ok"]
    deletes = writing["delete_checks"]
    assert deletes["deletes"] == writing["deletes"]["ok"] > 0
    assert deletes["ids"] == writing["ids_deleted"]
    assert report["totals"] == {
        "errors": 0,
        "retried_503": 0,
        "not_visible_at_first_read": 0,
        "never_visible": 0,
        "resurrected_deletes": 0,
        "delete_not_found": 0,
    }
    final = report["collection"]["final"]
    assert final["count"] == 50 + writing["items_upserted"] - writing["ids_deleted"]
    assert report["search_p99_ratio"] == pytest.approx(
        writing["search"]["p99_ms"] / idle["search"]["p99_ms"]
    )
    assert {"cpu_count", "platform", "python", "load_average_before"} <= set(report["environment"])
    phases = {phase for _, _, phase in result.searches}
    assert phases == {IDLE, WRITING}
    assert len(result.searches) == idle["search"]["ok"] + writing["search"]["ok"]


def test_json_vectors_and_keep_leave_the_collection() -> None:
    service = FakeLive()
    report = run(service, vector_format="json", keep=True, collection="kept.one").report
    assert "kept.one" in service.collections
    assert report["collection"]["kept"] is True
    assert report["totals"]["errors"] == 0


def test_a_write_missed_by_its_first_reads_is_a_violation_with_its_lag() -> None:
    service = FakeLive(stale_reads=1)
    report = run(service, delete_share=0.0).report
    writing = report["phases"][WRITING]
    for kind in ("get", "search"):
        visibility = writing["visibility"][kind]
        assert visibility["checked"] > 0
        assert visibility["not_visible_at_first_read"] == visibility["checked"]
        assert visibility["never_visible"] == 0
        assert visibility["reads"] == 2 * visibility["checked"]
        assert visibility["lag_p50_ms"] is not None
    totals = report["totals"]
    assert totals["not_visible_at_first_read"] == 2 * writing["visibility"]["get"]["checked"]
    assert totals["errors"] == 0


def test_a_write_never_seen_is_given_up_after_the_timeout() -> None:
    service = FakeLive(stale_reads=10_000)
    report = run(service, writers=1, delete_share=0.0, visibility_timeout_s=0.05).report
    visibility = report["phases"][WRITING]["visibility"]["get"]
    assert visibility["never_visible"] == visibility["checked"] > 0
    assert report["totals"]["never_visible"] >= visibility["checked"]


def test_deleted_ids_read_back_are_resurrected() -> None:
    service = FakeLive(keep_deleted=True)
    report = run(service, delete_share=0.5).report
    checks = report["phases"][WRITING]["delete_checks"]
    assert checks["deletes"] > 0
    assert checks["still_in_get"] == checks["ids"]
    assert checks["still_in_search"] == checks["searched"]
    assert report["totals"]["resurrected_deletes"] == checks["resurrected"] > 0


def test_503s_are_retried_and_counted_and_other_answers_are_errors() -> None:
    service = FakeLive(busy_every=3, search_error_every=7)
    report = run(service).report
    writing = report["phases"][WRITING]
    assert writing["upserts"]["retried_503"] > 0
    assert writing["upserts"]["errors"] == 0
    # The third upsert is the last preload batch's: the API client retries it, off the clock.
    assert report["totals"]["retried_503"] == service.busy_answers - 1
    errors = [
        report["phases"][phase]["search"]["answers"].get("500", 0) for phase in (IDLE, WRITING)
    ]
    assert all(count > 0 for count in errors)
    assert report["totals"]["errors"] >= sum(errors)


def test_a_service_without_live_collections_is_a_setup_error() -> None:
    with pytest.raises(BenchmarkSetupError, match="--collections-dir"):
        run(FakeLive(writes_unavailable=True))


def test_a_failed_warm_up_drops_the_collection_it_made() -> None:
    service = FakeLive(fail_searches=True)
    with pytest.raises(BenchmarkSetupError, match="warm-up search answered 500"):
        run(service)
    assert not service.collections
    assert service.dropped == ["mixed-bench"]


def test_the_preload_is_dealt_out_to_the_writers_to_delete() -> None:
    config = MixedRunConfig(**{**SMALL, "preload": 7, "preload_batch": 3, "writers": 3})
    pools = _preload_pools(config)
    assert [[ref.id for ref in pool] for pool in pools] == [
        ["p0-0", "p1-0", "p2-0"],
        ["p0-1", "p1-1"],
        ["p0-2", "p1-2"],
    ]

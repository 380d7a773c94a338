"""``python -m benchmarks load`` end to end against a fake service on a local asyncio server:
one "core" (4 ms per search) with a short admission queue (503 beyond it)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from benchmarks.report.load_markdown import render_load_markdown
from benchmarks.report.writers import write_load_outputs
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.levels import level_schedule, search_body
from benchmarks.runs.load.phases import closed_key, open_key
from benchmarks.runs.load.run import run_load
from benchmarks.runs.load.summary import overload_check, rate_levels, read_inprocess_qps
from benchmarks.runs.setup_error import BenchmarkSetupError
from tests.fakes.fake_search_service import FakeSearchService
from tests.fakes.tiny_data import TinyDataset
from tests.fakes.tiny_http import serve_in_thread

LEVEL_KEYS = {
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "qps",
    "errors",
    "errors_by_status",
    "rejected",
    "rejected_p99_ms",
    "client_cpu_ms_per_request",
    "littles_law_ok",
    "in_flight_mean",
    "littles_law_xw",
    "requests",
    "client_bound",
    "warnings",
}
OVERLOAD_KEYS = {
    "admitted_p99_ms",
    "unloaded_p99_ms",
    "ratio",
    "rejected_share",
    "rejected_p99_ms",
}


def _config(url: str, tiny: TinyDataset, **kwargs: object) -> LoadRunConfig:
    settings: dict[str, object] = {
        "url": url,
        "data_dir": tiny.data_dir,
        "split": tiny.split,
        "closed_levels": (1, 2),
        "open_fractions": (0.5, 2.0),
        "duration_s": 0.4,
        "drain_s": 1.0,
        "warmup_requests": 5,
        "settle_s": 2.0,
        "timeout_s": 5.0,
        "ready_timeout_s": 5.0,
    }
    settings.update(kwargs)
    return LoadRunConfig(**settings)  # type: ignore[arg-type]


def test_run_load_writes_the_stable_keys(tiny: TinyDataset, tmp_path: Path) -> None:
    inprocess = tmp_path / "inprocess.json"
    inprocess.write_text(json.dumps({"inprocess_qps": 300.0, "single": {"qps": 200.0}}))
    service = FakeSearchService()
    with serve_in_thread(service) as server:
        run = asyncio.run(run_load(_config(server.url, tiny, inprocess_json=inprocess)))
    report = run.report
    assert set(report["closed"]) == {"c1", "c2"}
    for entry in report["closed"].values():
        assert set(entry) >= LEVEL_KEYS
        assert entry["ok"] > 0
        assert entry["errors"] == 0
    assert len(report["open"]) == 2
    for key, entry in report["open"].items():
        assert key == open_key(entry["offered_rps"])
        assert set(entry) >= LEVEL_KEYS | {"offered_rps", "dispatch_lag_p99_ms", "backlogged"}
    saturation = report["saturation_qps"]
    assert saturation == max(entry["qps"] for entry in report["closed"].values())
    assert report["inprocess_qps"] == 300.0
    assert report["efficiency_ratio"] == pytest.approx(saturation / 300.0, rel=1e-3)
    overload = report["overload_2x"]
    assert set(overload) >= OVERLOAD_KEYS
    assert overload["unloaded_p99_ms"] == report["closed"]["c1"]["p99_ms"]
    assert 0.0 <= overload["rejected_share"] <= 1.0
    assert report["environment"]["cpu_count"] is not None
    assert report["variant"] == "toy"
    assert report["bundle_version"] == "v1"
    # What an app sends: a caption of the split, k = 10 (clipped to the size), metadata on.
    texts = {caption.text for caption in tiny.captions}
    assert all(body["query"]["text"] in texts for body in service.searches)  # type: ignore[index]
    assert all(body["k"] == 10 and body["include_metadata"] is True for body in service.searches)

    written = write_load_outputs(run, tmp_path / "out")
    assert json.loads(written["json"].read_text()) == report
    markdown = written["markdown"].read_text()
    assert "| c1 | 1 |" in markdown
    assert "efficiency ratio" in markdown
    for name in ("plot", "latency_plot"):
        assert written[name].read_bytes().startswith(b"\x89PNG")


def test_overload_shows_fast_rejections(tiny: TinyDataset) -> None:
    """Offered far past capacity: the fake service's queue fills and it answers 503 fast."""
    service = FakeSearchService(service_s=0.01, queue_limit=2)
    with serve_in_thread(service) as server:
        run = asyncio.run(
            run_load(_config(server.url, tiny, closed_levels=(1,), open_rates=(400.0,)))
        )
    entry = run.report["open"]["r400"]
    assert entry["rejected"] > 0
    assert entry["errors"] == 0
    assert entry["rejected_p50_ms"] < entry["p99_ms"]  # a refusal is faster than an answer
    assert run.report["overload_2x"] is None or run.report["overload_2x"]["level"] == "r400"


def test_an_open_level_without_arrivals_is_skipped(tiny: TinyDataset) -> None:
    with serve_in_thread(FakeSearchService()) as server:
        run = asyncio.run(
            run_load(_config(server.url, tiny, closed_levels=(1,), open_rates=(0.01,)))
        )
    assert run.report["open"] == {}
    assert any("no Poisson arrival" in warning for warning in run.report["warnings"])
    assert run.report["overload_2x"] is None


def test_setup_errors(tiny: TinyDataset, tmp_path: Path) -> None:
    service = FakeSearchService()
    with (
        serve_in_thread(service) as server,
        pytest.raises(BenchmarkSetupError, match="no 'images' collection"),
    ):
        asyncio.run(run_load(_config(server.url, tiny, collection="images")))
    bad = tmp_path / "bad.json"
    bad.write_text('{"single": {}}')
    with pytest.raises(BenchmarkSetupError, match="inprocess_qps"):
        read_inprocess_qps(bad)


def test_rate_levels_overload_check_and_keys() -> None:
    assert rate_levels(95.3, (0.25, 0.5, 1.0, 2.0)) == [
        (24.0, 0.25),
        (48.0, 0.5),
        (95.0, 1.0),
        (191.0, 2.0),
    ]
    assert rate_levels(5.0, (0.5, 0.5, 1.0)) == [(2.5, 0.5), (5.0, 1.0)]
    assert open_key(48.0) == "r48"
    assert open_key(2.5) == "r2_5"
    assert closed_key(8) == "c8"
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
    body = json.loads(search_body("a dog", "captions", 10, include_metadata=True, variant=None))
    assert body == {
        "query": {"text": "a dog"},
        "collection": "captions",
        "k": 10,
        "include_metadata": True,
    }
    assert "## Open loop" not in render_load_markdown({"closed": {}, "open": {}})


def test_an_open_level_sends_its_warm_up_then_at_most_max_requests(tmp_path: Path) -> None:
    config = LoadRunConfig(
        url="http://127.0.0.1:1",
        data_dir=tmp_path,
        duration_s=5.0,
        open_warmup_s=1.0,
        max_requests=50,
    )
    schedule = level_schedule(config, 200.0, [0, 1])
    warmup = [offset for offset in schedule if offset < 1.0]
    assert 150 < len(warmup) < 250  # every warm-up arrival, max_requests or not
    assert len(schedule) - len(warmup) == 50
    assert schedule == sorted(schedule)

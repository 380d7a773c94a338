"""The whole load run against a fake search service over real HTTP: closed and open levels in
real time (a few seconds), every stable key of ``load.json``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from benchmarks.report.writers import write_load_outputs
from benchmarks.runs.load.phases import open_key
from benchmarks.runs.load.run import run_load
from tests.fakes.fake_search_service import FakeSearchService
from tests.fakes.tiny_data import TinyDataset, write_tiny_dataset
from tests.fakes.tiny_http import serve_in_thread
from tests.unit.benchmarks.runs.load.test_run import LEVEL_KEYS, OVERLOAD_KEYS, load_config


@pytest.fixture
def tiny(tmp_path: Path) -> TinyDataset:
    """A small Karpathy/CxC-format dataset on disk."""
    return write_tiny_dataset(tmp_path / "data", split="val")


def test_run_load_writes_the_stable_keys(tiny: TinyDataset, tmp_path: Path) -> None:
    inprocess = tmp_path / "inprocess.json"
    inprocess.write_text(json.dumps({"inprocess_qps": 300.0, "single": {"qps": 200.0}}))
    service = FakeSearchService()
    with serve_in_thread(service) as server:
        run = asyncio.run(run_load(load_config(server.url, tiny, inprocess_json=inprocess)))
    report = run.report
    assert list(report) == [
        "schema_version",
        "service_url",
        "created_at",
        "collection",
        "variant",
        "bundle",
        "bundle_version",
        "closed",
        "open",
        "saturation_qps",
        "inprocess_qps",
        "efficiency_ratio",
        "overload_2x",
        "inprocess",
        "warnings",
        "settings",
        "service",
        "durations_s",
        "environment",
    ]
    assert (
        report["settings"]["client"]
        == "raw asyncio HTTP/1.1 keep-alive (benchmarks.drivers.raw_http)"
    )
    assert all(entry["onset"]["requests"] > 0 for entry in report["open"].values())
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

"""``python -m benchmarks load`` end to end against a fake service on a local asyncio server:
one "core" (4 ms per search) with a short admission queue (503 beyond it)."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.run import run_load
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
    "rejected_sent_p99_ms",
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
    "rejected_sent_p99_ms",
}


def load_config(url: str, tiny: TinyDataset, **kwargs: object) -> LoadRunConfig:
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
        "open_warmup_s": 0.2,
    }
    settings.update(kwargs)
    return LoadRunConfig(**settings)  # type: ignore[arg-type]


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_overload_shows_fast_rejections(tiny: TinyDataset) -> None:
    """Offered far past capacity: the fake service's queue fills and it answers 503 fast."""
    service = FakeSearchService(service_s=0.01, queue_limit=2)
    with serve_in_thread(service) as server:
        run = asyncio.run(
            run_load(load_config(server.url, tiny, closed_levels=(1,), open_rates=(400.0,)))
        )
    entry = run.report["open"]["r400"]
    assert entry["rejected"] > 0
    assert entry["errors"] == 0
    assert entry["rejected_p50_ms"] < entry["p99_ms"]  # a refusal is faster than an answer
    assert run.report["overload_2x"] is None or run.report["overload_2x"]["level"] == "r400"


def test_an_open_level_without_arrivals_is_skipped(tiny: TinyDataset) -> None:
    with serve_in_thread(FakeSearchService()) as server:
        run = asyncio.run(
            run_load(load_config(server.url, tiny, closed_levels=(1,), open_rates=(0.01,)))
        )
    assert run.report["open"] == {}
    assert any("no Poisson arrival" in warning for warning in run.report["warnings"])
    assert run.report["overload_2x"] is None


def test_setup_errors(tiny: TinyDataset) -> None:
    service = FakeSearchService()
    with (
        serve_in_thread(service) as server,
        pytest.raises(BenchmarkSetupError, match="no 'images' collection"),
    ):
        asyncio.run(run_load(load_config(server.url, tiny, collection="images")))

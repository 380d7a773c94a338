"""The latency phase: closed-loop text searches per level, k clipped to the collection."""

from __future__ import annotations

import asyncio

from benchmarks.runs.quality.run import run_quality
from tests.fakes.fake_service import FakeService
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.quality.test_run import text_config


def test_levels_warm_up_and_k(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions)
    config = text_config(
        tiny, tasks=("latency",), concurrency_levels=(1, 2), latency_requests=5, latency_k=100
    )
    run = asyncio.run(run_quality(config, transport=service.transport()))
    assert set(run.report["latency"]) == {"c1", "c2"}
    assert run.report["latency"]["c2"]["requests"] == 5
    assert run.report["latency"]["c2"]["concurrency"] == 2
    assert len(run.latencies_ms["c1"]) == 5
    searches = [body for _, path, body in service.requests if path == "/v1/search"]
    assert len(searches) == 2 * (config.warmup_requests + 5)
    assert {body["k"] for body in searches} == {len(tiny.captions)}  # clipped to the size
    texts = {caption.text for caption in tiny.captions}
    assert all(body["query"]["text"] in texts for body in searches)


def test_latency_searches_carry_the_search_fields(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions)
    fields = {"mode": "hybrid", "window": 100}
    config = text_config(
        tiny, tasks=("latency",), concurrency_levels=(1,), latency_requests=3, search_fields=fields
    )
    asyncio.run(run_quality(config, transport=service.transport()))
    searches = [body for _, path, body in service.requests if path == "/v1/search"]
    assert searches
    assert all({key: body[key] for key in fields} == fields for body in searches)

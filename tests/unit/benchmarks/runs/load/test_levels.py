"""The load run's requests and schedules: the search body an app sends, pre-serialised
requests, an open level's Poisson schedule."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.drivers.raw_http import Endpoint
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.levels import level_schedule, search_body, search_payloads


def test_search_body_and_payloads() -> None:
    body = json.loads(search_body("a dog", "captions", 10, include_metadata=True, variant=None))
    assert body == {
        "query": {"text": "a dog"},
        "collection": "captions",
        "k": 10,
        "include_metadata": True,
    }
    with_variant = search_body("é", "captions", 5, include_metadata=False, variant="int8")
    assert json.loads(with_variant)["variant"] == "int8"
    assert "é".encode() in with_variant  # not escaped
    payloads = search_payloads(Endpoint("127.0.0.1", 8000), ["a", "b"], "captions", 10)
    assert len(payloads) == 2
    assert payloads[0].startswith(b"POST /v1/search HTTP/1.1\r\n")


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

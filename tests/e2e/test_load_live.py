"""The load driver, briefly, against a real uvicorn process on loopback (bounded in time)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.run import run_load
from tests.e2e.conftest import LiveService

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_brief_load_against_the_live_service(live_service: LiveService, data_dir: Path) -> None:
    config = LoadRunConfig(
        url=live_service.url,
        data_dir=data_dir,
        split="val",
        closed_levels=(1, 2),
        open_fractions=(0.5, 1.0),
        duration_s=2.0,
        open_warmup_s=0.5,
        max_requests=200,
        warmup_requests=5,
        drain_s=5.0,
        settle_s=10.0,
    )
    report = asyncio.run(run_load(config)).report
    for entry in report["closed"].values():
        assert entry["ok"] > 0
        assert entry["errors"] == 0
        assert entry["littles_law_ok"] is True
    assert report["saturation_qps"] > 0
    assert len(report["open"]) == 2
    for entry in report["open"].values():
        assert entry["ok"] > 0
        assert entry["errors"] == 0
        assert entry["onset"]["requests"] > 0  # the warm-up, reported apart

"""The load driver, briefly, against a live service named by ``CRISSCROSS_BENCH_URL``.

Skipped unless that variable is set (``make bench`` / a live-service fixture can set it), e.g.
``CRISSCROSS_BENCH_URL=http://127.0.0.1:8000 pytest tests/benchmarks/test_load_live.py``.
Only loopback URLs are accepted: load tests never leave the machine.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from benchmarks.loadrun import LoadRunConfig, run_load

LIVE_URL = os.environ.get("CRISSCROSS_BENCH_URL")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not LIVE_URL, reason="set CRISSCROSS_BENCH_URL to a live service"),
]


def test_brief_load_against_the_live_service(data_dir: Path) -> None:
    assert LIVE_URL is not None
    assert urlsplit(LIVE_URL).hostname in {"127.0.0.1", "localhost", "::1"}, "loopback only"
    config = LoadRunConfig(
        url=LIVE_URL,
        data_dir=data_dir,
        split="val",
        closed_levels=(1, 2),
        open_fractions=(0.5, 1.0),
        duration_s=2.0,
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

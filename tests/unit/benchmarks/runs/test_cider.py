"""The cider run: the matrix built (or reused) and checked against the reference."""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.runs.cider import CiderRunConfig, run_cider
from tests.fakes.tiny_data import TinyDataset


def test_build_then_reuse_with_and_without_parity(tiny: TinyDataset, tmp_path: Path) -> None:
    config = CiderRunConfig(
        data_dir=tiny.data_dir, cache_dir=tmp_path, parity_pairs=20, show_progress=False
    )
    summary = asyncio.run(run_cider(config))
    assert summary["built"] is True
    assert summary["parity_ok"] is True
    assert summary["parity"]["pairs"] == 40
    again = asyncio.run(
        run_cider(CiderRunConfig(data_dir=tiny.data_dir, cache_dir=tmp_path, parity_pairs=0))
    )
    assert again["built"] is False
    assert "parity" not in again
    assert again["captions_sha256"] == summary["captions_sha256"]

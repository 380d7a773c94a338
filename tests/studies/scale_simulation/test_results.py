"""The build time and memory of a skipped HNSW, estimated from the largest built one."""

from __future__ import annotations

import math
from typing import Any

import pytest

from studies.scale_simulation.index_kinds import hnsw_bytes
from studies.scale_simulation.results import estimate_skipped_hnsw


def test_a_skipped_hnsw_is_estimated_from_the_largest_built() -> None:
    results: dict[str, Any] = {
        str(n): {"n": n, "kinds": {"HNSW32": {"family": "hnsw", "build": {"add_s": s}}}}
        for n, s in ((1000, 1.0), (10_000, 20.0))
    }
    results["100000"] = {"n": 100_000, "kinds": {"HNSW32": {"family": "hnsw", "skipped": "big"}}}
    estimate_skipped_hnsw(results)
    estimate = results["100000"]["kinds"]["HNSW32"]["estimate"]
    assert estimate["from_n"] == 10_000
    assert estimate["add_s"] == pytest.approx(20.0 * 10 * math.log(100_000) / math.log(10_000))
    assert estimate["memory_bytes"] == hnsw_bytes(100_000)
    assert "estimate" not in results["10000"]["kinds"]["HNSW32"]


def test_nothing_is_estimated_without_a_built_hnsw() -> None:
    skipped = {"HNSW32": {"family": "hnsw", "skipped": "too big"}}
    results: dict[str, Any] = {"5": {"n": 5, "kinds": skipped}}
    estimate_skipped_hnsw(results)
    assert "estimate" not in results["5"]["kinds"]["HNSW32"]

"""The compare run's settings: refusals, chunks, each variant's quality run, the report's
settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.runs.compare.config import CompareConfig


def _config(**settings: Any) -> CompareConfig:
    return CompareConfig(url="http://x", data_dir=Path("d"), **{"variants": ("a",), **settings})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"variants": ()}, "at least one variant"),
        ({"variants": ("a", "a")}, "repeat"),
        ({"tasks": ("latency",)}, "unknown quality task"),
        ({"concurrency_levels": (0,)}, "positive"),
        ({"rounds": 4, "latency_requests": 3}, "rounds"),
        ({"warmup_requests": -1}, "warmup_requests"),
        ({"k": 5}, "R@10"),
    ],
)
def test_refusals(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(**settings)


def test_chunks_quality_configs_and_settings() -> None:
    config = _config(variants=("a", "b"), latency_requests=10, rounds=3, limit_queries=5)
    assert config.chunk_sizes() == [4, 3, 3]
    quality = config.quality_config("b")
    assert (quality.variant, quality.limit_queries, quality.tasks) == ("b", 5, config.tasks)
    assert quality.concurrency_levels == (1, 8)  # no latency phase is asked of it
    assert list(config.settings()) == [
        "split",
        "dataset",
        "collection",
        "images_collection",
        "tasks",
        "k",
        "probe_k",
        "limit_queries",
        "replay_concurrency",
        "bulk_size",
        "score_batch",
        "bootstrap_samples",
        "seed",
        "concurrency_levels",
        "latency_requests",
        "warmup_requests",
        "latency_k",
        "rounds",
        "ready_timeout_s",
        "request_timeout_s",
        "html_queries",
    ]

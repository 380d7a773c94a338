"""A quality report with every section, from the recorded numbers of a full tiny run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parents[1] / "runs" / "quality" / "golden_numbers.json"


@pytest.fixture
def quality_report() -> dict[str, Any]:
    """A ``report.json`` object: the recorded tasks, curves and views of a run of every task,
    skipped tasks and one latency level."""
    recorded = json.loads(GOLDEN.read_text(encoding="utf-8"))["all_item"]
    return {
        "schema_version": 1,
        "dataset": "coco-karpathy",
        "split": "val",
        "variant": "toy",
        "towers": ["image", "text"],
        "bundle": "tiny",
        "bundle_version": "v1",
        "service_url": "http://fake",
        "created_at": "2026-01-01T00:00:00+00:00",
        "collection": {"name": "captions", "count": 60},
        "collections": recorded["collections"],
        "tasks": recorded["tasks"],
        "skipped": {"i2i": "the service has no 'images' collection"},
        "recall_curves": recorded["recall_curves"],
        "graded_curves": recorded["graded_curves"],
        "false_negatives": recorded["false_negatives"],
        "cider": {**recorded["cider"], "cache_file": "/c.npy", "built": True, "build_seconds": 1},
        "latency": {
            "c1": {
                "p50_ms": 2.0,
                "p95_ms": 3.0,
                "p99_ms": 4.0,
                "mean_ms": 2.1,
                "qps": 400.0,
                "errors": 0,
                "requests": 10,
                "concurrency": 1,
                "in_flight_mean": 0.93,
            }
        },
        "settings": {"image_queries": "item", "images_dir": None},
        "environment": {"cpu_count": 2, "platform": "Linux", "python": "3.11"},
    }

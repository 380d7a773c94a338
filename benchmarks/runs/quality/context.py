"""What the quality run's phases share (:class:`QualityContext`) and accumulate
(:class:`QualityResults`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.drivers.http_client import CrisscrossClient
from benchmarks.drivers.query_sides import ImageSides
from benchmarks.drivers.replay import ServedBy
from benchmarks.runs.quality.config import QualityRunConfig
from evaluation.data.corpus import CxcData
from evaluation.data.ground_truth import RetrievalTask
from evaluation.data.task_plan import ServiceView, TaskPlan


@dataclass
class QualityResults:
    """What the phases of one run accumulate for the report."""

    tasks: dict[str, Any] = field(default_factory=dict)
    curves: dict[str, list[float]] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)
    latencies_ms: dict[str, tuple[float, ...]] = field(default_factory=dict)
    checks: dict[str, int] = field(
        default_factory=lambda: {"exclude_violations": 0, "order_violations": 0}
    )
    durations_s: dict[str, float] = field(default_factory=dict)
    served_by: ServedBy = field(default_factory=ServedBy)
    top_ids: list[tuple[list[RetrievalTask], dict[str, tuple[str, ...]]]] = field(
        default_factory=list
    )
    top_scores: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    """Retrieval group (its first task's name) → query id → the scores of its ``top_ids``."""
    graded_curves: dict[str, dict[str, list[float | None]]] = field(default_factory=dict)
    false_negatives: dict[str, Any] = field(default_factory=dict)
    cider: dict[str, Any] | None = None
    cider_matrix: npt.NDArray[np.floating] | None = None
    """The split's CIDEr-D matrix ``[captions, images]`` while the query records need it (the
    graded phase sets it, :mod:`~benchmarks.runs.quality.query_records` drops it)."""
    queries: dict[str, Any] | None = None
    """The bounded per-query sample of the HTML report
    (:mod:`~benchmarks.runs.quality.query_records`); not part of ``report.json``."""


@dataclass(frozen=True)
class QualityContext:
    """Everything the phases share: the open client, the settings, the data, the service.

    Attributes:
        client: the open API client.
        config: the run's settings.
        data: the split's data.
        view: what the service serves (collections, towers, image query mode).
        images: how an image file name becomes a request side.
        plan: the tasks to run and those skipped.
        served: served collection name → item count.
        results: what the phases accumulate.
    """

    client: CrisscrossClient
    config: QualityRunConfig
    data: CxcData
    view: ServiceView
    images: ImageSides
    plan: TaskPlan
    served: dict[str, int]
    results: QualityResults

    def collection_name(self, logical: str) -> str:
        """The service's name of the logical collection ``captions`` / ``images``."""
        return self.config.collection if logical == "captions" else self.config.images_collection

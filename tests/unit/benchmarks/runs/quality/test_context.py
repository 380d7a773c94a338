"""What the quality phases share: the service's names of the logical collections."""

from __future__ import annotations

from pathlib import Path

from benchmarks.drivers.http_client import CrisscrossClient
from benchmarks.drivers.query_sides import ImageSides
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.context import QualityContext, QualityResults
from evaluation.data.corpus import CxcData
from evaluation.data.task_plan import ServiceView, TaskPlan


def test_collection_names_and_fresh_results() -> None:
    config = QualityRunConfig(
        url="http://x", data_dir=Path("d"), collection="caps", images_collection="pics"
    )
    context = QualityContext(
        client=CrisscrossClient("http://x"),
        config=config,
        data=CxcData("coco-karpathy", "val", [], []),
        view=ServiceView(collections={}, towers=None),
        images=ImageSides("pics", (), None, can_upload=False),
        plan=TaskPlan(run=()),
        served={},
        results=QualityResults(),
    )
    assert context.collection_name("captions") == "caps"
    assert context.collection_name("images") == "pics"
    assert context.results.checks == {"exclude_violations": 0, "order_violations": 0}

"""The pair phases: correlations and BISON with image uploads when the service serves no
images collection."""

from __future__ import annotations

from evaluation.data.corpus import load_cxc_data
from evaluation.in_memory import evaluate_with_scorer
from tests.fakes.fake_service import dual_tower_service
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.quality.test_run import IMAGE_SAMPLES, images_config, run_report
from tests.unit.evaluation.test_in_memory import toy_scorer


def test_pair_tasks_upload_when_the_images_collection_is_missing(tiny: TinyDataset) -> None:
    service = dual_tower_service(tiny, images=None, max_images_per_request=4)
    config = images_config(tiny, tasks=("sis", "sits", "bison", "i2t"), max_uploads_per_request=4)
    report = run_report(config, service)
    data = load_cxc_data(tiny.data_dir, tiny.split)
    oracle = evaluate_with_scorer(
        data, toy_scorer(tiny), tasks=("sis", "sits"), bootstrap_samples=IMAGE_SAMPLES
    )
    assert report["tasks"]["sis"] == oracle.tasks["sis"]
    assert report["tasks"]["sits"] == oracle.tasks["sits"]
    assert report["skipped"] == {"i2t": "the service has no 'images' collection"}
    assert report["tasks"]["bison"]["uploads"] == 2 * 13
    assert report["collections"] == {"captions": 60}

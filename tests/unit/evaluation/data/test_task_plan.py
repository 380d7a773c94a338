"""Which tasks run against which service, and why the others are skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.data.corpus import CxcData, load_cxc_data
from evaluation.data.task_plan import ALL_TASKS, ServiceView, plan_tasks
from formats.cxc import RatingKind
from tests.fakes.tiny_data import TinyDataset

BOTH = frozenset({"text", "image"})


def _data(tiny: TinyDataset, bison_file: Path | None = None) -> CxcData:
    return load_cxc_data(tiny.data_dir, tiny.split, bison_file=bison_file)


def _counts(tiny: TinyDataset, captions: bool = True, images: bool = True) -> dict[str, int]:
    counts = {}
    if captions:
        counts["captions"] = len(tiny.captions)
    if images:
        counts["images"] = len(tiny.filenames)
    return counts


def test_a_dual_tower_service_runs_everything(tiny: TinyDataset) -> None:
    plan = plan_tasks(ALL_TASKS, _data(tiny), ServiceView(_counts(tiny), BOTH))
    assert plan.run == ALL_TASKS
    assert plan.skipped == {}


def test_text_only_service_skips_image_tasks_with_reasons(tiny: TinyDataset) -> None:
    view = ServiceView(_counts(tiny, images=False), frozenset({"text"}), images_dir=tiny.images_dir)
    plan = plan_tasks(ALL_TASKS, _data(tiny), view)
    assert plan.run == ("t2t", "t2t_cocaptions", "sts", "latency")
    no_images = "the service has no 'images' collection"
    for task in ("i2t", "i2t_original", "t2i", "t2i_original", "i2i"):
        assert plan.skipped[task] == no_images
    for task in ("sis", "sits", "bison"):
        assert plan.skipped[task].startswith(no_images)
        assert "cannot be uploaded" in plan.skipped[task]


def test_image_only_service(tiny: TinyDataset) -> None:
    view = ServiceView(_counts(tiny, captions=False), frozenset({"image"}))
    plan = plan_tasks(ALL_TASKS, _data(tiny), view)
    assert plan.run == ("i2i", "sis")
    assert plan.skipped["t2t"] == "the service has no 'captions' collection"
    assert plan.skipped["t2i"] == "the variant has no text tower"
    assert plan.skipped["sits"] == "the variant has no text tower"
    assert plan.skipped["bison"] == "the variant has no text tower"


def test_uploads_replace_a_missing_images_collection_for_pair_tasks(tiny: TinyDataset) -> None:
    view = ServiceView(_counts(tiny, images=False), BOTH, images_dir=tiny.images_dir)
    plan = plan_tasks(ALL_TASKS, _data(tiny), view)
    assert {"sis", "sits", "bison"} <= set(plan.run)
    assert "i2t" in plan.skipped  # item queries need the collection
    upload = ServiceView(
        _counts(tiny, images=False), BOTH, image_queries="upload", images_dir=tiny.images_dir
    )
    plan = plan_tasks(ALL_TASKS, _data(tiny), upload)
    assert {"i2t", "i2t_original"} <= set(plan.run)
    assert plan.skipped["i2i"] == "the service has no 'images' collection"


def test_upload_queries_need_a_folder_a_tower_and_every_file(tiny: TinyDataset) -> None:
    data = _data(tiny)
    no_dir = ServiceView(_counts(tiny), BOTH, image_queries="upload")
    assert plan_tasks(["i2t"], data, no_dir).skipped == {"i2t": "image uploads need --images-dir"}
    text_only = ServiceView(
        _counts(tiny), frozenset({"text"}), image_queries="upload", images_dir=tiny.images_dir
    )
    assert plan_tasks(["i2i"], data, text_only).skipped == {"i2i": "the variant has no image tower"}
    (tiny.images_dir / tiny.filenames[0]).unlink()
    complete = ServiceView(_counts(tiny), BOTH, image_queries="upload", images_dir=tiny.images_dir)
    reason = plan_tasks(["i2t"], data, complete).skipped["i2t"]
    assert reason.startswith("1 of 12 image files are missing")


def test_missing_files_and_unknown_towers(tiny: TinyDataset, tmp_path: Path) -> None:
    (tiny.data_dir / "cxc" / "sis_val.csv").unlink()
    (tiny.data_dir / "bison" / "bison_val.csv").unlink()
    data = _data(tiny)
    assert RatingKind.SIS not in data.ratings
    assert data.missing["sis"] == tiny.data_dir / "cxc" / "sis_val.csv"
    plan = plan_tasks(ALL_TASKS, data, ServiceView(_counts(tiny), towers=None))
    assert plan.skipped["i2i"].startswith("no SIS file")
    assert plan.skipped["sis"].startswith("no SIS file")
    assert plan.skipped["bison"].startswith("no BISON file")
    assert set(plan.skipped) == {"i2i", "sis", "bison"}
    with pytest.raises(FileNotFoundError):
        _data(tiny, bison_file=tmp_path / "nope.csv")


def test_only_requested_tasks_are_planned(tiny: TinyDataset) -> None:
    view = ServiceView(_counts(tiny, images=False), frozenset({"text"}))
    plan = plan_tasks(["sts", "i2t"], _data(tiny), view)
    assert plan.run == ("sts",)
    assert set(plan.skipped) == {"i2t"}

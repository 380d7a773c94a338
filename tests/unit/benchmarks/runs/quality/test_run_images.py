"""All four directions, SIS/SITS and BISON against the fake service with an images collection."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.data.corpus import load_cxc_data
from benchmarks.data.task_groups import build_retrieval_task
from benchmarks.data.task_plan import QUALITY_TASKS, RETRIEVAL_TASKS
from benchmarks.report.writers import write_quality_outputs
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.in_memory import evaluate_with_scorer
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.service_facts import variant_collections, variant_towers
from benchmarks.runs.setup_error import BenchmarkSetupError
from tests.fakes.fake_service import FakeService, dual_tower_service, toy_similarity
from tests.fakes.tiny_data import EXTRA_IMAGE_ID, TinyDataset
from tests.unit.benchmarks.runs.quality.test_in_memory import toy_scorer

SAMPLES = 30
BOTH = ("text", "image")


def _service(tiny: TinyDataset, **overrides: Any) -> FakeService:
    return dual_tower_service(tiny, **overrides)


def _config(tiny: TinyDataset, **overrides: Any) -> QualityRunConfig:
    settings: dict[str, Any] = {
        "url": "http://fake",
        "data_dir": tiny.data_dir,
        "split": tiny.split,
        "k": 20,
        "bootstrap_samples": SAMPLES,
        "concurrency_levels": (2,),
        "latency_requests": 6,
        "warmup_requests": 2,
        "show_progress": False,
        "ready_timeout_s": 5.0,
        "replay_concurrency": 3,
    }
    settings.update(overrides)
    return QualityRunConfig(**settings)


def _run(config: QualityRunConfig, service: FakeService) -> dict[str, Any]:
    return asyncio.run(run_quality(config, transport=service.transport())).report


def _searches(service: FakeService) -> list[dict[str, Any]]:
    return [body for _, path, body in service.requests if path == "/v1/search"]


def test_all_directions_and_bison_match_the_in_memory_scorer(
    tiny: TinyDataset, tmp_path: Path
) -> None:
    service = _service(tiny)
    run = asyncio.run(run_quality(_config(tiny), transport=service.transport()))
    report = run.report
    data = load_cxc_data(tiny.data_dir, tiny.split)
    oracle = evaluate_with_scorer(data, toy_scorer(tiny), k=20, bootstrap_samples=SAMPLES)

    assert set(report) == {
        "schema_version",
        "dataset",
        "split",
        "variant",
        "towers",
        "bundle",
        "bundle_version",
        "bundle_versions_seen",
        "service_url",
        "created_at",
        "collection",
        "collections",
        "tasks",
        "skipped",
        "recall_curves",
        "latency",
        "settings",
        "checks",
        "durations_s",
        "service",
        "environment",
    }
    assert report["dataset"] == "coco-karpathy"
    assert report["towers"] == ["image", "text"]
    assert report["skipped"] == {}
    assert report["collections"] == {"captions": 60, "images": 12}
    assert report["checks"] == {"exclude_violations": 0, "order_violations": 0}
    assert list(report["tasks"]) == list(QUALITY_TASKS)
    for name in (*RETRIEVAL_TASKS, "sts", "sis", "sits"):
        assert report["tasks"][name] == oracle.tasks[name], name
    for name in RETRIEVAL_TASKS:
        assert report["recall_curves"][name] == oracle.recall_curves[name]
    assert report["tasks"]["i2t"]["k"] == 20
    assert report["tasks"]["t2i"]["k"] == 12  # clipped to the images collection

    # The stable keys of DESIGN §7.
    assert isinstance(report["tasks"]["i2t"]["R@1"], float)
    assert report["tasks"]["i2t"]["queries"] == 11
    assert "median_rank" in report["tasks"]["i2t"]
    assert isinstance(report["tasks"]["i2t_original"]["R@1"], float)
    assert isinstance(report["tasks"]["sis"]["spearman_mean"], float)
    assert isinstance(report["tasks"]["sits"]["spearman_std"], float)
    assert set(report["latency"]) == {"c2"}
    for name in RETRIEVAL_TASKS:
        assert set(report["tasks"][name]) == {
            "R@1",
            "R@5",
            "R@10",
            "median_rank",
            "median_rank_censored",
            "queries",
            "k",
        }
    assert set(report["tasks"]["bison"]) == {
        "accuracy",
        "rows",
        "skipped",
        "ties",
        "skipped_reasons",
        "uploads",
    }

    # BISON: the row whose other image is only in the images folder is scored by upload; the row
    # whose image exists nowhere is skipped. The rest equals the in-memory scorer's result.
    bison = report["tasks"]["bison"]
    assert bison["rows"] == 13
    assert bison["skipped"] == 1
    assert bison["skipped_reasons"] == {"image_unavailable": 1}
    assert bison["uploads"] == 1
    in_split = oracle.tasks["bison"]
    extra_row = next(
        row for row in tiny.bison if EXTRA_IMAGE_ID in (row.image_id_0, row.image_id_1)
    )
    true_name = f"COCO_val2014_{extra_row.true_image_id:012d}.jpg"
    extra_name = f"COCO_val2014_{EXTRA_IMAGE_ID:012d}.jpg"
    true = toy_similarity(extra_row.caption, tiny.descriptions[true_name])
    other = toy_similarity(extra_row.caption, tiny.descriptions[extra_name])
    extra_points = 1.0 if true > other else 0.5 if true == other else 0.0
    expected = (in_split["accuracy"] * in_split["rows"] + extra_points) / 13
    assert bison["accuracy"] == pytest.approx(expected)

    # What was sent: image queries by item reference, text queries for captions, i2i excluded.
    searches = _searches(service)
    by_target: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for body in searches:
        kind = next(iter(body["query"]))
        by_target.setdefault((kind, body["collection"]), []).append(body)
    image_queries = by_target[("item", "captions")]
    assert len(image_queries) == 12  # i2t ∪ i2t_original: each image once
    assert image_queries[0]["query"] == {"item": {"collection": "images", "id": tiny.filenames[0]}}
    i2i = by_target[("item", "images")]
    assert len(i2i) == len(build_retrieval_task(data, "i2i").queries)
    assert all(body["exclude"] == [body["query"]["item"]["id"]] for body in i2i)
    assert len([b for b in by_target[("text", "images")] if b["k"] == 12]) == 60  # t2i ∪ original
    scored = [body for _, path, body in service.requests if path == "/v1/score"]
    sides = [pair[side] for body in scored for pair in body["pairs"] for side in ("left", "right")]
    assert sum("image" in side for side in sides) == 1  # only the BISON extra image

    written = write_quality_outputs(run, tmp_path / "out")
    on_disk = json.loads(written["json"].read_text(encoding="utf-8"))
    assert on_disk["tasks"]["bison"]["accuracy"] == bison["accuracy"]
    markdown = written["markdown"].read_text(encoding="utf-8")
    for row in ("| i2t |", "| t2i_original |", "| i2i |", "| sis |", "| sits |"):
        assert row in markdown
    assert "## BISON" in markdown
    for kind in ("recall_plot", "original_plot", "latency_plot"):
        assert written[kind].read_bytes().startswith(b"\x89PNG")
    assert written["original_plot"].name == "cxc_vs_original.png"


def test_upload_queries_exercise_the_pixel_path(tiny: TinyDataset) -> None:
    items = _run(_config(tiny, tasks=("i2t", "i2t_original", "i2i")), _service(tiny))
    service = _service(tiny)
    uploads = _run(
        _config(tiny, tasks=("i2t", "i2t_original", "i2i"), image_queries="upload"), service
    )
    for name in ("i2t", "i2t_original", "i2i"):
        assert uploads["tasks"][name] == items["tasks"][name]
    assert uploads["settings"]["image_queries"] == "upload"
    assert uploads["settings"]["images_dir"] == str(tiny.images_dir)  # the default folder
    searches = _searches(service)
    assert all("image" in body["query"] for body in searches)
    first = searches[0]
    assert base64.b64decode(first["query"]["image"]) in tiny.image_bytes.values()


def test_pair_tasks_upload_when_the_images_collection_is_missing(tiny: TinyDataset) -> None:
    service = _service(tiny, images=None, max_images_per_request=4)
    config = _config(tiny, tasks=("sis", "sits", "bison", "i2t"), max_uploads_per_request=4)
    report = _run(config, service)
    data = load_cxc_data(tiny.data_dir, tiny.split)
    oracle = evaluate_with_scorer(
        data, toy_scorer(tiny), tasks=("sis", "sits"), bootstrap_samples=SAMPLES
    )
    assert report["tasks"]["sis"] == oracle.tasks["sis"]
    assert report["tasks"]["sits"] == oracle.tasks["sits"]
    assert report["skipped"] == {"i2t": "the service has no 'images' collection"}
    assert report["tasks"]["bison"]["uploads"] == 2 * 13
    assert report["collections"] == {"captions": 60}


def test_text_only_service_records_skipped_tasks(tiny: TinyDataset, tmp_path: Path) -> None:
    service = FakeService(tiny.captions)  # towers ["text"], no images collection
    run = asyncio.run(run_quality(_config(tiny), transport=service.transport()))
    report = run.report
    assert set(report["tasks"]) == {"t2t", "t2t_cocaptions", "sts"}
    assert set(report["skipped"]) == {
        "i2t",
        "i2t_original",
        "t2i",
        "t2i_original",
        "i2i",
        "sis",
        "sits",
        "bison",
    }
    assert report["towers"] == ["text"]
    markdown = write_quality_outputs(run, tmp_path / "o")["markdown"].read_text(encoding="utf-8")
    assert "## Skipped tasks" in markdown
    assert "| bison |" in markdown
    assert not (tmp_path / "o" / "cxc_vs_original.png").exists()


def test_image_only_service_and_nothing_to_run(tiny: TinyDataset) -> None:
    service = FakeService([], images=_service(tiny).images, towers=("image",))
    report = _run(_config(tiny, tasks=("i2i", "sis", "t2t", "bison")), service)
    assert set(report["tasks"]) == {"i2i", "sis"}
    assert report["collection"] == {"name": "images", "count": 12}
    assert set(report["skipped"]) == {"t2t", "bison"}
    with pytest.raises(BenchmarkSetupError, match="none of the tasks"):
        _run(_config(tiny, tasks=("t2t", "latency")), FakeService([], images=service.images))


def test_images_collection_size_mismatch_is_refused(tiny: TinyDataset) -> None:
    service = _service(tiny, images=_service(tiny).images[:-1])  # type: ignore[index]
    with pytest.raises(BenchmarkSetupError, match="'images' collection holds 11 items"):
        _run(_config(tiny), service)


def test_variant_towers() -> None:
    variants: list[dict[str, Any]] = [
        {"name": "a", "towers": ["text"]},
        {"name": "b", "towers": ["text", "image"], "default": True},
    ]
    assert variant_towers(variants, None) == frozenset({"text", "image"})
    assert variant_towers(variants, "a") == frozenset({"text"})
    assert variant_towers(variants, "zzz") is None
    assert variant_towers([{"name": "a"}], None) is None
    assert variant_towers([{"name": "a", "towers": ["image"]}], None) == frozenset({"image"})
    assert variant_towers(None, None) is None


def test_variant_collections_picks_the_runs_variant() -> None:
    collections: list[dict[str, object]] = [
        {"name": "captions", "count": 10, "variant": "text-only", "bundle": "coco"},
        {"name": "captions", "count": 20, "variant": "dual", "bundle": "scenes"},
        {"name": "images", "count": 4, "variant": "dual", "bundle": "scenes"},
    ]
    variants: list[dict[str, object]] = [
        {"name": "text-only", "default": True},
        {"name": "dual", "default": False},
    ]
    assert [entry["bundle"] for entry in variant_collections(collections, variants, "dual")] == [
        "scenes",
        "scenes",
    ]
    assert [entry["count"] for entry in variant_collections(collections, variants, None)] == [10]
    # a variant no collection names, or no variants route at all: every entry is kept
    assert len(variant_collections(collections, variants, "zzz")) == 3
    assert len(variant_collections(collections, None, None)) == 3

"""The whole quality run against an in-process fake service (httpx.MockTransport): text only,
and all four directions, SIS/SITS and BISON with an images collection; the exact numbers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.report.writers import write_quality_outputs
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.setup_error import BenchmarkSetupError
from evaluation.data.corpus import load_cxc_data
from evaluation.data.ground_truth import t2t_cocaptions_task, t2t_task
from evaluation.data.task_groups import build_retrieval_task
from evaluation.data.task_plan import QUALITY_TASKS, RETRIEVAL_TASKS
from evaluation.in_memory import evaluate_with_scorer
from evaluation.metrics.correlation import bootstrap_spearman
from evaluation.metrics.retrieval import evaluate_rankings, rank_by_scores
from tests.fakes.fake_service import FakeService, dual_tower_service, toy_similarity
from tests.fakes.tiny_data import EXTRA_IMAGE_ID, TinyDataset
from tests.unit.evaluation.test_in_memory import toy_scorer

SAMPLES = 60


IMAGE_SAMPLES = 30
BOTH = ("text", "image")


def images_config(tiny: TinyDataset, **overrides: Any) -> QualityRunConfig:
    """A run of every task over both towers: k = 20, small latency and bootstrap."""
    settings: dict[str, Any] = {
        "url": "http://fake",
        "data_dir": tiny.data_dir,
        "split": tiny.split,
        "k": 20,
        "bootstrap_samples": IMAGE_SAMPLES,
        "concurrency_levels": (2,),
        "latency_requests": 6,
        "warmup_requests": 2,
        "show_progress": False,
        "ready_timeout_s": 5.0,
        "replay_concurrency": 3,
    }
    settings.update(overrides)
    return QualityRunConfig(**settings)


def run_report(config: QualityRunConfig, service: FakeService) -> dict[str, Any]:
    """The report of a run against ``service``."""
    return dict(asyncio.run(run_quality(config, transport=service.transport())).report)


def searches_of(service: FakeService) -> list[dict[str, Any]]:
    """The searches of the ``/v1/search/bulk`` requests ``service`` received (the replays)."""
    bulks = [body for _, path, body in service.requests if path == "/v1/search/bulk"]
    return [search for body in bulks for search in body["searches"]]


def text_config(tiny: TinyDataset, **overrides: Any) -> QualityRunConfig:
    """A text-only run: k = 1000, two latency levels."""
    settings: dict[str, Any] = {
        "k": 1000,
        "bootstrap_samples": SAMPLES,
        "concurrency_levels": (1, 3),
        "latency_requests": 15,
        "warmup_requests": 4,
        "replay_concurrency": 8,
    }
    return images_config(tiny, **{**settings, **overrides})


def expected_retrieval(tiny: TinyDataset, k: int) -> dict[str, dict[str, object]]:
    """The oracle: full toy-similarity matrix, ranked in memory with the tie rule."""
    ids = [caption.key for caption in tiny.captions]
    texts = {caption.key: caption.text for caption in tiny.captions}
    expected = {}
    for task in (t2t_task(tiny.sts, tiny.captions), t2t_cocaptions_task(tiny.sts, tiny.captions)):
        scores = np.array(
            [[toy_similarity(texts[query], texts[item]) for item in ids] for query in task.queries]
        )
        ranked = rank_by_scores(scores, ids, k, exclude=[{query} for query in task.queries])
        rankings = dict(zip(task.queries, ranked, strict=True))
        expected[task.name] = evaluate_rankings(rankings, task.positives, k).as_report()
    return expected


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_report_matches_in_memory_oracle(tiny: TinyDataset, tmp_path: Path) -> None:
    service = FakeService(tiny.captions, not_ready_polls=2, overloaded_searches=2)
    count = len(tiny.captions)
    # probe_k at k: one search per query (the probe and its deeper pages are tested apart)
    config = text_config(tiny, probe_k=count)
    run = asyncio.run(run_quality(config, transport=service.transport()))
    report = run.report

    assert report["dataset"] == "coco-karpathy"
    assert report["split"] == "val"
    assert report["variant"] == "toy-jaccard"
    assert report["bundle_version"] == "20260101T000000Z"
    assert report["bundle_versions_seen"] == ["20260101T000000Z"]
    assert report["service_url"] == "http://fake"
    assert report["collection"] == {"name": "captions", "count": count}
    assert report["checks"] == {"exclude_violations": 0, "order_violations": 0}
    assert {"cpu_count", "platform", "python"} <= set(report["environment"])
    assert report["created_at"].endswith("+00:00")

    # Retrieval: k is clipped to the collection; values equal the oracle's exactly.
    expected = expected_retrieval(tiny, k=count)
    assert set(report["tasks"]) == {"t2t", "t2t_cocaptions", "sts"}
    for name in ("t2t", "t2t_cocaptions"):
        assert report["tasks"][name] == expected[name]
        assert report["tasks"][name]["k"] == count
        assert len(report["recall_curves"][name]) == count
    assert report["tasks"]["t2t_cocaptions"]["R@1"] >= report["tasks"]["t2t"]["R@1"]

    # Every search excluded its query and asked for the clipped k.
    bulks = [body for _, path, body in service.requests if path == "/v1/search/bulk"]
    assert len(bulks) == 3  # one bulk (the queries are fewer than a bulk's size), refused twice
    assert bulks[0] == bulks[1] == bulks[2]  # two overloaded answers were retried
    replayed = bulks[0]["searches"]
    assert len(replayed) == len(t2t_task(tiny.sts, tiny.captions).queries)
    assert all(body["k"] == count for body in replayed)
    texts = {caption.key: caption.text for caption in tiny.captions}
    for body in replayed:
        assert body["collection"] == "captions"
        (query,) = body["exclude"]
        assert body["query"] == {"text": texts[query]}

    # STS: scores from /v1/score, item references on both sides, bootstrap with seed 0.
    scored = [body for method, path, body in service.requests if path == "/v1/score"]
    assert sum(len(body["pairs"]) for body in scored) == len(tiny.sts)
    assert scored[0]["pairs"][0]["left"] == {
        "item": {"collection": "captions", "id": tiny.sts[0].item1}
    }
    model = [toy_similarity(texts[r.item1], texts[r.item2]) for r in tiny.sts]
    oracle = bootstrap_spearman(
        [r.item1 for r in tiny.sts], model, [r.agg_score for r in tiny.sts], SAMPLES, seed=0
    )
    assert report["tasks"]["sts"] == oracle.as_report()
    assert report["tasks"]["sts"]["samples"] == SAMPLES
    assert report["tasks"]["sts"]["query_items"] == count

    # Latency: both levels, k = 10, no retries counted as successes.
    assert set(report["latency"]) == {"c1", "c3"}
    for name, level in (("c1", 1), ("c3", 3)):
        entry = report["latency"][name]
        assert entry["concurrency"] == level
        assert entry["requests"] == 15
        assert entry["errors"] == 0
        assert entry["p50_ms"] <= entry["p95_ms"] <= entry["p99_ms"]
        assert entry["qps"] > 0
    latency_searches = [body for _, path, body in service.requests if path == "/v1/search"]
    assert len(latency_searches) == 2 * (15 + 4)  # the latency phase alone sends single searches
    assert {body["k"] for body in latency_searches} == {10}

    written = write_quality_outputs(run, tmp_path / "out")
    on_disk = json.loads(written["json"].read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(report))
    markdown = written["markdown"].read_text(encoding="utf-8")
    assert "| t2t |" in markdown
    assert "| sts |" in markdown
    assert "| c3 |" in markdown
    for kind in ("recall_plot", "latency_plot"):
        assert written[kind].read_bytes().startswith(b"\x89PNG")


def test_limit_queries_and_task_selection(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions, has_variants_route=False)
    config = text_config(tiny, tasks=("t2t",), limit_queries=5, k=10)
    report = asyncio.run(run_quality(config, transport=service.transport())).report
    assert set(report["tasks"]) == {"t2t"}
    assert report["tasks"]["t2t"]["queries"] == 5
    assert report["tasks"]["t2t"]["k"] == 10
    assert report["latency"] == {}
    assert report["service"]["variants"] is None
    assert len(searches_of(service)) == 5


def test_collection_size_mismatch_is_refused(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions[:-1])
    with pytest.raises(BenchmarkSetupError, match="holds 59 items"):
        asyncio.run(run_quality(text_config(tiny), transport=service.transport()))


GOLDEN = Path(__file__).with_name("golden_numbers.json")
"""Every deterministic number of two full runs (all tasks; image queries as items with the
CIDEr-D metrics, and as uploads), as the harness reported them before its regrouping."""


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("all_item", {"recall_eq1": True, "cider": "auto"}),
        ("all_upload", {"image_queries": "upload", "probe_k": 3}),
    ],
)
def test_numbers_are_exactly_the_recorded_ones(
    tiny: TinyDataset, tmp_path: Path, name: str, overrides: dict[str, Any]
) -> None:
    if overrides.get("cider") == "auto":
        overrides = {**overrides, "cider_cache_dir": tmp_path / "cache"}
    config = images_config(tiny, **overrides)
    report = asyncio.run(run_quality(config, transport=dual_tower_service(tiny).transport()))
    found = json.loads(json.dumps(report.report))
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    if "cider" in found:
        for key in ("cache_file", "build_seconds", "built"):
            found["cider"].pop(key)
    assert {key: found[key] for key in expected} == expected
    assert set(found["latency"]) == {"c2"}


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_all_directions_and_bison_match_the_in_memory_scorer(
    tiny: TinyDataset, tmp_path: Path
) -> None:
    service = dual_tower_service(tiny)
    run = asyncio.run(run_quality(images_config(tiny), transport=service.transport()))
    report = run.report
    data = load_cxc_data(tiny.data_dir, tiny.split)
    oracle = evaluate_with_scorer(data, toy_scorer(tiny), k=20, bootstrap_samples=IMAGE_SAMPLES)

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
    searches = searches_of(service)
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


def test_text_only_service_records_skipped_tasks(tiny: TinyDataset, tmp_path: Path) -> None:
    service = FakeService(tiny.captions)  # towers ["text"], no images collection
    run = asyncio.run(run_quality(images_config(tiny), transport=service.transport()))
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
    service = FakeService([], images=dual_tower_service(tiny).images, towers=("image",))
    report = run_report(images_config(tiny, tasks=("i2i", "sis", "t2t", "bison")), service)
    assert set(report["tasks"]) == {"i2i", "sis"}
    assert report["collection"] == {"name": "images", "count": 12}
    assert set(report["skipped"]) == {"t2t", "bison"}
    with pytest.raises(BenchmarkSetupError, match="none of the tasks"):
        run_report(
            images_config(tiny, tasks=("t2t", "latency")),
            FakeService([], images=service.images),
        )


def test_images_collection_size_mismatch_is_refused(tiny: TinyDataset) -> None:
    images = dual_tower_service(tiny).images
    assert images is not None
    service = dual_tower_service(tiny, images=images[:-1])
    with pytest.raises(BenchmarkSetupError, match="'images' collection holds 11 items"):
        run_report(images_config(tiny), service)

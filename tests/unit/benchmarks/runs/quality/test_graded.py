"""R (eq. 1), NCS, SR and the false-negative view of a live run against the fake service,
checked against oracles from the definitions (full toy ranking + the CIDEr-D matrix)."""

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
from evaluation.data.cider_cache import load_or_build_cider
from evaluation.data.corpus import load_cxc_data
from evaluation.data.task_groups import build_retrieval_task
from evaluation.metrics.retrieval import rank_by_scores
from tests.fakes.fake_service import FakeService, toy_similarity
from tests.fakes.tiny_data import TinyDataset
from tests.unit.evaluation.metrics.test_semantic import oracle_metrics, oracle_recall_eq1

TASKS = ("t2t", "i2t", "i2t_original", "t2i", "t2i_original")


def _service(tiny: TinyDataset) -> FakeService:
    return FakeService(
        tiny.captions,
        images=[(name, tiny.descriptions[name]) for name in tiny.filenames],
        towers=("text", "image"),
    )


def _config(tiny: TinyDataset, cache: Path, **overrides: Any) -> QualityRunConfig:
    settings: dict[str, Any] = {
        "url": "http://fake",
        "data_dir": tiny.data_dir,
        "split": tiny.split,
        "tasks": TASKS,
        "k": 20,
        "show_progress": False,
        "ready_timeout_s": 5.0,
        "recall_eq1": True,
        "cider": "auto",
        "cider_cache_dir": cache,
    }
    settings.update(overrides)
    return QualityRunConfig(**settings)


def _rankings(tiny: TinyDataset, name: str, queries: tuple[str, ...]) -> list[list[str]]:
    """The fake service's full ranking of each query (toy similarity, tie rule)."""
    texts = {caption.key: caption.text for caption in tiny.captions}
    if name.startswith("i2t"):
        targets = [caption.key for caption in tiny.captions]
        query_text, target_text = tiny.descriptions, texts
    else:
        targets = tiny.filenames
        query_text, target_text = texts, tiny.descriptions
    scores = np.array(
        [[toy_similarity(query_text[q], target_text[t]) for t in targets] for q in queries]
    )
    return rank_by_scores(scores, targets, len(targets))


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_graded_metrics_match_the_oracles(tiny: TinyDataset, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run = asyncio.run(run_quality(_config(tiny, cache), transport=_service(tiny).transport()))
    report = run.report
    data = load_cxc_data(tiny.data_dir, tiny.split)
    scores = np.asarray(load_or_build_cider(tiny.data_dir, tiny.split, cache).scores, np.float64)
    assert report["cider"]["used"] is True
    assert report["cider"]["built"] is True
    caption_row = {caption.key: caption.row for caption in data.captions}
    image_row = {image.filename: image.row for image in data.images}
    for name in TASKS:
        task = build_retrieval_task(data, name)
        entry = report["tasks"][name]
        if name == "t2t":
            texts = {caption.key: caption.text for caption in tiny.captions}
            keys = [caption.key for caption in tiny.captions]
            matrix = np.array(
                [[toy_similarity(texts[q], texts[t]) for t in keys] for q in task.queries]
            )
            ranked = rank_by_scores(matrix, keys, 20, exclude=[{q} for q in task.queries])
        else:
            ranked = _rankings(tiny, name, task.queries)
        positives = [set(task.positives[query]) for query in task.queries]
        for cut in (1, 5, 10):
            expected = oracle_recall_eq1(ranked, positives, cut)
            assert entry[f"R_eq1@{cut}"] == pytest.approx(expected), (name, cut)
        if name == "t2t":
            assert "NCS@1" not in entry
            continue
        if name.startswith("i2t"):
            rows = [image_row[q] for q in task.queries]
            relevance = scores[:, rows].T
            targets = [[caption_row[t] for t in r] for r in ranked]
            truths = [{caption_row[key] for key in data.images[row].captions} for row in rows]
            m = 5
        else:
            rows = [caption_row[q] for q in task.queries]
            relevance = scores[rows, :]
            targets = [[image_row[t] for t in r] for r in ranked]
            truths = [{image_row[data.captions[row].filename]} for row in rows]
            m = 1
        assert entry["SR_m"] == m
        for cut in (1, 5, 10):
            ncs, sr = oracle_metrics(relevance, targets, truths, m, False, cut)
            ncs_strict, sr_strict = oracle_metrics(relevance, targets, truths, m, True, cut)
            assert entry[f"NCS@{cut}"] == pytest.approx(ncs), (name, cut)
            assert entry[f"SR@{cut}"] == pytest.approx(sr), (name, cut)
            assert entry[f"NCS_nonGT@{cut}"] == pytest.approx(ncs_strict), (name, cut)
            assert entry[f"SR_nonGT@{cut}"] == pytest.approx(sr_strict), (name, cut)
        assert report["graded_curves"][name]["NCS"][4] == entry["NCS@5"]
        if name.endswith("_original"):
            view = report["false_negatives"][name[:3]]
            assert view["queries"] == len(task.queries)
            wrong = sum(
                t not in truth for r, truth in zip(targets, truths, strict=True) for t in r[:10]
            )
            assert view["wrong@10"] == pytest.approx(wrong / (10 * len(task.queries)))
            for example in view["examples"]:
                assert example["coco_label"] == "wrong"
    # the examples' CxC scores are the SITS ratings of the pair
    sits = {(r.item1, r.item2): r.agg_score for r in tiny.sits}
    for example in report["false_negatives"]["t2i"]["examples"]:
        assert example["cxc_score"] == sits.get((example["query"], example["retrieved"]))

    written = write_quality_outputs(run, tmp_path / "out")
    assert written["graded_plot"].is_file()
    assert written["false_negatives_plot"].is_file()
    markdown = written["markdown"].read_text(encoding="utf-8")
    assert "R (eq. 1" in markdown
    assert "## CIDEr-D graded metrics" in markdown
    assert "## False negatives" in markdown
    saved = json.loads(written["json"].read_text(encoding="utf-8"))
    assert saved["false_negatives"]["i2t"]["cider_m"] == 5

    # a second run reads the cache
    again = asyncio.run(run_quality(_config(tiny, cache), transport=_service(tiny).transport()))
    assert again.report["cider"]["built"] is False
    assert again.report["tasks"] == report["tasks"]


def test_off_adds_nothing_and_text_only_runs_record_why(tiny: TinyDataset, tmp_path: Path) -> None:
    off = _config(tiny, tmp_path / "c", cider="off", recall_eq1=False)
    report = asyncio.run(run_quality(off, transport=_service(tiny).transport())).report
    assert not {"cider", "false_negatives", "graded_curves"} & set(report)
    assert not (tmp_path / "c").exists()
    text_only = _config(tiny, tmp_path / "c", tasks=("t2t",))
    report = asyncio.run(run_quality(text_only, transport=_service(tiny).transport())).report
    assert report["cider"] == {"used": False, "reason": "no i2t or t2i task was run"}
    assert "R_eq1@1" in report["tasks"]["t2t"]
    with pytest.raises(ValueError, match="cider must be one of"):
        _config(tiny, tmp_path, cider="on")

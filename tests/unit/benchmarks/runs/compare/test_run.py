"""``python -m benchmarks compare`` against an in-process fake service with several variants."""

from __future__ import annotations

import asyncio
import gc
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.report.writers import write_compare_outputs
from benchmarks.runs.compare.config import DEFAULT_COMPARE_TASKS, CompareConfig
from benchmarks.runs.compare.run import run_compare
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.setup_error import BenchmarkSetupError
from evaluation.metrics.pareto import quality_metrics
from tests.fakes.fake_variants import SLOW_DELAY_S, MultiVariantService, two_variants
from tests.fakes.tiny_data import TinyDataset

SAMPLES = 40
LATENCY_K = 10


def config_for(tiny: TinyDataset, **overrides: Any) -> CompareConfig:
    settings: dict[str, Any] = {
        "url": "http://fake",
        "variants": ("full", "short"),
        "data_dir": tiny.data_dir,
        "split": tiny.split,
        "bootstrap_samples": SAMPLES,
        "concurrency_levels": (1, 3),
        "latency_requests": 12,
        "warmup_requests": 2,
        "rounds": 3,
        "show_progress": False,
        "ready_timeout_s": 5.0,
    }
    settings.update(overrides)
    return CompareConfig(**settings)


def latency_searches(service: MultiVariantService) -> list[tuple[str, dict[str, Any]]]:
    """The searches of the latency phase (k = LATENCY_K; the quality replay asks for more)."""
    return [(name, body) for name, body in service.searches if body["k"] == LATENCY_K]


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_each_variant_gets_the_quality_of_its_own_run(tiny: TinyDataset) -> None:
    service = two_variants(tiny)
    report = asyncio.run(run_compare(config_for(tiny), transport=service.transport())).report
    assert [entry["name"] for entry in report["variants"]] == ["full", "short"]
    assert report["baseline"] == "full"
    for entry in report["variants"]:
        alone = QualityRunConfig(
            url="http://fake",
            data_dir=tiny.data_dir,
            split=tiny.split,
            tasks=DEFAULT_COMPARE_TASKS,
            bootstrap_samples=SAMPLES,
            variant=entry["name"],
            show_progress=False,
        )
        expected = asyncio.run(run_quality(alone, transport=two_variants(tiny).transport())).report
        assert entry["tasks"] == expected["tasks"]
        assert set(entry["tasks"]) == set(DEFAULT_COMPARE_TASKS)
        assert entry["bundle"] == f"tiny-{entry['name']}"
        assert entry["bundle_version"] == f"v-{entry['name']}"
        assert entry["bundle_versions_seen"] == [f"v-{entry['name']}"]
    full, short = report["variants"]
    # The variants really were asked apart: the worse encoder scores differently.
    assert quality_metrics(full["tasks"]) != quality_metrics(short["tasks"])
    assert (full["precision"], short["precision"]) == ("fp32", "int8")
    assert full["providers"] == ["CPUExecutionProvider"]
    assert short["bundle_versions"] == {"tiny-short": "v-short"}
    # Quality searches went to the variant they were for, never to the default.
    quality = [(name, body) for name, body in service.searches if body["k"] != LATENCY_K]
    assert {body["variant"] for _, body in quality} == {"full", "short"}
    assert all(name == body["variant"] for name, body in quality)


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_latency_is_interleaved_on_the_same_queries_and_tells_variants_apart(
    tiny: TinyDataset,
) -> None:
    service = two_variants(tiny)
    config = config_for(tiny)
    # A chunk lasts a few milliseconds: a full garbage collection (~0.2 s with the heap a long
    # test session builds) inside one would swamp the difference between the variants.
    gc.collect()
    gc.disable()
    try:
        report = asyncio.run(run_compare(config, transport=service.transport())).report
    finally:
        gc.enable()
    schedule = report["latency_schedule"]
    assert schedule["mode"] == "interleaved"
    assert schedule["chunk_requests"] == [4, 4, 4]
    rounds = [["full", "short"], ["short", "full"], ["full", "short"]]
    assert schedule["orders"] == rounds * 2  # two levels

    # Chunks ran one after another in that order, each warm-up + measured requests long.
    expected = [name for order in rounds * 2 for name in order for _ in range(2 + 4)]
    sent = latency_searches(service)
    assert [name for name, _ in sent] == expected
    assert all(body["variant"] == name for name, body in sent)
    # Every variant got the same query texts.
    texts = {
        name: Counter(body["query"]["text"] for other, body in sent if other == name)
        for name in ("full", "short")
    }
    assert texts["full"] == texts["short"]

    full, short = (entry["latency"] for entry in report["variants"])
    for level, concurrency in (("c1", 1), ("c3", 3)):
        for entry in (full, short):
            assert entry[level]["requests"] == 12
            assert entry[level]["errors"] == 0
            assert entry[level]["concurrency"] == concurrency
        assert short[level]["p50_ms"] >= SLOW_DELAY_S * 1000.0
        assert full[level]["p50_ms"] < short[level]["p50_ms"]
        assert full[level]["qps"] > short[level]["qps"]
    assert set(report["pareto"]) == {
        f"{quality} vs {cost} @{level}"
        for quality in ("t2t R@1", "t2t_cocaptions R@1", "sts ρ")
        for cost in ("p50_ms", "p99_ms", "qps")
        for level in ("c1", "c3")
    }


def test_one_round_runs_the_variants_back_to_back(tiny: TinyDataset) -> None:
    service = two_variants(tiny)
    config = config_for(tiny, rounds=1, concurrency_levels=(2,), tasks=("t2t",))
    report = asyncio.run(run_compare(config, transport=service.transport())).report
    assert report["latency_schedule"]["mode"] == "back_to_back"
    sent = [name for name, _ in latency_searches(service)]
    assert sent == ["full"] * 14 + ["short"] * 14
    assert set(report["variants"][0]["tasks"]) == {"t2t"}
    # Each headline number sits next to its 95 % interval, computed with the run's seed.
    assert report["quality_intervals"]["level"] == 0.95
    assert report["quality_intervals"]["samples"] == SAMPLES
    assert set(report["quality_intervals"]["methods"]) == {"R@K", "bison acc", "ρ"}
    for entry in report["variants"]:
        values = quality_metrics(entry["tasks"])
        assert set(entry["quality"]) == set(values)
        for name, item in entry["quality"].items():
            assert item["value"] == values[name]
            low, high = item["ci95"]
            assert low <= item["value"] <= high


def test_an_unloaded_variant_is_refused_before_any_search(tiny: TinyDataset) -> None:
    service = two_variants(tiny)
    config = config_for(tiny, variants=("full", "nope"))
    with pytest.raises(BenchmarkSetupError, match=r"\['nope'\] are not loaded.*'full', 'short'"):
        asyncio.run(run_compare(config, transport=service.transport()))
    assert service.searches == []


def test_a_variant_without_a_text_tower_has_its_latency_skipped(tiny: TinyDataset) -> None:
    service = two_variants(tiny)
    service.variants["short"].service.towers = ("image",)
    config = config_for(tiny, tasks=("sts",))
    report = asyncio.run(run_compare(config, transport=service.transport())).report
    full, short = report["variants"]
    assert "no text tower" in short["skipped"]["latency"]
    assert short["latency"] == {}
    assert set(full["latency"]) == {"c1", "c3"}
    assert "sts" in short["tasks"]  # item references need no tower
    assert report["pareto"] == {}
    assert {name for name, _ in latency_searches(service)} == {"full"}


def test_every_variant_records_the_first_variants_sampled_queries(
    tiny: TinyDataset, tmp_path: Path
) -> None:
    service = two_variants(tiny)
    config = config_for(tiny, rounds=1, concurrency_levels=(1,), tasks=("t2t",), html_queries=3)
    run = asyncio.run(run_compare(config, transport=service.transport()))
    assert set(run.queries) == {"full", "short"}
    full, short = run.queries["full"], run.queries["short"]
    assert full["bound"]["pinned"] is False
    assert short["bound"]["pinned"] is True
    ids = [(record["stream"], record["query"]) for record in full["records"]]
    assert len(ids) == 3
    assert [(record["stream"], record["query"]) for record in short["records"]] == ids
    assert run.report["settings"]["html_queries"] == 3

    written = write_compare_outputs(run, tmp_path)
    assert written["html"] == tmp_path / "compare.html"
    page = written["html"].read_text(encoding="utf-8")
    # the service URL is data (compare.json, compare.md), no resource
    assert not re.findall(r"https?://", page.replace("http://fake", ""))
    assert "<link" not in page
    data = json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert [(entry["stream"], entry["query"]) for entry in data["queries"]] == ids
    for entry in data["queries"]:
        assert set(entry["variants"]) == {"full", "short"}
        assert entry["variants"]["short"]["overlap"] is not None
    assert json.loads(written["json"].read_text(encoding="utf-8"))["variants"][0]["name"] == "full"

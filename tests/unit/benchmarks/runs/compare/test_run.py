"""``python -m benchmarks compare`` against an in-process fake service with several variants, by
variant (``--variants``) and by lever setting (``--setting``, a fake that takes the levers)."""

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
from benchmarks.runs.compare.levers import parse_setting
from benchmarks.runs.compare.run import run_compare
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.setup_error import BenchmarkSetupError
from evaluation.metrics.pareto import quality_metrics
from tests.fakes.fake_variants import SLOW_DELAY_S, MultiVariantService, two_variants
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.compare.lever_service import (
    HYBRID_DELAY_S,
    caption_levers,
    scenes_levers,
)

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


def test_the_variants_path_sends_and_reports_what_it_always_did(tiny: TinyDataset) -> None:
    """``--variants``: each variant is a setting that sets only the variant; no lever reaches a
    request and the report has the keys it had before lever settings existed."""
    service = two_variants(tiny)
    config = config_for(tiny, rounds=1, concurrency_levels=(1,), tasks=("t2t", "sts"))
    report = asyncio.run(run_compare(config, transport=service.transport())).report
    allowed = {"query", "collection", "k", "offset", "exclude", "variant", "include_metadata"}
    assert service.searches
    assert all(set(body) <= allowed for _, body in service.searches)
    assert list(report) == [
        "schema_version", "kind", "dataset", "split", "data_dir", "service_url", "created_at",
        "baseline", "variants", "latency_schedule", "pareto", "quality_intervals", "settings",
        "durations_s", "environment",
    ]  # fmt: skip
    for entry in report["variants"]:
        assert list(entry) == [
            "name", "dim", "precision", "towers", "providers", "tower_providers",
            "bundle_versions", "bundle", "bundle_version", "bundle_versions_seen", "collections",
            "tasks", "quality", "skipped", "checks", "latency",
        ]  # fmt: skip
    assert "variants take turns" not in report["latency_schedule"]["note"]  # one round
    assert "each variant's requests run in one block" in report["latency_schedule"]["note"]


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


# -- lever settings ---------------------------------------------------------------------------

SETTINGS = (
    parse_setting("dense=variant:full"),
    parse_setting("hybrid=variant:full,mode:hybrid,rrf_k:30"),
    parse_setting("lexical=variant:short,mode:lexical"),
)


def settings_config(tiny: TinyDataset, **overrides: Any) -> CompareConfig:
    settings: dict[str, Any] = {
        "variants": (),
        "lever_settings": SETTINGS,
        "concurrency_levels": (1,),
        "latency_requests": 4,
        "warmup_requests": 1,
        "rounds": 2,
    }
    settings.update(overrides)
    return config_for(tiny, **settings)


def _row_of(search: dict[str, Any]) -> str:
    """Which of :data:`SETTINGS` a recorded search was sent for, by the fields it carries."""
    carried = {key: value for key, value in search.items() if key in ("mode", "fusion", "window")}
    found = [row.name for row in SETTINGS if row.search_fields() == carried]
    assert len(found) == 1, search
    return found[0]


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_each_setting_is_a_row_and_every_search_carries_its_levers(
    tiny: TinyDataset, tmp_path: Path
) -> None:
    service = caption_levers(tiny)
    run = asyncio.run(run_compare(settings_config(tiny), transport=service.transport()))
    report = run.report
    names = ["dense", "hybrid", "lexical"]
    assert [entry["name"] for entry in report["variants"]] == names
    assert report["baseline"] == "dense"
    assert report["lever_settings"] == [
        {"name": "dense", "variant": "full"},
        {"name": "hybrid", "variant": "full", "mode": "hybrid", "fusion": "rrf", "rrf_k": 30},
        {"name": "lexical", "variant": "short", "mode": "lexical"},
    ]
    entries = {entry["name"]: entry for entry in report["variants"]}
    for row in SETTINGS:
        entry = entries[row.name]
        assert (entry["variant"], entry["levers"]) == (row.variant, row.levers())
        assert entry["request"] == row.search_fields()
        assert entry["modes_answered"] == [row.mode or "dense"]
        assert entry["precision"] == ("int8" if row.variant == "short" else "fp32")
        assert set(entry["latency"]) == {"c1"}
        assert entry["latency"]["c1"]["requests"] == 4
    assert entries["hybrid"]["latency"]["c1"]["p50_ms"] >= HYBRID_DELAY_S * 1000.0

    # Every search of every phase went out with its row's variant and levers.
    rows_sent: Counter[tuple[str, str]] = Counter()
    for variant, search in service.searches:
        row = _row_of(search)
        assert variant == next(setting.variant for setting in SETTINGS if setting.name == row)
        rows_sent[row, "latency" if search["k"] == LATENCY_K else "quality"] += 1
    assert set(rows_sent) == {(name, phase) for name in names for phase in ("latency", "quality")}
    for name in names:
        assert rows_sent[name, "latency"] == 2 * (1 + 2)  # 2 rounds of 1 warm-up + 2 measured
    # A hybrid ranking is its window's: its replays ask for no more than the window (100 here,
    # and the 60 captions).
    hybrid_depths = {search["k"] for _, search in service.searches if _row_of(search) == "hybrid"}
    assert max(hybrid_depths) <= 100
    # The keyword legs rank differently from the dense one.
    assert entries["dense"]["tasks"]["t2t"] != entries["hybrid"]["tasks"]["t2t"]

    # STS comes from /v1/score, which no lever reaches: once per variant, shared by its rows.
    assert sorted(service.scores) == ["full", "short"]
    assert entries["hybrid"]["pair_tasks_from"] == "dense"
    assert entries["hybrid"]["tasks"]["sts"] == entries["dense"]["tasks"]["sts"]
    assert entries["hybrid"]["quality"]["sts ρ"] == entries["dense"]["quality"]["sts ρ"]
    assert "pair_tasks_from" not in entries["lexical"]
    assert set(report["pareto"]) == {
        f"{quality} vs {cost} @c1"
        for quality in ("t2t R@1", "t2t_cocaptions R@1", "sts ρ")
        for cost in ("p50_ms", "p99_ms", "qps")
    }
    assert {name for front in report["pareto"].values() for name in front} <= set(names)
    assert report["latency_schedule"]["orders"] == [names, names[1:] + names[:1]]
    assert "settings take turns" in report["latency_schedule"]["note"]

    written = write_compare_outputs(run, tmp_path)
    markdown = written["markdown"].read_text(encoding="utf-8")
    assert markdown.startswith("# Crisscross lever comparison — coco-karpathy val")
    for name in names:
        assert markdown.count(f"| `{name}` |") >= 4  # settings, quality, cost, Pareto tables
    assert (tmp_path / "compare_pareto.png").is_file()
    assert set(run.queries) <= set(names)


def test_a_row_that_only_needs_scores_takes_them_from_its_variants_first_row(
    tiny: TinyDataset,
) -> None:
    service = caption_levers(tiny)
    config = settings_config(tiny, tasks=("sts",), rounds=1)
    report = asyncio.run(run_compare(config, transport=service.transport())).report
    dense, hybrid, lexical = report["variants"]
    assert hybrid["pair_tasks_from"] == "dense"
    assert "pair_tasks_from" not in lexical  # the first row of its variant
    assert hybrid["tasks"] == dense["tasks"]
    assert hybrid["bundle_version"] == dense["bundle_version"] == "v-full"
    assert (hybrid["name"], hybrid["levers"]["mode"]) == ("hybrid", "hybrid")
    assert hybrid["latency"]["c1"]["requests"] == 4  # its own latency, with its own levers
    assert sorted(service.scores) == ["full", "short"]
    assert "quality_hybrid" not in report["durations_s"]


def test_a_setting_without_a_variant_gets_the_services_default(tiny: TinyDataset) -> None:
    service = caption_levers(tiny)
    rows = (parse_setting("plain="), parse_setting("lexical=mode:lexical"))
    config = settings_config(tiny, lever_settings=rows, tasks=("t2t",), rounds=1)
    report = asyncio.run(run_compare(config, transport=service.transport())).report
    assert [entry["variant"] for entry in report["variants"]] == ["full", "full"]
    assert report["lever_settings"][0] == {"name": "plain", "variant": "full"}
    assert {variant for variant, _ in service.searches} == {"full"}
    assert all(search["variant"] == "full" for _, search in service.searches)


def test_a_rerank_by_a_variant_that_is_not_loaded_is_refused_before_any_search(
    tiny: TinyDataset,
) -> None:
    service = caption_levers(tiny)
    rows = (parse_setting("dense=variant:full"), parse_setting("r=variant:full,rerank:int9"))
    config = settings_config(tiny, lever_settings=rows)
    with pytest.raises(BenchmarkSetupError, match=r"\['int9'\] are not loaded"):
        asyncio.run(run_compare(config, transport=service.transport()))
    assert service.searches == []
    assert service.scores == []


def test_text_to_image_on_scenes_sends_hybrid_to_the_images(tiny: TinyDataset) -> None:
    """t2i against the image collection: the caption text is the dense query and, by the
    service's default, the keywords (on the images' captions field): only ``mode`` is sent."""
    service = scenes_levers(tiny)
    rows = (parse_setting("dense=variant:dual"), parse_setting("hybrid=variant:dual,mode:hybrid"))
    config = settings_config(
        tiny,
        lever_settings=rows,
        dataset="scenes",
        tasks=("t2i", "t2i_original"),
        rounds=1,
        latency_target="images",
    )
    report = asyncio.run(run_compare(config, transport=service.transport())).report
    assert report["dataset"] == "scenes"
    assert report["settings"]["latency_collection"] == "images"
    dense, hybrid = report["variants"]
    # every search, the latency ones too, is text → images
    assert {search["collection"] for _, search in service.searches} == {"images"}
    latency = [search for _, search in service.searches if search["k"] == LATENCY_K]
    assert Counter(search.get("mode", "dense") for search in latency) == {"dense": 5, "hybrid": 5}
    assert hybrid["latency"]["c1"]["p50_ms"] >= HYBRID_DELAY_S * 1000.0
    image_searches = [search for _, search in service.searches if search["collection"] == "images"]
    texts = {caption.text for caption in tiny.captions}
    assert image_searches
    assert all(search["query"]["text"] in texts for search in image_searches)
    assert all("lexical" not in search for search in image_searches)
    modes = Counter(search.get("mode", "dense") for search in image_searches)
    assert set(modes) == {"dense", "hybrid"}
    assert modes["dense"] == modes["hybrid"]  # the same queries for both rows
    assert set(dense["tasks"]) == set(hybrid["tasks"]) == {"t2i", "t2i_original"}
    # keywords on an image's own captions find it (the fake's keyword leg)
    assert hybrid["tasks"]["t2i_original"]["R@1"] > dense["tasks"]["t2i_original"]["R@1"]
    assert hybrid["modes_answered"] == ["hybrid"]

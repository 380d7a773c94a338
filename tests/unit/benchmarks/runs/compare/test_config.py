"""The compare run's settings: refusals, chunks, the rows (variants or lever settings), each row's
quality run, the report's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.compare.levers import LeverSetting, parse_setting


def _config(**settings: Any) -> CompareConfig:
    return CompareConfig(url="http://x", data_dir=Path("d"), **{"variants": ("a",), **settings})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"variants": ()}, "at least one variant"),
        ({"lever_settings": (parse_setting("a=mode:dense"),)}, "--variants or --setting, not both"),
        (
            {
                "variants": (),
                "lever_settings": (parse_setting("a="), parse_setting("a=mode:lexical")),
            },
            r"setting names repeat: \['a', 'a'\]",
        ),
        (
            {"variants": (), "lever_settings": (parse_setting("h=mode:hybrid,window:5"),)},
            "setting 'h': window 5 is less than --latency-k 10",
        ),
        (
            {
                "variants": (),
                "lever_settings": (parse_setting("h=mode:hybrid,window:8"),),
                "latency_k": 5,
            },
            "R@10",  # the row's replays would ask for 8 results
        ),
        ({"variants": ("a", "a")}, "repeat"),
        ({"tasks": ("latency",)}, "unknown quality task"),
        ({"concurrency_levels": (0,)}, "positive"),
        ({"rounds": 4, "latency_requests": 3}, "rounds"),
        ({"warmup_requests": -1}, "warmup_requests"),
        ({"k": 5}, "R@10"),
    ],
)
def test_refusals(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(**settings)


def test_chunks_quality_configs_and_settings() -> None:
    config = _config(variants=("a", "b"), latency_requests=10, rounds=3, limit_queries=5)
    assert config.chunk_sizes() == [4, 3, 3]
    quality = config.quality_config("b")
    assert (quality.variant, quality.limit_queries, quality.tasks) == ("b", 5, config.tasks)
    assert quality.concurrency_levels == (1, 8)  # no latency phase is asked of it
    assert list(config.settings()) == [
        "split",
        "dataset",
        "collection",
        "images_collection",
        "tasks",
        "k",
        "probe_k",
        "limit_queries",
        "replay_concurrency",
        "bulk_size",
        "score_batch",
        "bootstrap_samples",
        "seed",
        "concurrency_levels",
        "latency_requests",
        "warmup_requests",
        "latency_k",
        "rounds",
        "ready_timeout_s",
        "request_timeout_s",
        "html_queries",
    ]


def test_the_variants_are_rows_that_send_only_their_variant() -> None:
    config = _config(variants=("a", "b"))
    assert not config.by_settings
    assert config.rows() == (LeverSetting.of_variant("a"), LeverSetting.of_variant("b"))
    assert config.quality_config("a") == config.quality_config(config.rows()[0])
    assert config.quality_config("a").search_fields is None


def test_each_setting_gets_a_quality_run_with_its_variant_levers_and_depth() -> None:
    settings = (
        parse_setting("dense=variant:v"),
        parse_setting("hybrid=variant:v,mode:hybrid,fusion:rrf,window:200"),
        parse_setting("lexical=mode:lexical"),
    )
    config = _config(variants=(), lever_settings=settings, k=1000)
    assert config.by_settings
    assert config.rows() == settings
    dense, hybrid, lexical = (config.quality_config(row) for row in settings)
    assert (dense.variant, dense.k, dense.search_fields) == ("v", 1000, None)
    assert hybrid.variant == "v"
    assert hybrid.k == 200  # a hybrid ranking holds its window's rows
    assert hybrid.search_fields == {"mode": "hybrid", "fusion": {"method": "rrf"}, "window": 200}
    assert (lexical.variant, lexical.k) == (None, 1000)
    assert lexical.search_fields == {"mode": "lexical"}
    only = config.quality_config(settings[1], tasks=("t2t",))
    assert only.tasks == ("t2t",)
    assert "lever_settings" not in config.settings()  # the rows are in the report's entries


def test_the_latency_searches_go_to_the_caption_or_the_image_collection() -> None:
    config = _config(collection="scenes-captions", images_collection="tagged")
    assert config.latency_collection == "scenes-captions"
    assert "latency_collection" not in config.settings()
    on_images = _config(images_collection="tagged", latency_target="images")
    assert on_images.latency_collection == "tagged"
    assert on_images.settings()["latency_collection"] == "tagged"
    with pytest.raises(ValueError, match="latency_target"):
        _config(latency_target="both")

"""Lever settings: parsing ``NAME=key:value,...``, the refusals (before any request), what every
search of a setting carries, its retrieval depth and its description."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from benchmarks.runs.compare.levers import (
    DEFAULT_WINDOW,
    SETTING_KEYS,
    LeverSetting,
    parse_setting,
    setting_argument,
)
from crisscross_client import models as m


def test_a_setting_is_parsed_key_by_key() -> None:
    setting = parse_setting(
        " hyb = variant:minilm , mode:hybrid,fusion:weighted,alpha:0.7,window:200,"
        "rerank:minilm-int8,lexical_field:captions"
    )
    assert setting == LeverSetting(
        name="hyb",
        variant="minilm",
        mode="hybrid",
        fusion="weighted",
        alpha=0.7,
        window=200,
        rerank="minilm-int8",
        lexical_field="captions",
    )
    index = parse_setting("ivf=nprobe:16,exact:false")
    assert (index.nprobe, index.exact, index.variant) == (16, False, None)
    assert parse_setting("defaults=") == LeverSetting(name="defaults")
    assert parse_setting("x=exact:TRUE").exact is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hybrid", "expected NAME=key:value"),
        ("=mode:hybrid", "expected NAME=key:value"),
        ("a b=mode:dense", "a name is letters"),
        ("a=mode", "expected key:value; got 'mode'"),
        ("a=mode:", "expected key:value"),
        ("a=boost:2", "unknown key 'boost'; keys: variant, mode,"),
        ("a=mode:dense,mode:hybrid", "mode is given twice"),
        ("a=mode:bm25", "mode must be one of dense, lexical, hybrid; got 'bm25'"),
        ("a=mode:hybrid,fusion:borda", "fusion must be one of rrf, weighted"),
        ("a=mode:hybrid,rrf_k:ten", "rrf_k must be an integer; got 'ten'"),
        ("a=mode:hybrid,rrf_k:0", "rrf_k must be at least 1"),
        ("a=mode:hybrid,alpha:high", "alpha must be a number"),
        ("a=mode:hybrid,alpha:1.5", r"alpha must be in \[0, 1\]"),
        ("a=mode:hybrid,fusion:weighted,rrf_k:5", "rrf_k goes with fusion rrf"),
        ("a=mode:hybrid,fusion:rrf,alpha:0.5", "alpha goes with fusion weighted"),
        ("a=mode:hybrid,rrf_k:5,alpha:0.5", "not both"),
        ("a=fusion:rrf", "need mode:hybrid"),
        ("a=mode:lexical,alpha:0.5", "need mode:hybrid"),
        ("a=window:50", "window needs mode:hybrid or a rerank"),
        ("a=mode:hybrid,window:0", "window must be at least 1"),
        ("a=lexical_field:captions", "lexical_field needs mode:lexical or mode:hybrid"),
        ("a=nprobe:0", "nprobe must be at least 1"),
        ("a=exact:true,nprobe:8", "exact:true goes alone"),
        ("a=exact:maybe", "exact must be true or false"),
        ("a=variant: ", "expected key:value"),
    ],
)
def test_bad_settings_are_refused_with_the_setting_and_key(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_setting(text)
    name = text.partition("=")[0].strip()
    if name and "expected NAME" not in message:
        assert f"setting {name!r}" in str(caught.value)
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        setting_argument(text)


def test_a_setting_built_in_code_is_checked_too() -> None:
    with pytest.raises(ValueError, match="setting 'x': rerank is empty"):
        LeverSetting(name="x", rerank=" ")


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("v=variant:minilm", {}),
        ("d=mode:dense", {"mode": "dense"}),
        (
            "h=mode:hybrid",
            {"mode": "hybrid", "window": DEFAULT_WINDOW},
        ),
        (
            "h=mode:hybrid,rrf_k:30,window:300",
            {"mode": "hybrid", "fusion": {"method": "rrf", "k": 30}, "window": 300},
        ),
        (
            "w=mode:hybrid,alpha:0.25,lexical_field:captions",
            {
                "mode": "hybrid",
                "lexical": {"field": "captions"},
                "fusion": {"method": "weighted", "alpha": 0.25},
                "window": DEFAULT_WINDOW,
            },
        ),
        (
            "w=mode:hybrid,fusion:weighted",
            {"mode": "hybrid", "fusion": {"method": "weighted"}, "window": DEFAULT_WINDOW},
        ),
        ("l=mode:lexical", {"mode": "lexical"}),
        ("r=rerank:exact,window:50", {"window": 50, "rerank": {"by": "exact"}}),
        (
            "r=rerank:minilm-int8",
            {"window": DEFAULT_WINDOW, "rerank": {"by": "variant", "variant": "minilm-int8"}},
        ),
        ("i=nprobe:8", {"search_params": {"nprobe": 8}}),
        ("e=exact:true", {"search_params": {"exact": True}}),
    ],
)
def test_the_fields_every_search_carries(text: str, fields: dict[str, Any]) -> None:
    setting = parse_setting(text)
    sent = setting.search_fields()
    assert sent == fields
    # What the harness sends is a search the API client's own model takes.
    m.SearchRequest.model_validate({"collection": "c", "query": {"text": "t"}, **sent})


def test_a_windowed_ranking_asks_for_at_most_its_window() -> None:
    assert parse_setting("d=mode:dense").quality_k(1000) == 1000
    assert parse_setting("l=mode:lexical").quality_k(1000) == 1000
    assert parse_setting("h=mode:hybrid").quality_k(1000) == DEFAULT_WINDOW
    assert parse_setting("h=mode:hybrid,window:400").quality_k(1000) == 400
    assert parse_setting("h=mode:hybrid,window:4000").quality_k(1000) == 1000
    assert parse_setting("r=rerank:exact").quality_k(50) == 50


def test_levers_variants_and_descriptions() -> None:
    setting = parse_setting("h=variant:v,mode:hybrid,rrf_k:30,rerank:w")
    assert list(setting.levers()) == ["variant", "mode", "fusion", "rrf_k", "rerank"]
    assert setting.levers()["fusion"] == "rrf"  # inferred from rrf_k
    assert list(setting.levers()) == [key for key in SETTING_KEYS if key in setting.levers()]
    assert setting.rerank_variant() == "w"
    assert parse_setting("r=rerank:exact").rerank_variant() is None
    assert setting.describe() == "mode hybrid, fusion rrf (k 30), rerank w, window 100 (default)"
    assert parse_setting("x=nprobe:8,mode:lexical").describe() == "mode lexical, nprobe 8"
    assert LeverSetting(name="v", variant="v").describe() == "–"
    assert LeverSetting.of_variant("minilm") == LeverSetting(name="minilm", variant="minilm")
    assert parse_setting("d=").with_variant("minilm").variant == "minilm"

"""MixedRunConfig: its refusals, the share type and the settings it reports."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from benchmarks.runs.mixed.config import MixedRunConfig, share


def config(**overrides: Any) -> MixedRunConfig:
    return MixedRunConfig(url="http://x", **overrides)


def test_the_defaults_are_the_documented_ones() -> None:
    defaults = config()
    assert (defaults.collection, defaults.dim, defaults.vector_format) == (
        "mixed-bench",
        384,
        "base64",
    )
    assert (defaults.preload, defaults.searchers, defaults.writers) == (20_000, 4, 2)
    assert (defaults.batch, defaults.delete_share, defaults.phase_s) == (100, 0.1, 20.0)
    assert defaults.keep is False


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"collection": "no spaces"}, "collection"),
        ({"collection": "-leading"}, "collection"),
        ({"collection": "x" * 65}, "collection"),
        ({"dim": 0}, "dim must be at least 1"),
        ({"searchers": 0}, "searchers must be at least 1"),
        ({"writers": 0}, "writers must be at least 1"),
        ({"batch": 0}, "batch must be at least 1"),
        ({"preload_batch": 0}, "preload_batch must be at least 1"),
        ({"k": 0}, "k must be at least 1"),
        ({"preload": -1}, "cannot be negative"),
        ({"delete_share": 1.0}, "delete_share"),
        ({"delete_share": -0.1}, "delete_share"),
        ({"vector_format": "npy"}, "vector_format"),
        ({"phase_s": 0.0}, "phase_s must be positive"),
        ({"visibility_timeout_s": -1.0}, "visibility_timeout_s"),
        ({"timeout_s": 0.0}, "timeout_s"),
    ],
)
def test_a_config_out_of_range_is_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config(**overrides)


def test_share_parses_shares_below_one_only() -> None:
    assert share("0") == 0.0
    assert share("0.25") == 0.25
    for bad in ("1", "1.5", "-0.1", "half"):
        with pytest.raises(argparse.ArgumentTypeError):
            share(bad)


def test_settings_name_everything_but_the_url_folders_and_progress() -> None:
    settings = config(dim=16, vector_format="json").settings()
    assert settings["dim"] == 16
    assert settings["vector_format"] == "json"
    assert settings["delete_share"] == 0.1
    for left_out in ("url", "data_dir", "out_dir", "show_progress"):
        assert left_out not in settings

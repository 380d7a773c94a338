"""The load run's settings refuse impossible combinations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.runs.load.config import DEFAULT_FRACTIONS, LoadRunConfig


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"closed_levels": ()}, "closed_levels"),
        ({"open_rates": (0.0,)}, "open rates"),
        ({"open_fractions": (-1.0,)}, "open fractions"),
        ({"duration_s": 0.0}, "duration_s"),
        ({"open_warmup_s": -1.0}, "open_warmup_s"),
        ({"max_connections": 0}, "max_connections"),
        ({"k": 0}, "k must be"),
    ],
)
def test_refusals(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LoadRunConfig(url="http://x", data_dir=Path("d"), **settings)


def test_defaults() -> None:
    config = LoadRunConfig(url="http://x", data_dir=Path("d"))
    assert config.open_fractions == DEFAULT_FRACTIONS
    assert config.out_dir is None

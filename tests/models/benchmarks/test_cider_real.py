"""The CIDEr-D matrix of the real Karpathy val captions against the per-pair reference."""

from __future__ import annotations

from pathlib import Path

from evaluation.metrics.cider_parity import parity_check
from formats.karpathy import read_captions
from formats.layout import captions_path


def test_real_val_slice_matches_the_reference(data_dir: Path) -> None:
    """CI's slice of the full build (``make cider``): 300 random pairs of the real captions."""
    captions = read_captions(captions_path(data_dir, "val"))
    result = parity_check(captions, pairs=150, seed=1)
    assert result.max_abs_diff_float64 < 1e-9
    assert result.max_score > 1.0

"""The CIDEr-D parity check: the vectorised and stored matrices against the per-pair
reference on random pairs plus their own-image pairs."""

from __future__ import annotations

import numpy as np

from evaluation.metrics.cider import split_matrix
from evaluation.metrics.cider_parity import PARITY_TOLERANCE, ParityResult, parity_check
from formats.karpathy import read_captions
from formats.layout import captions_path
from tests.fakes.tiny_data import TinyDataset


def test_parity_of_a_split_and_its_stored_matrix(tiny: TinyDataset) -> None:
    captions = read_captions(captions_path(tiny.data_dir, tiny.split))
    matrix = split_matrix(captions).full(dtype=np.float64)
    result = parity_check(captions, pairs=200, seed=3, stored=matrix.astype(np.float32))
    assert result.pairs == 400  # 200 uniform pairs + the drawn captions' own images
    assert result.max_abs_diff_float64 < 1e-12
    assert result.max_abs_diff_stored is not None
    assert result.max_abs_diff_stored < 1e-5
    assert result.ok is (result.max_abs_diff_stored <= PARITY_TOLERANCE)


def test_ok_needs_both_differences_within_the_tolerance() -> None:
    assert ParityResult(10, 0.0, None, 1.0).ok
    assert not ParityResult(10, 2 * PARITY_TOLERANCE, None, 1.0).ok
    assert not ParityResult(10, 0.0, 2 * PARITY_TOLERANCE, 1.0).ok
    assert ParityResult(1, 0.5, None, 2.0).as_report() == {
        "pairs": 1,
        "max_abs_diff_float64": 0.5,
        "max_abs_diff_stored": None,
        "max_score": 2.0,
    }

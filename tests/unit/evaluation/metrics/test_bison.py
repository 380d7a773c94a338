"""BISON accuracy (ties count one half)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evaluation.metrics.bison import bison_accuracy


def test_accuracy_ties_count_one_half() -> None:
    result = bison_accuracy([1.0, 0.5, 0.3, 0.7, 0.9], [0.5, 0.5, 0.4, 0.7, 0.1], {"x": 2})
    # wins: rows 0 and 4; ties: rows 1 and 3; loss: row 2 → (2 + 1) / 5.
    assert result.accuracy == pytest.approx(3 / 5)
    assert result.rows == 5
    assert result.ties == 2
    assert result.skipped == 2
    assert result.as_report() == {
        "accuracy": result.accuracy,
        "rows": 5,
        "skipped": 2,
        "ties": 2,
        "skipped_reasons": {"x": 2},
    }
    assert bison_accuracy([0.2], [0.2]).accuracy == 0.5
    empty = bison_accuracy([], [], {"image_unavailable": 3})
    assert (empty.accuracy, empty.rows, empty.skipped) == (None, 0, 3)
    with pytest.raises(ValueError, match="1-D"):
        bison_accuracy([1.0, 2.0], [1.0])


def test_accuracy_matches_loop_oracle() -> None:
    rng = random.Random(4)
    for _ in range(100):
        size = rng.randint(1, 40)
        true = [rng.choice((0.0, 0.25, 0.5, 1.0)) for _ in range(size)]
        other = [rng.choice((0.0, 0.25, 0.5, 1.0)) for _ in range(size)]
        points = 0.0
        for left, right in zip(true, other, strict=True):
            if left > right:
                points += 1.0
            elif left == right:
                points += 0.5
        result = bison_accuracy(np.array(true), np.array(other))
        assert result.accuracy == pytest.approx(points / size, abs=1e-12)

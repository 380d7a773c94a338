"""Parity comparison of embedding arrays and the fixed parity text set."""

from __future__ import annotations

import numpy as np
import pytest

from training.parity.compare import ParityError, check_parity, compare_embeddings
from training.parity.texts import parity_texts

TEXTS = ["first", "second", "third"]


def unit_rows(count: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def test_identical_embeddings_have_perfect_parity() -> None:
    embeddings = unit_rows(3)
    report = compare_embeddings(embeddings, embeddings.copy(), TEXTS, reference_name="self")
    assert report.min_cosine == pytest.approx(1.0)
    assert report.mean_cosine == pytest.approx(1.0)
    assert report.max_abs_diff == 0.0
    assert report.inputs == 3
    assert report.threshold == 0.999
    check_parity(report)


def test_scaling_keeps_cosine_but_shows_in_abs_diff() -> None:
    embeddings = unit_rows(3)
    report = compare_embeddings(2 * embeddings, embeddings, TEXTS, reference_name="ref")
    assert report.min_cosine == pytest.approx(1.0)
    assert report.max_abs_diff > 0.01


def test_one_bad_row_fails_and_is_named() -> None:
    reference = unit_rows(3)
    candidate = reference.copy()
    candidate[1] = -candidate[1]
    report = compare_embeddings(candidate, reference, TEXTS, reference_name="ref")
    assert report.min_cosine == pytest.approx(-1.0)
    assert report.worst_input == "'second'"
    with pytest.raises(ParityError, match=r"min cosine -1\.000000 < 0\.999"):
        check_parity(report)


def test_threshold_is_applied() -> None:
    reference = unit_rows(3)
    noisy = reference + 0.05 * unit_rows(3, seed=1)
    report = compare_embeddings(noisy, reference, TEXTS, reference_name="ref", threshold=0.9)
    check_parity(report)
    with pytest.raises(ParityError):
        check_parity(report.model_copy(update={"threshold": 0.99999}))


def test_nan_output_can_never_pass() -> None:
    reference = unit_rows(3)
    candidate = reference.copy()
    candidate[2] = np.nan
    report = compare_embeddings(candidate, reference, TEXTS, reference_name="ref")
    assert report.worst_input == "'third'"
    with pytest.raises(ParityError):
        check_parity(report)


@pytest.mark.parametrize(
    ("candidate_shape", "reference_shape", "texts"),
    [((3, 16), (3, 8), 3), ((3, 16), (2, 16), 3), ((0, 16), (0, 16), 0), ((3, 16), (3, 16), 2)],
)
def test_mismatched_inputs_are_refused(
    candidate_shape: tuple[int, int], reference_shape: tuple[int, int], texts: int
) -> None:
    with pytest.raises(ValueError, match=r"need two|inputs for"):
        compare_embeddings(
            np.ones(candidate_shape), np.ones(reference_shape), ["t"] * texts, reference_name="r"
        )


def test_parity_texts_are_many_varied_and_deterministic() -> None:
    texts = parity_texts()
    assert len(texts) >= 100
    assert texts == parity_texts()
    assert parity_texts(seed=1) != texts
    assert "" in texts
    assert any(not text.strip() and text for text in texts)  # whitespace only
    assert any(any(ord(char) > 0x3000 for char in text) for text in texts)  # CJK / emoji
    assert sum(len(text.split()) > 300 for text in texts) >= 4  # well past 256 tokens
    assert any(char.isdigit() for char in "".join(texts))
    assert any(text.isupper() for text in texts)

"""The CIDEr-like relevance behind the adaptive margin, against a direct computation."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from training.trainer.cider import CiderRelevance, content_words, ngram_counts

REFERENCE_SETS = (
    ("a red circle left of a blue star", "a red disc and a blue star", "two shapes"),
    ("a green square", "one green square on a grey background", "a square"),
    ("a yellow heart above a red circle", "a heart and a circle", "two shapes"),
    ("a blue star", "a star shape", "one blue star on a plain background"),
)


def _direct_phi(
    candidate: str, references: tuple[str, ...], sets: tuple[tuple[str, ...], ...]
) -> float:
    """(1/|G|) Σ_r (1/4) Σ_n cos(g_n(c), g_n(r)), computed from plain dicts."""
    documents = len(sets)

    def frequency(ngram: tuple[str, ...]) -> int:
        return sum(
            any(ngram in ngram_counts(text)[len(ngram) - 1] for text in group) for group in sets
        )

    def tfidf(text: str, n: int) -> dict[tuple[str, ...], float]:
        counts: Counter[tuple[str, ...]] = ngram_counts(text)[n - 1]
        return {
            gram: count * (math.log(documents) - math.log(max(1, frequency(gram))))
            for gram, count in counts.items()
        }

    total = 0.0
    for reference in references:
        for n in range(1, 5):
            left, right = tfidf(candidate, n), tfidf(reference, n)
            norm = math.sqrt(sum(v * v for v in left.values())) * math.sqrt(
                sum(v * v for v in right.values())
            )
            if norm > 0:
                total += (
                    sum(value * right.get(gram, 0.0) for gram, value in left.items()) / norm / 4
                )
    return total / len(references)


def test_phi_matches_the_direct_formula() -> None:
    relevance = CiderRelevance(REFERENCE_SETS)
    candidates = ["a red circle and a blue star", "a green square", "a heart", "nothing alike"]
    phi = CiderRelevance.phi(relevance.text_vectors(candidates), relevance.reference_centroids)
    assert phi.shape == (4, 4)
    assert phi.dtype == np.float32
    for row, candidate in enumerate(candidates):
        for column, references in enumerate(REFERENCE_SETS):
            expected = _direct_phi(candidate, references, REFERENCE_SETS)
            assert phi[row, column] == pytest.approx(expected, abs=1e-6)


def test_fitted_vectors_equal_fresh_ones() -> None:
    relevance = CiderRelevance(REFERENCE_SETS)
    flat = [text for group in REFERENCE_SETS for text in group]
    fresh = relevance.text_vectors(flat)
    assert abs(fresh - relevance.reference_vectors).max() == 0.0
    assert abs(relevance.centroids(REFERENCE_SETS) - relevance.reference_centroids).max() < 1e-15


def test_identical_texts_score_one_and_disjoint_texts_zero() -> None:
    relevance = CiderRelevance(REFERENCE_SETS)
    same = relevance.text_vectors(["a red circle left of a blue star"])
    reference = relevance.centroids([["a red circle left of a blue star"] * 3])
    assert CiderRelevance.phi(same, reference)[0, 0] == pytest.approx(1.0, abs=1e-6)
    disjoint = relevance.text_vectors(["green square"])
    assert CiderRelevance.phi(disjoint, reference)[0, 0] == 0.0


def test_words_are_case_and_punctuation_blind() -> None:
    assert content_words("A RED, circle!") == ["a", "red", "circle"]
    relevance = CiderRelevance(REFERENCE_SETS)
    loud = relevance.text_vectors(["A RED CIRCLE!!"])
    quiet = relevance.text_vectors(["a red circle"])
    assert abs(loud - quiet).max() == 0.0


def test_a_text_without_words_has_a_zero_vector() -> None:
    relevance = CiderRelevance(REFERENCE_SETS)
    assert relevance.text_vectors(["", "?!"]).nnz == 0


def test_unseen_ngrams_weigh_in_the_norm() -> None:
    relevance = CiderRelevance(REFERENCE_SETS)
    plain = relevance.text_vectors(["red"])
    diluted = relevance.text_vectors(["red zebra"])
    centroid = relevance.reference_centroids[:1]
    assert CiderRelevance.phi(diluted, centroid)[0, 0] < CiderRelevance.phi(plain, centroid)[0, 0]


def test_refuses_empty_fits() -> None:
    with pytest.raises(ValueError, match="reference set"):
        CiderRelevance([])

"""CIDEr-D: the per-pair reference against hand computation, the vectorised matrix against the
reference, a split's matrix against its images' captions."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

import numpy as np
import pytest

from evaluation.metrics.cider import (
    CiderDMatrix,
    cider_tokens,
    document_frequency,
    ngram_counts,
    reference_cider_d,
    split_matrix,
)
from formats.karpathy import images_of_captions, read_captions
from formats.layout import captions_path
from tests.fakes.tiny_data import TinyDataset


def test_tokens_are_lower_cased_white_space_words_and_ngrams_are_counted() -> None:
    assert cider_tokens("A dog,  on\tthe Dog.") == ["a", "dog,", "on", "the", "dog."]
    counts = ngram_counts(["a", "a", "b"])
    assert counts == {"a": 2, "b": 1, "a a": 1, "a b": 1, "a a b": 1}
    assert document_frequency([["a b", "a"], ["a c"]]) == {
        "a": 2,
        "b": 1,
        "a b": 1,
        "c": 1,
        "a c": 1,
    }


def test_reference_matches_hand_computation() -> None:
    references = [["a b"], ["c"]]
    frequency = document_frequency(references)
    # identical unigram and bigram vectors: cosine 1 for n = 1, 2; 0 for n = 3, 4; no penalty
    assert reference_cider_d("a b", references[0], frequency, 2) == pytest.approx(5.0, abs=1e-12)
    assert reference_cider_d("a b", references[1], frequency, 2) == 0.0
    # clipping: hyp "a a b" (tf a = 2) against "a b"; idf = log 2 everywhere (also for the
    # unseen bigram "a a", whose df of 0 counts as 1); one bigram more → δ = 1
    unigram = 2 / math.sqrt(10)  # (min(2,1)·1 + 1·1) / (√5 · √2)
    bigram = 1 / math.sqrt(2)  # "a b" only: 1 / (√2 · 1)
    expected = (unigram + bigram) / 4 * math.exp(-1 / 72) * 10
    assert reference_cider_d("a a b", references[0], frequency, 2) == pytest.approx(expected)
    # two references are averaged
    both = reference_cider_d("a b", ["a b", "c"], document_frequency([["a b", "c"], ["d"]]), 2)
    assert both == pytest.approx(
        reference_cider_d("a b", ["a b"], document_frequency([["a b", "c"], ["d"]]), 2) / 2
    )


def _random_corpus(seed: int) -> tuple[list[str], list[list[str]]]:
    rng = random.Random(seed)
    words = ["a", "A", "dog", "cat", "on", "the", "mat", "red", "dog."]
    references = [
        [
            " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
            for _ in range(rng.randint(1, 4))
        ]
        for _ in range(7)
    ]
    references[0].append("dog dog dog dog a dog dog")  # term counts up to 6
    hypotheses = [text for texts in references for text in texts]
    hypotheses += ["", "zebra", "zebra zebra on the mat", "the the the the"]  # unseen n-grams
    return hypotheses, references


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_matrix_equals_the_reference_on_every_pair(seed: int) -> None:
    hypotheses, references = _random_corpus(seed)
    matrix = CiderDMatrix(hypotheses, references)
    frequency = document_frequency(references)
    expected = np.array(
        [
            [reference_cider_d(hyp, refs, frequency, len(references)) for refs in references]
            for hyp in hypotheses
        ]
    )
    got = matrix.full(block_rows=3, dtype=np.float64)
    assert got.shape == (len(hypotheses), len(references))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert expected.max() > 1.0  # the case is not trivially zero
    np.testing.assert_allclose(matrix.rows([4, 0, 4]), expected[[4, 0, 4]], rtol=0, atol=1e-12)


def test_an_image_needs_references() -> None:
    with pytest.raises(ValueError, match="at least one reference"):
        CiderDMatrix(["a"], [["a"], []])


def test_split_matrix_scores_each_caption_against_its_image_captions(tiny: TinyDataset) -> None:
    captions = read_captions(captions_path(tiny.data_dir, tiny.split))
    computation = split_matrix(captions)
    matrix = computation.full(dtype=np.float64)
    images = images_of_captions(captions)
    raw_of = {caption.key: caption.raw for caption in captions}
    for image in images[:3]:
        references = [raw_of[key] for key in image.captions]
        for key in image.captions:
            row = next(caption.row for caption in captions if caption.key == key)
            # Biten et al.: a caption stays among its own image's references
            with_self = reference_cider_d(raw_of[key], references, computation.frequency, 12)
            assert matrix[row, image.row] == pytest.approx(with_self, abs=1e-12)
            others = [
                text for other, text in zip(image.captions, references, strict=True) if other != key
            ]
            without = reference_cider_d(raw_of[key], others, computation.frequency, 12)
            assert with_self > without


def test_progress_wraps_the_block_starts() -> None:
    hypotheses, references = _random_corpus(0)
    seen: list[int] = []

    def progress(starts: Iterable[int]) -> Iterable[int]:
        seen.extend(starts)
        return seen

    CiderDMatrix(hypotheses, references).full(block_rows=4, progress=progress)
    assert seen == list(range(0, len(hypotheses), 4))

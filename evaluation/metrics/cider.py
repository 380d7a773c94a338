"""CIDEr-D of every caption against every image's reference captions (Biten et al. 2022).

``N[c, i]`` is the CIDEr-D score of caption ``c`` (the hypothesis) against the reference
captions of image ``i``, with the settings of Biten et al.'s metric code (``custom_cider.py`` of
``furkanbiten/ncs_metric``, itself pycocoevalcap's ``CiderScorer`` by vrama91):

- text: the caption's raw string, lower-cased, split on white space (no PTB tokenizer);
- n-grams of order 1..4; per order a tf-idf vector, ``tf × (log(#images) − log(max(1, df)))``
  with ``df`` = the number of images whose reference set contains the n-gram (the split's
  reference sets: every image with all its captions);
- per (hypothesis, reference) and order: the clipped cosine
  ``Σ_g min(h_g, r_g) · r_g / (‖h‖ ‖r‖)`` (0 when a norm is 0), times the Gaussian length penalty
  ``exp(−δ² / (2σ²))``, σ = 6, where δ is the difference of the two *bigram* counts (the
  reference code counts the length while looping over order-2 n-grams; for non-empty
  sentences that is the word-count difference);
- averaged over the four orders and over the image's references, ×10.

As in Biten et al.'s all-to-all matrix, a caption is scored against its own image's full
reference set, itself included: ``N[c, image(c)]`` is inflated by the exact self-match. Only the
ground-truth entries are affected; the non-GT metrics of :mod:`evaluation.metrics.semantic` never
read them.

Vectorised form. With ``h = tf_h · idf`` and ``r = tf_r · idf`` (``idf ≥ 0``),
``min(h_g, r_g) · r_g = idf_g² · min(tf_h, tf_r) · tf_r`` and, for counts,
``min(a, b) = Σ_{t ≥ 1} [a ≥ t] [b ≥ t]``. So for every count level ``t`` one sparse product
``H_t · R_tᵀ`` with ``H_t[c, g] = [tf ≥ t] / ‖h‖_{n(g)}`` and
``R_t[r, g] = [tf ≥ t] · tf · idf² / ‖r‖_{n(g)}`` gives the sum over orders of the normalised
clipped dot products of a block of hypotheses with every reference; the length penalty, the
mean over each image's references and the ×10/4 follow densely. :func:`reference_cider_d` is the
straightforward per-pair implementation the vectorised one is checked against.

The matrix of a split is cached on disk by :mod:`evaluation.data.cider_cache`; the parity check
against :func:`reference_cider_d` is :mod:`evaluation.metrics.cider_parity`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from formats.karpathy import CaptionRecord, images_of_captions

MAX_ORDER = 4
SIGMA = 6.0
SCALE = 10.0
DEFAULT_BLOCK_ROWS = 512

Progress = Callable[[Iterable[int]], Iterable[int]]
"""Wraps the block starts of :meth:`CiderDMatrix.full` (e.g. in a progress bar)."""


def cider_tokens(text: str) -> list[str]:
    """The CIDEr-D tokens of a caption: the lower-cased raw string split on white space."""
    return text.lower().split()


def ngram_counts(tokens: Sequence[str], max_order: int = MAX_ORDER) -> Counter[str]:
    """Counts of every n-gram of order 1..``max_order``, keyed by the space-joined tokens
    (tokens hold no white space, so the key identifies the n-gram and its order)."""
    counts: Counter[str] = Counter()
    for order in range(1, max_order + 1):
        for start in range(len(tokens) - order + 1):
            counts[" ".join(tokens[start : start + order])] += 1
    return counts


def _order(ngram: str) -> int:
    return ngram.count(" ") + 1


def document_frequency(references: Sequence[Sequence[str]]) -> Counter[str]:
    """n-gram → the number of reference sets (images) whose captions contain it."""
    frequency: Counter[str] = Counter()
    for texts in references:
        seen: set[str] = set()
        for text in texts:
            seen.update(ngram_counts(cider_tokens(text)))
        frequency.update(seen)
    return frequency


def reference_cider_d(
    hypothesis: str,
    references: Sequence[str],
    frequency: Mapping[str, float],
    image_count: int,
    sigma: float = SIGMA,
) -> float:
    """CIDEr-D of one hypothesis against one reference set, pair by pair (the parity oracle).

    A plain transcription of pycocoevalcap's ``counts2vec`` / ``sim`` / ``compute_cider`` as
    Biten et al. use them, with no vectorisation.

    Args:
        hypothesis: the caption scored (raw text).
        references: the image's reference captions (raw text).
        frequency: n-gram → document frequency over the split's reference sets.
        image_count: the number of reference sets (images) of the split.
        sigma: the length penalty's σ.
    """
    log_images = math.log(float(image_count))

    def vector(text: str) -> tuple[list[dict[str, float]], list[float], int]:
        vec: list[dict[str, float]] = [{} for _ in range(MAX_ORDER)]
        norm = [0.0] * MAX_ORDER
        length = 0
        for ngram, term_frequency in ngram_counts(cider_tokens(text)).items():
            order = _order(ngram) - 1
            weight = float(term_frequency) * (
                log_images - math.log(max(1.0, frequency.get(ngram, 0.0)))
            )
            vec[order][ngram] = weight
            norm[order] += weight**2
            if order == 1:
                length += term_frequency
        return vec, [math.sqrt(value) for value in norm], length

    hyp, hyp_norm, hyp_length = vector(hypothesis)
    total = [0.0] * MAX_ORDER
    for reference in references:
        ref, ref_norm, ref_length = vector(reference)
        delta = float(hyp_length - ref_length)
        for order in range(MAX_ORDER):
            value = sum(
                min(weight, ref[order].get(ngram, 0.0)) * ref[order].get(ngram, 0.0)
                for ngram, weight in hyp[order].items()
            )
            if hyp_norm[order] != 0 and ref_norm[order] != 0:
                value /= hyp_norm[order] * ref_norm[order]
            total[order] += value * math.exp(-(delta**2) / (2 * sigma**2))
    return sum(total) / MAX_ORDER / len(references) * SCALE


class CiderDMatrix:
    """Vectorised CIDEr-D of hypotheses (rows) against image reference sets (columns).

    Args:
        hypotheses: the captions scored, raw text, in row order.
        references: per image (column order), its reference captions, raw text; every image
            needs at least one.
        sigma: the length penalty's σ.
    """

    def __init__(
        self,
        hypotheses: Sequence[str],
        references: Sequence[Sequence[str]],
        sigma: float = SIGMA,
    ) -> None:
        if not references or any(len(texts) == 0 for texts in references):
            raise ValueError("every image needs at least one reference caption")
        self.image_count = len(references)
        self.hypothesis_count = len(hypotheses)
        self.frequency = document_frequency(references)
        flat = [text for texts in references for text in texts]
        sizes = np.array([len(texts) for texts in references], dtype=np.int64)
        self._ref_starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self._ref_scale = SCALE / MAX_ORDER / sizes.astype(np.float64)
        self._sigma = sigma
        vocabulary: dict[str, int] = {}
        ref_counts = [self._counts(text, vocabulary) for text in flat]
        hyp_counts = [self._counts(text, vocabulary) for text in hypotheses]
        orders = np.zeros(len(vocabulary), dtype=np.int64)
        frequencies = np.zeros(len(vocabulary), dtype=np.float64)
        for ngram, column in vocabulary.items():
            orders[column] = _order(ngram) - 1
            frequencies[column] = self.frequency.get(ngram, 0)
        idf = math.log(float(self.image_count)) - np.log(np.maximum(1.0, frequencies))
        ref_tf, self._ref_lengths = _count_matrix(ref_counts, len(vocabulary), orders)
        hyp_tf, self._hyp_lengths = _count_matrix(hyp_counts, len(vocabulary), orders)
        self._levels = max(int(ref_tf.data.max(initial=1)), int(hyp_tf.data.max(initial=1)))
        ref_norms = _order_norms(ref_tf, idf, orders)
        hyp_norms = _order_norms(hyp_tf, idf, orders)
        # R_t: [tf ≥ t] · tf · idf² / ‖r‖ (transposed once for the products); H_t: [tf ≥ t] / ‖h‖
        ref_weight = ref_tf.copy()
        ref_weight.data = ref_weight.data * idf[ref_weight.indices] ** 2
        ref_weight = _divide_by_norms(ref_weight, ref_norms, orders)
        hyp_unit = hyp_tf.copy()
        hyp_unit.data = np.ones_like(hyp_unit.data)
        hyp_unit = _divide_by_norms(hyp_unit, hyp_norms, orders)
        self._ref_levels = [
            _at_level(ref_tf, ref_weight, level).T.tocsr() for level in range(1, self._levels + 1)
        ]
        self._hyp_levels = [
            _at_level(hyp_tf, hyp_unit, level) for level in range(1, self._levels + 1)
        ]

    @staticmethod
    def _counts(text: str, vocabulary: dict[str, int]) -> dict[int, int]:
        counts = ngram_counts(cider_tokens(text))
        return {
            vocabulary.setdefault(ngram, len(vocabulary)): value for ngram, value in counts.items()
        }

    def rows(self, hypotheses: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """CIDEr-D of the given hypothesis rows against every image.

        Args:
            hypotheses: int ``[b]`` row indices into ``hypotheses``.

        Returns:
            float64 ``[b, images]``.
        """
        index = np.asarray(hypotheses, dtype=np.int64)
        similarity = np.zeros((index.size, self._ref_lengths.size), dtype=np.float64)
        for hyp_level, ref_level in zip(self._hyp_levels, self._ref_levels, strict=True):
            block = hyp_level[index]
            if block.nnz:
                similarity += (block @ ref_level).toarray()
        delta = self._hyp_lengths[index][:, None] - self._ref_lengths[None, :]
        similarity *= np.exp(-(delta.astype(np.float64) ** 2) / (2 * self._sigma**2))
        per_image = np.add.reduceat(similarity, self._ref_starts, axis=1)
        return per_image * self._ref_scale[None, :]

    def full(
        self,
        block_rows: int = DEFAULT_BLOCK_ROWS,
        dtype: npt.DTypeLike = np.float32,
        progress: Progress | None = None,
    ) -> npt.NDArray[Any]:
        """The whole ``[hypotheses, images]`` matrix, computed in float64 blocks of
        ``block_rows`` rows and stored as ``dtype``; ``progress`` wraps the block starts."""
        out = np.empty((self.hypothesis_count, self.image_count), dtype=dtype)
        starts: Iterable[int] = range(0, self.hypothesis_count, block_rows)
        for start in starts if progress is None else progress(starts):
            stop = min(start + block_rows, self.hypothesis_count)
            out[start:stop] = self.rows(np.arange(start, stop))
        return out


def _count_matrix(
    counts: Sequence[Mapping[int, int]], columns: int, orders: npt.NDArray[np.int64]
) -> tuple[sp.csr_matrix, npt.NDArray[np.int64]]:
    """CSR term counts ``[texts, vocabulary]`` and each text's bigram count (its length)."""
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(entry) for entry in counts])
    indices = np.fromiter((key for entry in counts for key in entry), np.int64, int(indptr[-1]))
    data = np.fromiter(
        (value for entry in counts for value in entry.values()), np.float64, int(indptr[-1])
    )
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(counts), columns))
    bigrams = sp.csr_matrix(
        (np.where(orders[indices] == 1, data, 0.0), indices, indptr), shape=matrix.shape
    )
    lengths = np.asarray(bigrams.sum(axis=1)).ravel().astype(np.int64)
    return matrix, lengths


def _order_norms(
    tf: sp.csr_matrix, idf: npt.NDArray[np.float64], orders: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Per text and n-gram order, the norm of its tf-idf vector: float64 ``[texts, 4]``."""
    squared = (tf.data * idf[tf.indices]) ** 2
    rows = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
    norms = np.zeros((tf.shape[0], MAX_ORDER), dtype=np.float64)
    np.add.at(norms, (rows, orders[tf.indices]), squared)
    return np.sqrt(norms)


def _divide_by_norms(
    matrix: sp.csr_matrix, norms: npt.NDArray[np.float64], orders: npt.NDArray[np.int64]
) -> sp.csr_matrix:
    """Each entry divided by its row's norm of the entry's order (left as is where that norm
    is 0: the clipped dot product is 0 there anyway, as in the reference code)."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    norm = norms[rows, orders[matrix.indices]]
    scaled = matrix.copy()
    scaled.data = np.where(norm > 0, matrix.data / np.where(norm > 0, norm, 1.0), matrix.data)
    return scaled


def _at_level(tf: sp.csr_matrix, values: sp.csr_matrix, level: int) -> sp.csr_matrix:
    """``values`` kept where the term count is at least ``level`` (same sparsity as ``tf``)."""
    kept = values.copy()
    kept.data = np.where(tf.data >= level, values.data, 0.0)
    kept.eliminate_zeros()
    return kept


def split_matrix(captions: Sequence[CaptionRecord]) -> CiderDMatrix:
    """The CIDEr-D computation of a split: rows = captions (file order), columns = images (row
    order of first appearance), each image's references = its captions' raw text."""
    raw_of = {caption.key: caption.raw for caption in captions}
    references = [[raw_of[key] for key in image.captions] for image in images_of_captions(captions)]
    return CiderDMatrix([caption.raw for caption in captions], references)

"""A CIDEr-like relevance between a caption and an image's reference captions, from text alone.

Biten et al. (WACV 2022) set the margin of each negative from CIDEr between captions instead of
human labels; this module supplies that relevance, vectorised so a whole batch costs one sparse
matrix product. For a caption ``c`` and a reference set ``G`` (the captions of one image)::

    phi(c, G) = (1 / |G|) * sum over r in G of (1 / N) * sum over n = 1..N of cos(g_n(c), g_n(r))

where ``g_n(x)`` is the tf-idf vector of the n-grams of order ``n`` of ``x``: term frequency
(count in ``x``) times ``idf = log(|D| / max(1, df))``, ``D`` the reference sets the model was
fitted on and ``df`` the number of them containing the n-gram — CIDEr's weighting (Vedantam et
al., CVPR 2015, eq. 1-2) with ``N = 4``. Unlike CIDEr-D it has no length penalty, no count
clipping and no ×10, so ``phi`` lies in [0, 1] and is 1 when ``c`` and every reference are the
same text. Tokens are the word-level tokenizer's words (NFKC, lower case, runs of word characters;
the same split as its ``Whitespace`` pre-tokenizer) without the punctuation runs, which CIDEr's
PTB tokenisation drops too.

Computation: each text becomes one sparse row ``v(x) = concat_n u_n(x) / sqrt(N)`` with
``u_n = g_n / ||g_n||`` (zero when ``x`` has no n-gram of order ``n``), so that
``<v(c), v(r)> = (1 / N) * sum_n cos(g_n(c), g_n(r))``; a reference set becomes the mean of its
rows, its *centroid*, and ``phi(c, G) = <v(c), centroid(G)>``. An n-gram absent from the fitted
sets still counts in its text's norm (with ``df`` 0 → ``idf = log |D|``) but has no column, since
it can match no reference.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import scipy.sparse

MAX_NGRAM: Final = 4
# The word runs of tokenizers' Whitespace pre-tokenizer (which also yields punctuation runs).
_WORD: Final = re.compile(r"\w+")

Ngram = tuple[str, ...]


def content_words(text: str) -> list[str]:
    """The words of ``text``: NFKC-normalised, lower-cased runs of word characters."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def ngram_counts(text: str, max_n: int = MAX_NGRAM) -> list[Counter[Ngram]]:
    """Counts of the n-grams of ``text`` by order: element ``n - 1`` counts those of order n."""
    tokens = content_words(text)
    return [
        Counter(tuple(tokens[start : start + n]) for start in range(len(tokens) - n + 1))
        for n in range(1, max_n + 1)
    ]


class CiderRelevance:
    """tf-idf n-gram vectors of captions and reference sets, fitted on a corpus's reference sets.

    ``reference_sets[i]`` are the captions of image ``i`` of the fitting corpus; document
    frequencies are counted over these sets (an n-gram counts once per set). Fitting also embeds
    the fitted captions themselves (``reference_vectors``, ``reference_centroids``), which is
    what training needs; ``text_vectors`` and ``centroids`` embed any other captions, and ``phi``
    scores them: ``phi(c, G)`` as defined in the module docstring.
    """

    def __init__(self, reference_sets: Sequence[Sequence[str]], max_n: int = MAX_NGRAM) -> None:
        """Count document frequencies over ``reference_sets`` and embed them.

        Raises ``ValueError`` when there is no reference set or ``max_n`` < 1.
        """
        if not reference_sets:
            raise ValueError("need at least one reference set to fit document frequencies")
        if max_n < 1:
            raise ValueError(f"max_n must be >= 1, got {max_n}")
        self._max_n = max_n
        counted = [
            [ngram_counts(text, max_n) for text in references] for references in reference_sets
        ]
        document_frequency: Counter[Ngram] = Counter()
        for references in counted:
            present: set[Ngram] = set()
            for per_order in references:
                for counts in per_order:
                    present.update(counts)
            document_frequency.update(present)
        # Sorted so that column ids, and so every float sum, are the same on every run.
        ordered = sorted(document_frequency)
        self._columns = {ngram: index for index, ngram in enumerate(ordered)}
        self._log_documents = math.log(len(reference_sets))
        self._idf = np.array(
            [self._log_documents - math.log(document_frequency[ngram]) for ngram in ordered],
            dtype=np.float64,
        )
        self.reference_vectors = self._vectorise(
            [per_order for references in counted for per_order in references]
        )
        """float64 CSR ``[captions of all fitted sets, feature_count]``, in set then text order."""
        self.reference_centroids = _set_means(
            self.reference_vectors, [len(references) for references in reference_sets]
        )
        """float64 CSR ``[len(reference_sets), feature_count]``: the fitted sets' centroids."""

    @property
    def feature_count(self) -> int:
        """Number of columns: distinct n-grams of the fitted reference sets."""
        return len(self._columns)

    def text_vectors(self, texts: Sequence[str]) -> scipy.sparse.csr_matrix:
        """float64 CSR ``[len(texts), feature_count]``: row ``k`` is ``v(texts[k])``."""
        return self._vectorise([ngram_counts(text, self._max_n) for text in texts])

    def centroids(self, reference_sets: Sequence[Sequence[str]]) -> scipy.sparse.csr_matrix:
        """float64 CSR ``[len(reference_sets), feature_count]``: row ``i`` is the mean of
        ``v(r)`` over ``r`` in ``reference_sets[i]`` (a zero row for an empty set)."""
        flat = [text for references in reference_sets for text in references]
        return _set_means(
            self.text_vectors(flat), [len(references) for references in reference_sets]
        )

    @staticmethod
    def phi(
        text_vectors: scipy.sparse.csr_matrix, centroids: scipy.sparse.csr_matrix
    ) -> npt.NDArray[np.float32]:
        """float32 ``[n_texts, n_sets]``: ``phi(text a, set b)``, clipped to [0, 1]."""
        product = (text_vectors @ centroids.T).toarray()
        # Mathematically within [0, 1] already; the clip only removes float rounding excess.
        clipped: npt.NDArray[np.float32] = np.clip(product, 0.0, 1.0).astype(np.float32)
        return clipped

    def _vectorise(self, counted: Sequence[list[Counter[Ngram]]]) -> scipy.sparse.csr_matrix:
        """Rows ``v(x)`` from each text's per-order n-gram counts (see ``ngram_counts``)."""
        rows: list[int] = []
        columns: list[int] = []
        orders: list[int] = []
        frequencies: list[int] = []
        for row, per_order in enumerate(counted):
            for order, counts in enumerate(per_order):
                for ngram, count in counts.items():
                    rows.append(row)
                    # -1: an n-gram no fitted set has; it weighs in the norm, but has no column.
                    columns.append(self._columns.get(ngram, -1))
                    orders.append(order)
                    frequencies.append(count)
        row_array = np.asarray(rows, dtype=np.int64)
        column_array = np.asarray(columns, dtype=np.int64)
        known = column_array >= 0
        idf = np.full(len(column_array), self._log_documents, dtype=np.float64)
        idf[known] = self._idf[column_array[known]]
        weighted = np.asarray(frequencies, dtype=np.float64) * idf
        # One norm per (text, order): each order's vector is normalised on its own.
        group = row_array * self._max_n + np.asarray(orders, dtype=np.int64)
        norms = np.sqrt(np.bincount(group, weights=weighted * weighted, minlength=0))
        group_norm = norms[group] if len(group) else np.zeros(0)
        # A zero norm (no n-gram of this order, or only n-grams present in every fitted set, idf
        # 0) leaves the order out, as in CIDEr.
        keep = known & (group_norm > 0.0)
        values = weighted[keep] / group_norm[keep] / math.sqrt(self._max_n)
        matrix = scipy.sparse.csr_matrix(
            (values, (row_array[keep], column_array[keep])),
            shape=(len(counted), self.feature_count),
            dtype=np.float64,
        )
        matrix.sum_duplicates()
        return matrix


def _set_means(vectors: scipy.sparse.csr_matrix, sizes: Sequence[int]) -> scipy.sparse.csr_matrix:
    """float64 CSR ``[len(sizes), columns]``: the mean of each run of ``sizes[i]`` consecutive
    rows of ``vectors`` (a zero row where ``sizes[i]`` is 0)."""
    size_array = np.asarray(sizes, dtype=np.int64)
    owners = np.repeat(np.arange(len(size_array)), size_array)
    averaging = scipy.sparse.csr_matrix(
        (1.0 / size_array[owners], (owners, np.arange(len(owners)))),
        shape=(len(size_array), vectors.shape[0]),
    )
    means: scipy.sparse.csr_matrix = (averaging @ vectors).tocsr()
    return means

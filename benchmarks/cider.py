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
ground-truth entries are affected; the non-GT metrics of :mod:`benchmarks.semantic` never read
them.

Vectorised form. With ``h = tf_h · idf`` and ``r = tf_r · idf`` (``idf ≥ 0``),
``min(h_g, r_g) · r_g = idf_g² · min(tf_h, tf_r) · tf_r`` and, for counts,
``min(a, b) = Σ_{t ≥ 1} [a ≥ t] [b ≥ t]``. So for every count level ``t`` one sparse product
``H_t · R_tᵀ`` with ``H_t[c, g] = [tf ≥ t] / ‖h‖_{n(g)}`` and
``R_t[r, g] = [tf ≥ t] · tf · idf² / ‖r‖_{n(g)}`` gives the sum over orders of the normalised
clipped dot products of a block of hypotheses with every reference; the length penalty, the
mean over each image's references and the ×10/4 follow densely. :func:`reference_cider_d` is the
straightforward per-pair implementation the vectorised one is checked against.

The matrix of a split is cached as float32 ``.npy`` (mmap-able; 25,000 × 5,000 = 500 MB; the
float32 rounding is below 1e-6 for scores under 8) with a JSON sidecar holding the captions
file's sha256 and the settings; :func:`load_or_build_cider` reuses a cache whose hash and
settings match and rebuilds otherwise.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import stat
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from tqdm import tqdm

from benchmarks.datasets import Caption, captions_path, images_of_captions, read_captions

logger = logging.getLogger(__name__)

MAX_ORDER = 4
SIGMA = 6.0
SCALE = 10.0
CACHE_FORMAT = 1
DEFAULT_BLOCK_ROWS = 512
FALLBACK_CACHE_DIR = Path("artifacts/cache/cider")

SETTINGS: Mapping[str, object] = {
    "format": CACHE_FORMAT,
    "text": "raw, lower-cased, white-space tokens",
    "max_order": MAX_ORDER,
    "sigma": SIGMA,
    "scale": SCALE,
    "idf": "log(#images) - log(max(1, df)); df over the split's image reference sets",
    "length": "bigram count (reference code)",
    "self_reference": "a caption's own image keeps it among its references (Biten et al.)",
}
"""What a cached matrix was computed with; a cache with other settings is rebuilt."""


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
        show_progress: bool = True,
    ) -> npt.NDArray[Any]:
        """The whole ``[hypotheses, images]`` matrix, computed in float64 blocks of
        ``block_rows`` rows and stored as ``dtype``."""
        out = np.empty((self.hypothesis_count, self.image_count), dtype=dtype)
        starts = range(0, self.hypothesis_count, block_rows)
        for start in tqdm(starts, desc="CIDEr-D rows", unit="block", disable=not show_progress):
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


def split_matrix(captions: Sequence[Caption]) -> CiderDMatrix:
    """The CIDEr-D computation of a split: rows = captions (file order), columns = images (row
    order of first appearance), each image's references = its captions' raw text."""
    raw_of = {caption.key: caption.raw for caption in captions}
    references = [[raw_of[key] for key in image.captions] for image in images_of_captions(captions)]
    return CiderDMatrix([caption.raw for caption in captions], references)


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def default_cache_dir(data_dir: Path) -> Path:
    """``<data>/cider`` (next to the data) when the data folder is meant to be written — its
    owner-write permission bit is set and this process may write it — else
    ``artifacts/cache/cider`` (the shared COCO data is ``r-x``; the permission bit is read
    because ``os.access`` says yes to root whatever the mode)."""
    beside = data_dir / "cider"
    folder = beside if beside.is_dir() else data_dir
    writable = folder.is_dir() and folder.stat().st_mode & stat.S_IWUSR
    if writable and os.access(folder, os.W_OK):
        return beside
    return FALLBACK_CACHE_DIR


@dataclass(frozen=True)
class CachedCider:
    """A split's CIDEr-D matrix and where it came from.

    Attributes:
        scores: float32 ``[captions, images]`` (read-only memory map when loaded from the cache):
            ``scores[c, i]`` = CIDEr-D of caption row ``c`` against image row ``i``.
        path: the ``.npy`` file.
        sha256: the captions file's sha256 the matrix belongs to.
        built: whether this call computed it (else it was read from the cache).
        build_seconds: the wall time of the computation (from the sidecar when cached).
    """

    scores: npt.NDArray[np.float32]
    path: Path
    sha256: str
    built: bool
    build_seconds: float

    def as_report(self) -> dict[str, object]:
        """The report's ``cider`` entry."""
        return {
            "cache_file": str(self.path),
            "captions_sha256": self.sha256,
            "built": self.built,
            "build_seconds": round(self.build_seconds, 1),
            "shape": list(self.scores.shape),
            "dtype": str(self.scores.dtype),
            "settings": dict(SETTINGS),
        }


def cache_paths(cache_dir: Path, split: str, sha256: str) -> tuple[Path, Path]:
    """The matrix and sidecar files of a split's captions file hash."""
    stem = f"cider_{split}_{sha256[:16]}"
    return cache_dir / f"{stem}.npy", cache_dir / f"{stem}.json"


def load_or_build_cider(
    data_dir: Path,
    split: str,
    cache_dir: Path | None = None,
    *,
    show_progress: bool = True,
    rebuild: bool = False,
) -> CachedCider:
    """The split's CIDEr-D matrix: from the cache when its sidecar names the captions file's
    sha256 and :data:`SETTINGS`, else computed (float64 blocks, stored float32) and cached.

    Args:
        data_dir: the data folder (``coco-karpathy-captions/captions_<split>.csv``).
        split: the split name.
        cache_dir: where the cache lives; :func:`default_cache_dir` when ``None``.
        show_progress: tqdm bar while computing.
        rebuild: compute even when a matching cache exists.
    """
    source = captions_path(data_dir, split)
    sha256 = file_sha256(source)
    folder = cache_dir if cache_dir is not None else default_cache_dir(data_dir)
    matrix_path, meta_path = cache_paths(folder, split, sha256)
    if not rebuild and matrix_path.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("captions_sha256") == sha256 and meta.get("settings") == dict(SETTINGS):
            scores = np.load(matrix_path, mmap_mode="r")
            logger.info("CIDEr-D: cached matrix %s %s", matrix_path, scores.shape)
            return CachedCider(scores, matrix_path, sha256, False, float(meta["build_seconds"]))
        logger.info("CIDEr-D: cache %s does not match; rebuilding", meta_path)
    started = time.perf_counter()
    computation = split_matrix(read_captions(source))
    scores = computation.full(show_progress=show_progress).astype(np.float32, copy=False)
    seconds = time.perf_counter() - started
    folder.mkdir(parents=True, exist_ok=True)
    partial = matrix_path.with_suffix(".partial.npy")
    np.save(partial, scores)
    partial.replace(matrix_path)
    meta = {
        "captions_file": str(source),
        "captions_sha256": sha256,
        "split": split,
        "shape": list(scores.shape),
        "dtype": "float32",
        "settings": dict(SETTINGS),
        "build_seconds": seconds,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    logger.info("CIDEr-D: built %s in %.1f s → %s", scores.shape, seconds, matrix_path)
    return CachedCider(scores, matrix_path, sha256, True, seconds)


@dataclass(frozen=True)
class ParityResult:
    """The vectorised matrix against :func:`reference_cider_d` on random pairs.

    Attributes:
        pairs: pairs compared.
        max_abs_diff_float64: largest |vectorised float64 − reference| over the pairs.
        max_abs_diff_stored: largest |stored (float32) − reference|, when a stored matrix was
            given.
        max_score: the largest reference score among the pairs.
    """

    pairs: int
    max_abs_diff_float64: float
    max_abs_diff_stored: float | None
    max_score: float

    def as_report(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "pairs": self.pairs,
            "max_abs_diff_float64": self.max_abs_diff_float64,
            "max_abs_diff_stored": self.max_abs_diff_stored,
            "max_score": self.max_score,
        }


def parity_check(
    captions: Sequence[Caption],
    pairs: int = 2000,
    seed: int = 0,
    stored: npt.NDArray[Any] | None = None,
    matrix: CiderDMatrix | None = None,
) -> ParityResult:
    """Compare the vectorised CIDEr-D with the per-pair reference on random (caption, image)
    pairs — drawn uniformly (``numpy.random.default_rng(seed)``), plus every drawn caption's own
    image, so the self-reference entries are checked too.

    Args:
        captions: the split's captions.
        pairs: how many uniform pairs to draw (own-image pairs come on top).
        seed: the sampling seed.
        stored: the stored (downcast) matrix, checked at the same pairs when given.
        matrix: the split's :class:`CiderDMatrix` (built from ``captions`` when ``None``).
    """
    computation = matrix if matrix is not None else split_matrix(captions)
    images = images_of_captions(captions)
    raw_of = {caption.key: caption.raw for caption in captions}
    image_row = {image.filename: image.row for image in images}
    references = [[raw_of[key] for key in image.captions] for image in images]
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(captions), size=pairs)
    columns = rng.integers(0, len(images), size=pairs)
    own = np.array([image_row[captions[row].filename] for row in rows], dtype=np.int64)
    rows, columns = np.concatenate([rows, rows]), np.concatenate([columns, own])
    distinct, inverse = np.unique(rows, return_inverse=True)
    vectorised = computation.rows(distinct)[inverse, columns]
    expected = np.array(
        [
            reference_cider_d(
                captions[row].raw, references[column], computation.frequency, len(images)
            )
            for row, column in zip(rows.tolist(), columns.tolist(), strict=True)
        ]
    )
    stored_diff = (
        float(np.max(np.abs(np.asarray(stored[rows, columns], dtype=np.float64) - expected)))
        if stored is not None
        else None
    )
    return ParityResult(
        pairs=int(rows.size),
        max_abs_diff_float64=float(np.max(np.abs(vectorised - expected))),
        max_abs_diff_stored=stored_diff,
        max_score=float(expected.max()),
    )


PARITY_TOLERANCE = 1e-6


def build_and_check(
    data_dir: Path,
    split: str,
    cache_dir: Path | None = None,
    *,
    parity_pairs: int = 2000,
    seed: int = 0,
    rebuild: bool = False,
    show_progress: bool = True,
) -> dict[str, object]:
    """``python -m benchmarks cider``: build (or reuse) the split's matrix, then check it
    against :func:`reference_cider_d` on random pairs (:func:`parity_check`).

    Returns:
        The cache facts (:meth:`CachedCider.as_report`), ``parity`` (:class:`ParityResult`)
        and ``parity_ok`` (float64 and stored differences both within
        :data:`PARITY_TOLERANCE`).
    """
    cached = load_or_build_cider(
        data_dir, split, cache_dir, show_progress=show_progress, rebuild=rebuild
    )
    summary: dict[str, object] = cached.as_report()
    if parity_pairs > 0:
        started = time.perf_counter()
        parity = parity_check(
            read_captions(captions_path(data_dir, split)), parity_pairs, seed, cached.scores
        )
        summary["parity"] = parity.as_report()
        summary["parity_seconds"] = round(time.perf_counter() - started, 1)
        summary["parity_ok"] = (
            parity.max_abs_diff_float64 <= PARITY_TOLERANCE
            and (parity.max_abs_diff_stored or 0.0) <= PARITY_TOLERANCE
        )
    return summary

"""The vectorised CIDEr-D matrix checked against the per-pair reference implementation.

:func:`parity_check` draws random (caption, image) pairs of a split — plus every drawn caption's
own image, so the self-reference entries are checked too — and compares
:meth:`evaluation.metrics.cider.CiderDMatrix.rows` (and, when given, the stored float32 matrix)
with :func:`evaluation.metrics.cider.reference_cider_d`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.metrics.cider import CiderDMatrix, reference_cider_d, split_matrix
from formats.karpathy import CaptionRecord, images_of_captions

PARITY_TOLERANCE = 1e-6
"""Largest |vectorised − reference| (float64 and stored) a parity check passes with."""


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

    @property
    def ok(self) -> bool:
        """Whether both differences are within :data:`PARITY_TOLERANCE`."""
        return (
            self.max_abs_diff_float64 <= PARITY_TOLERANCE
            and (self.max_abs_diff_stored or 0.0) <= PARITY_TOLERANCE
        )

    def as_report(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "pairs": self.pairs,
            "max_abs_diff_float64": self.max_abs_diff_float64,
            "max_abs_diff_stored": self.max_abs_diff_stored,
            "max_score": self.max_score,
        }


def parity_check(
    captions: Sequence[CaptionRecord],
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

"""Agreement between an exported model's embeddings and its reference model's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from encoders.variant import ParityReport

DEFAULT_PARITY_THRESHOLD: Final = 0.999
_WORST_INPUT_CHARS: Final = 80


class ParityError(RuntimeError):
    """The exported model disagrees with its reference beyond the allowed threshold."""


def compare_embeddings(
    candidate: npt.NDArray[np.floating],
    reference: npt.NDArray[np.floating],
    inputs: Sequence[str],
    *,
    reference_name: str,
    threshold: float = DEFAULT_PARITY_THRESHOLD,
) -> ParityReport:
    """Row-wise cosine similarity and largest absolute difference of two ``[n, d]`` arrays.

    Row ``i`` of both arrays must embed ``inputs[i]``. Cosines are computed on float64 copies
    normalised here, so un-normalised arrays compare fairly; ``max_abs_diff`` is taken on the raw
    values. Raises ``ValueError`` on mismatched or empty shapes.
    """
    if candidate.shape != reference.shape or candidate.ndim != 2 or len(candidate) == 0:
        raise ValueError(
            f"need two non-empty [n, d] arrays of one shape, got {candidate.shape} and "
            f"{reference.shape}"
        )
    if len(inputs) != len(candidate):
        raise ValueError(f"{len(inputs)} inputs for {len(candidate)} embeddings")
    left = candidate.astype(np.float64)
    right = reference.astype(np.float64)
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    cosines = np.einsum("ij,ij->i", left, right) / norms
    # NaN (from a zero or non-finite row) sorts as the worst so it can never pass unseen.
    worst = int(np.argmin(np.nan_to_num(cosines, nan=-np.inf)))
    return ParityReport(
        reference=reference_name,
        inputs=len(candidate),
        min_cosine=float(np.min(cosines)),
        mean_cosine=float(np.mean(cosines)),
        max_abs_diff=float(np.max(np.abs(left - right))),
        threshold=threshold,
        worst_input=repr(inputs[worst])[:_WORST_INPUT_CHARS],
    )


def check_parity(report: ParityReport) -> None:
    """Raise ``ParityError`` unless ``report.min_cosine`` is a number ≥ ``report.threshold``."""
    # Written as "not >=" so that a NaN minimum fails too.
    if not report.min_cosine >= report.threshold:
        raise ParityError(
            f"parity failed: min cosine {report.min_cosine:.6f} < {report.threshold} against "
            f"{report.reference} (mean {report.mean_cosine:.6f}, worst input {report.worst_input})"
        )

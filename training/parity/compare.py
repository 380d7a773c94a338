"""Agreement between an exported model's embeddings and its reference model's."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from encoders.variant import ParityReport, Tower, VariantManifest, parity_status

DEFAULT_PARITY_THRESHOLD: Final = 0.999
_WORST_INPUT_CHARS: Final = 80


logger = logging.getLogger(__name__)


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
    values. ``status`` is "passed" when the minimum cosine reaches ``threshold``, else
    "below_bar". Raises ``ValueError`` on mismatched or empty shapes.
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
    min_cosine = float(np.min(cosines))
    return ParityReport(
        reference=reference_name,
        inputs=len(candidate),
        min_cosine=min_cosine,
        mean_cosine=float(np.mean(cosines)),
        max_abs_diff=float(np.max(np.abs(left - right))),
        threshold=threshold,
        worst_input=repr(inputs[worst])[:_WORST_INPUT_CHARS],
        status=parity_status(min_cosine, threshold),
    )


@dataclass(frozen=True)
class TowerEmbeddings:
    """One tower's embeddings of the same ``inputs`` by the variant and by its reference.

    ``candidate`` and ``reference``: float ``[n, d]``; row ``i`` of both embeds ``inputs[i]``.
    """

    candidate: npt.NDArray[np.floating]
    reference: npt.NDArray[np.floating]
    inputs: Sequence[str]


def compare_towers(
    towers: Mapping[Tower, TowerEmbeddings],
    *,
    reference_name: str,
    threshold: float = DEFAULT_PARITY_THRESHOLD,
) -> tuple[ParityReport, dict[Tower, ParityReport]]:
    """``compare_embeddings`` over every tower at once and over each tower alone.

    Returns ``(overall, by_tower)``: the overall report's minimum is the worst input of any
    tower; its input names are prefixed with the tower ("text 'a dog'", "image chelsea/...").
    Every tower must share one embedding dimension. Raises ``ValueError`` for no towers.
    """
    if not towers:
        raise ValueError("compare_towers needs at least one tower")
    by_tower = {
        tower: compare_embeddings(
            pair.candidate,
            pair.reference,
            pair.inputs,
            reference_name=reference_name,
            threshold=threshold,
        )
        for tower, pair in towers.items()
    }
    overall = compare_embeddings(
        np.concatenate([pair.candidate for pair in towers.values()]),
        np.concatenate([pair.reference for pair in towers.values()]),
        [f"{tower} {name}" for tower, pair in towers.items() for name in pair.inputs],
        reference_name=reference_name,
        threshold=threshold,
    )
    return overall, by_tower


def check_parity(report: ParityReport) -> None:
    """Raise ``ParityError`` unless ``report.min_cosine`` is a number ≥ ``report.threshold``."""
    # Written as "not >=" so that a NaN minimum fails too.
    if not report.min_cosine >= report.threshold:
        raise ParityError(
            f"parity failed: min cosine {report.min_cosine:.6f} < {report.threshold} against "
            f"{report.reference} (mean {report.mean_cosine:.6f}, worst input {report.worst_input})"
        )


def log_parity(report: ParityReport, subject: str) -> None:
    """Log one parity report; ``subject`` names what was compared (a tower: ``"text"``,
    ``"image"``)."""
    logger.info(
        "%s parity on %d inputs vs %s: min cosine %.6f, mean %.6f, max abs diff %.2e (worst %s)",
        subject,
        report.inputs,
        report.reference,
        report.min_cosine,
        report.mean_cosine,
        report.max_abs_diff,
        report.worst_input,
    )


def log_exported(manifest: VariantManifest, out_dir: Path, started_s: float) -> None:
    """Log a published export: name, fingerprint, folder and the seconds since ``started_s``
    (a ``time.perf_counter()`` value)."""
    logger.info(
        "variant %s (fingerprint %s…) exported to %s in %.1f s",
        manifest.name,
        manifest.fingerprint[:12],
        out_dir,
        time.perf_counter() - started_s,
    )

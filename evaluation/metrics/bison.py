"""COCO-BISON accuracy (Hu et al., ICCV 2019): does the caption score its true image higher?

A model gets a row right when it scores (caption, true image) above (caption, other image); a
tie counts one half (DESIGN §7). Accuracy = (right rows + ½ tied rows) ÷ scored rows. Which rows
can be scored, and with which image sides, is :mod:`evaluation.data.bison_rows`'s business.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class BisonAccuracy:
    """BISON result.

    Attributes:
        accuracy: (right rows + ½ tied rows) ÷ scored rows, 0–1; ``None`` when no row was scored.
        rows: rows scored.
        skipped: rows not scored (an image could not be referenced).
        ties: scored rows whose two scores were equal.
        skipped_reasons: ``skipped`` broken down by reason.
    """

    accuracy: float | None
    rows: int
    skipped: int
    ties: int
    skipped_reasons: dict[str, int]

    def as_report(self) -> dict[str, object]:
        """The ``tasks.bison`` entry of ``report.json``."""
        return {
            "accuracy": self.accuracy,
            "rows": self.rows,
            "skipped": self.skipped,
            "ties": self.ties,
            "skipped_reasons": dict(self.skipped_reasons),
        }


def bison_accuracy(
    true_scores: npt.ArrayLike,
    other_scores: npt.ArrayLike,
    skipped_reasons: dict[str, int] | None = None,
) -> BisonAccuracy:
    """Accuracy from each scored row's (caption, true image) and (caption, other image) scores.

    Args:
        true_scores: ``[rows]`` scores of the caption with its true image.
        other_scores: ``[rows]`` scores of the caption with the other image.
        skipped_reasons: rows not scored, by reason.

    Raises:
        ValueError: the two arrays differ in shape or are not 1-D.
    """
    right = np.asarray(true_scores, dtype=np.float64)
    wrong = np.asarray(other_scores, dtype=np.float64)
    if right.shape != wrong.shape or right.ndim != 1:
        raise ValueError(
            f"need two 1-D score arrays of one length; got {right.shape}, {wrong.shape}"
        )
    wins = int(np.count_nonzero(right > wrong))
    ties = int(np.count_nonzero(right == wrong))
    reasons = dict(skipped_reasons or {})
    return BisonAccuracy(
        accuracy=(wins + 0.5 * ties) / right.size if right.size else None,
        rows=int(right.size),
        skipped=sum(reasons.values()),
        ties=ties,
        skipped_reasons=reasons,
    )

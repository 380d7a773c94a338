"""Reader for Crisscrossed Captions (CxC) aggregated rating CSVs (STS, SIS, SITS)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from index_builder.karpathy import DatasetFormatError


@dataclass(frozen=True)
class CxcRating:
    """One rated pair: two item ids, the mean human score (0–5) and how the pair was sampled."""

    left: str
    right: str
    score: float
    sampling_method: str


def read_ratings(path: Path) -> list[CxcRating]:
    """Read a CxC CSV whose first two columns are item ids (their names differ per task:
    ``caption1,caption2`` for STS, ``image1,image2`` for SIS, ``caption,image`` for SITS)."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or len(header) != 4 or header[2:] != ["agg_score", "sampling_method"]:
            raise DatasetFormatError(f"{path}: unexpected header {header}")
        ratings = []
        for line_no, row in enumerate(reader, start=2):
            if len(row) != 4:
                raise DatasetFormatError(f"{path}:{line_no}: expected 4 fields, got {len(row)}")
            try:
                score = float(row[2])
            except ValueError as exc:
                raise DatasetFormatError(f"{path}:{line_no}: bad score {row[2]!r}") from exc
            if not 0.0 <= score <= 5.0:
                raise DatasetFormatError(f"{path}:{line_no}: score {score} outside 0–5")
            ratings.append(CxcRating(row[0], row[1], score, row[3]))
    return ratings

"""Crisscrossed Captions (CxC) aggregated ratings: ``cxc/<sts|sis|sits>_<split>.csv``.

Columns: two item ids, ``agg_score`` (the mean human score, 0–5) and ``sampling_method`` (how
CxC sampled the pair: ``c2c_cocaption``, ``c2c_isim``, ``i2i_csim``, ``c2i_original``,
``c2i_intrasim``). The item columns name the kind of file (:class:`RatingKind`): ``caption1,
caption2`` for STS (caption–caption), ``image1,image2`` for SIS (image–image), ``caption,
image`` for SITS (caption–image). Captions are CxC caption keys, images file names.
"""

from __future__ import annotations

import csv
import enum
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from formats.csv_records import open_csv
from formats.errors import FormatError
from formats.layout import cxc_path

logger = logging.getLogger(__name__)

RATING_VALUE_COLUMNS: Final = ("agg_score", "sampling_method")
MIN_SCORE: Final = 0.0
MAX_SCORE: Final = 5.0


class RatingKind(enum.Enum):
    """The three CxC rating files: their item column names and the collections they refer to.

    ``value`` is the file stem (``sts`` → ``sts_val.csv``).
    """

    STS = "sts"
    SIS = "sis"
    SITS = "sits"

    @property
    def columns(self) -> tuple[str, str]:
        """The header names of the two item columns, in file order."""
        return _ITEM_COLUMNS[self]

    @property
    def header(self) -> tuple[str, str, str, str]:
        """The file's whole header."""
        first, second = self.columns
        return (first, second, *RATING_VALUE_COLUMNS)

    @property
    def collections(self) -> tuple[str, str]:
        """The collections (``captions`` or ``images``) the two item columns refer to."""
        return _COLLECTIONS[self]

    @property
    def positive_threshold(self) -> float:
        """The CxC paper's inclusive positive threshold on ``agg_score`` (≥ 3; SIS ≥ 2.5)."""
        return 2.5 if self is RatingKind.SIS else 3.0

    def path(self, data_dir: Path, split: str) -> Path:
        """The file of this kind for ``split`` under a data folder (``{data}/cxc/sts_val.csv``)."""
        return cxc_path(data_dir, self.value, split)


_ITEM_COLUMNS: Final = {
    RatingKind.STS: ("caption1", "caption2"),
    RatingKind.SIS: ("image1", "image2"),
    RatingKind.SITS: ("caption", "image"),
}
_COLLECTIONS: Final = {
    RatingKind.STS: ("captions", "captions"),
    RatingKind.SIS: ("images", "images"),
    RatingKind.SITS: ("captions", "images"),
}


@dataclass(frozen=True, slots=True)
class Rating:
    """One aggregated CxC rating: a pair of item ids and its human score.

    Attributes:
        item1: the id in the file's first column (the *query item* of the CxC bootstrap).
        item2: the id in the file's second column.
        agg_score: the aggregated human score, 0–5.
        sampling_method: how CxC sampled the pair (``c2c_cocaption``, ``c2c_isim``, ...).
    """

    item1: str
    item2: str
    agg_score: float
    sampling_method: str


def rating_kind_of_header(fieldnames: Sequence[str]) -> RatingKind | None:
    """The rating kind whose two item column names are the header's first two columns."""
    for kind in RatingKind:
        if tuple(fieldnames[:2]) == kind.columns:
            return kind
    return None


def read_ratings(path: Path, kind: RatingKind | None = None) -> list[Rating]:
    """Read a CxC aggregated-ratings CSV (STS, SIS or SITS), recognising its kind by the header.

    Args:
        path: the CSV file.
        kind: the expected kind; when given, the header must be that kind's.

    Returns:
        One :class:`Rating` per data row, in file order; ``item1`` is the first item column.

    Raises:
        FormatError: with the file and line — the header is not ``<item1>,<item2>,agg_score,
            sampling_method`` of a known (or of the expected) kind, a record has other than
            four fields, or a score is not a number in 0–5.
        OSError: the file cannot be read.
    """
    ratings: list[Rating] = []
    with open_csv(path) as table:
        found = rating_kind_of_header(table.header)
        if found is None or (kind is not None and found is not kind):
            expected = kind.columns if kind is not None else [k.columns for k in RatingKind]
            raise FormatError(
                f"header {list(table.header)} does not name the item columns {expected}",
                path=table.path,
                line=1,
            )
        if table.header != found.header:
            raise FormatError(
                f"header {list(table.header)} is not {list(found.header)}",
                path=table.path,
                line=1,
            )
        for record in table.records():
            first, second, score_text, method = record.fields
            try:
                score = float(score_text)
            except ValueError:
                raise table.error(record, f"agg_score {score_text!r} is not a number") from None
            if not (math.isfinite(score) and MIN_SCORE <= score <= MAX_SCORE):
                raise table.error(record, f"agg_score {score} outside 0–5")
            ratings.append(Rating(first, second, score, method))
    logger.info("read %d %s ratings from %s", len(ratings), found.value, path)
    return ratings


def write_ratings(path: Path, kind: RatingKind, ratings: Iterable[Rating]) -> None:
    """Write a CxC CSV of ``kind`` (LF line ends, as CxC's files), each score as Python prints
    the float (``1.84``, ``3.0``, like CxC's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(kind.header)
        for rating in ratings:
            writer.writerow(
                [rating.item1, rating.item2, repr(rating.agg_score), rating.sampling_method]
            )

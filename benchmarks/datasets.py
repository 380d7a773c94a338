"""Small readers for the evaluation files the harness needs as ground truth.

The benchmark package reads the dataset files itself (it may not import the service or the
encoders). Every file is read with the :mod:`csv` module, never line by line: the Karpathy
captions CSV has a ``raw`` column whose values may contain newlines.

Files:

- Karpathy captions, ``coco-karpathy-captions/captions_{split}.csv``: columns ``sentid,
  cxc_caption_key, image_id, filename, karpathy_image_index, caption_index, text, raw``.
  The row order is the collection's row order in the service.
- CxC aggregated ratings, ``cxc/{sts,sis,sits}_{split}.csv``: two item columns (their names
  depend on the file, see :class:`RatingKind`), ``agg_score`` (0–5) and ``sampling_method``.

The images of a split are not listed in a file of their own: :func:`images_of_captions` derives
them from the captions file (one image per distinct ``filename``, in order of first appearance,
which is the ``images`` collection's row order). BISON files are read by :mod:`benchmarks.bison`.
"""

from __future__ import annotations

import csv
import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

_CAPTION_COLUMNS = ("sentid", "cxc_caption_key", "image_id", "filename", "text")
_RATING_VALUE_COLUMNS = ("agg_score", "sampling_method")


class DatasetError(ValueError):
    """A dataset file is missing a column or holds a value that cannot be parsed."""


@dataclass(frozen=True, slots=True)
class Caption:
    """One caption row of the Karpathy captions CSV.

    Attributes:
        key: the CxC caption key, ``COCO_val2014:sentid:N`` — the caption's id in the service.
        sentid: the COCO caption annotation id ``N``.
        image_id: the COCO image id the caption describes.
        filename: the COCO image file name, which is the image's id in the service.
        text: the caption with white space folded (the string the index embedded).
        raw: the exact original string (may contain newlines); equals ``text`` when absent.
        row: the 0-based position of the row in the file (the service's collection row).
    """

    key: str
    sentid: int
    image_id: int
    filename: str
    text: str
    raw: str
    row: int


@dataclass(frozen=True, slots=True)
class ImageEntry:
    """One image of a split, as the captions file describes it.

    Attributes:
        filename: the image file name — the image's id in the service's ``images`` collection.
        image_id: the numeric image id (COCO's, or the scenes corpus's).
        row: the 0-based position among the split's images (order of first appearance in the
            captions file; the ``images`` collection's row order).
        captions: the keys of the image's captions, in captions-file order (5 for COCO).
    """

    filename: str
    image_id: int
    row: int
    captions: tuple[str, ...]


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


class RatingKind(enum.Enum):
    """The three CxC rating files: their item column names and the service collections.

    ``value`` is the file stem (``sts`` → ``sts_val.csv``).
    """

    STS = "sts"
    SIS = "sis"
    SITS = "sits"

    @property
    def columns(self) -> tuple[str, str]:
        """The header names of the two item columns, in file order."""
        return {
            RatingKind.STS: ("caption1", "caption2"),
            RatingKind.SIS: ("image1", "image2"),
            RatingKind.SITS: ("caption", "image"),
        }[self]

    @property
    def collections(self) -> tuple[str, str]:
        """The service collections the two item columns refer to, in file order."""
        return {
            RatingKind.STS: ("captions", "captions"),
            RatingKind.SIS: ("images", "images"),
            RatingKind.SITS: ("captions", "images"),
        }[self]

    @property
    def positive_threshold(self) -> float:
        """The CxC paper's inclusive positive threshold on ``agg_score`` (≥ 3; SIS ≥ 2.5)."""
        return 2.5 if self is RatingKind.SIS else 3.0

    def path(self, data_dir: Path, split: str) -> Path:
        """The file of this kind for ``split`` under a data folder (``{data}/cxc/sts_val.csv``)."""
        return data_dir / "cxc" / f"{self.value}_{split}.csv"


def images_of_captions(captions: Sequence[Caption]) -> list[ImageEntry]:
    """The split's images, derived from its captions.

    Args:
        captions: the captions file's rows, in file order.

    Returns:
        One :class:`ImageEntry` per distinct ``filename``, in order of first appearance
        (``row`` = 0, 1, ...), each with its caption keys in file order.

    Raises:
        DatasetError: one file name carries two image ids, or one image id two file names.
    """
    keys_of: dict[str, list[str]] = {}
    id_of: dict[str, int] = {}
    name_of: dict[int, str] = {}
    for caption in captions:
        known_id = id_of.setdefault(caption.filename, caption.image_id)
        known_name = name_of.setdefault(caption.image_id, caption.filename)
        if known_id != caption.image_id or known_name != caption.filename:
            raise DatasetError(
                f"caption {caption.key}: image {caption.filename!r} / id {caption.image_id} "
                f"disagrees with an earlier row ({known_name!r} / {known_id})"
            )
        keys_of.setdefault(caption.filename, []).append(caption.key)
    return [
        ImageEntry(filename=name, image_id=id_of[name], row=row, captions=tuple(keys))
        for row, (name, keys) in enumerate(keys_of.items())
    ]


def captions_path(data_dir: Path, split: str) -> Path:
    """The Karpathy captions file of ``split`` under a data folder."""
    return data_dir / "coco-karpathy-captions" / f"captions_{split}.csv"


def _require_columns(
    path: Path, fieldnames: Sequence[str] | None, required: tuple[str, ...]
) -> None:
    present = set(fieldnames or [])
    missing = [name for name in required if name not in present]
    if missing:
        raise DatasetError(f"{path}: missing column(s) {missing}; header is {fieldnames}")


def read_captions(path: Path) -> list[Caption]:
    """Read a Karpathy captions CSV.

    Args:
        path: the CSV file (``captions_{split}.csv``).

    Returns:
        One :class:`Caption` per data row, in file order (``row`` = 0, 1, ...).

    Raises:
        DatasetError: a required column is missing, a number does not parse, or a caption key
            appears twice.
    """
    captions: list[Caption] = []
    seen: set[str] = set()
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        _require_columns(path, reader.fieldnames, _CAPTION_COLUMNS)
        for row_number, record in enumerate(reader):
            key = record["cxc_caption_key"]
            if key in seen:
                raise DatasetError(f"{path}: caption key {key!r} appears twice")
            seen.add(key)
            try:
                sentid = int(record["sentid"])
                image_id = int(record["image_id"])
            except ValueError as error:
                raise DatasetError(f"{path}: data row {row_number}: {error}") from error
            text = record["text"]
            raw = record.get("raw")
            captions.append(
                Caption(
                    key=key,
                    sentid=sentid,
                    image_id=image_id,
                    filename=record["filename"],
                    text=text,
                    raw=text if raw is None else raw,
                    row=row_number,
                )
            )
    logger.info("read %d captions from %s", len(captions), path)
    return captions


def read_ratings(path: Path, kind: RatingKind | None = None) -> list[Rating]:
    """Read a CxC aggregated-ratings CSV (STS, SIS or SITS).

    Args:
        path: the CSV file.
        kind: the expected kind; when given, the header's item columns must be that kind's
            names. When ``None``, the kind is recognised from the header.

    Returns:
        One :class:`Rating` per data row, in file order; ``item1`` is the first item column.

    Raises:
        DatasetError: the header matches no (or not the expected) kind, or a score does not
            parse.
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        found = rating_kind_of_header(reader.fieldnames or [])
        if found is None or (kind is not None and found is not kind):
            expected = kind.columns if kind is not None else [k.columns for k in RatingKind]
            raise DatasetError(
                f"{path}: header {reader.fieldnames} does not name the item columns {expected}"
            )
        _require_columns(path, reader.fieldnames, _RATING_VALUE_COLUMNS)
        first, second = found.columns
        ratings: list[Rating] = []
        for row_number, record in enumerate(reader):
            try:
                score = float(record["agg_score"])
            except ValueError as error:
                raise DatasetError(f"{path}: data row {row_number}: {error}") from error
            ratings.append(
                Rating(
                    item1=record[first],
                    item2=record[second],
                    agg_score=score,
                    sampling_method=record["sampling_method"],
                )
            )
    logger.info("read %d %s ratings from %s", len(ratings), found.value, path)
    return ratings


def rating_kind_of_header(fieldnames: Sequence[str]) -> RatingKind | None:
    """The rating kind whose two item column names are the header's first two columns."""
    for kind in RatingKind:
        if tuple(fieldnames[:2]) == kind.columns:
            return kind
    return None

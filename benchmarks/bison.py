"""COCO-BISON: binary image selection (Hu et al., ICCV 2019) — reader, row resolution, accuracy.

A BISON row holds one caption and two images, one of which (``true_image_id``) the caption
describes. A model gets the row right when it scores (caption, true image) above (caption, other
image); a tie counts one half (DESIGN §7). Accuracy = (right rows + ½ tied rows) ÷ scored rows.

File (``bison/bison_<split>.csv``; the real COCO file is ``bison/bison_shared.csv``): columns
``bison_id, caption, image_id_0, image_id_1, true_image_id, true_image_karpathy_split,
caption_id, caption_id_source``. Image ids are numbers; the service knows images by file name,
so :class:`ImageNamer` maps an id to a file name — through the captions file where the image is
in the split, else through the file-name pattern the captions file uses (``COCO_val2014_`` +
12-digit id + ``.jpg`` for COCO, ``scenes_<split>_`` + 12 digits + ``.png`` for the scenes
corpus).

Which side each image takes is decided by the caller's rule (:mod:`benchmarks.images`: item
reference when served, upload when the file is there, else the row is skipped and counted).
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from benchmarks.datasets import DatasetError, ImageEntry

logger = logging.getLogger(__name__)

BISON_COLUMNS = (
    "bison_id",
    "caption",
    "image_id_0",
    "image_id_1",
    "true_image_id",
    "true_image_karpathy_split",
    "caption_id",
    "caption_id_source",
)
SHARED_FILE = "bison_shared.csv"
COCO_VAL2014_PATTERN = ("COCO_val2014_", ".jpg")

SideT = TypeVar("SideT")


@dataclass(frozen=True, slots=True)
class BisonRow:
    """One BISON row.

    Attributes:
        bison_id: the row's id in the file.
        caption: the caption text.
        image_id_0: the first image's numeric id.
        image_id_1: the second image's numeric id.
        true_image_id: the image the caption describes (``image_id_0`` or ``image_id_1``).
        true_image_split: ``true_image_karpathy_split`` (``val``, ``other``, ...).
        caption_id: the caption's annotation id (``sentid``) where known, else ``None``.
        caption_id_source: where ``caption_id`` comes from (``karpathy-val``, ...; may be empty).
    """

    bison_id: int
    caption: str
    image_id_0: int
    image_id_1: int
    true_image_id: int
    true_image_split: str
    caption_id: int | None
    caption_id_source: str

    @property
    def other_image_id(self) -> int:
        """The image the caption does not describe."""
        return self.image_id_1 if self.true_image_id == self.image_id_0 else self.image_id_0


def bison_path(data_dir: Path, split: str) -> Path:
    """``<data>/bison/bison_<split>.csv`` (the scenes corpus's file name)."""
    return data_dir / "bison" / f"bison_{split}.csv"


def default_bison_path(data_dir: Path, split: str) -> Path | None:
    """The BISON file to use when none is given: ``bison_<split>.csv`` if present, else the real
    COCO file ``bison_shared.csv`` if present, else ``None``."""
    for candidate in (bison_path(data_dir, split), data_dir / "bison" / SHARED_FILE):
        if candidate.is_file():
            return candidate
    return None


def read_bison(path: Path) -> list[BisonRow]:
    """Read a BISON CSV.

    Returns:
        One :class:`BisonRow` per data row, in file order.

    Raises:
        DatasetError: a required column is missing, a number does not parse, or
            ``true_image_id`` is neither of the row's images.
    """
    rows: list[BisonRow] = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in BISON_COLUMNS if name not in (reader.fieldnames or [])]
        if missing:
            raise DatasetError(f"{path}: missing column(s) {missing}; header {reader.fieldnames}")
        for number, record in enumerate(reader):
            try:
                caption_id = record["caption_id"].strip()
                row = BisonRow(
                    bison_id=int(record["bison_id"]),
                    caption=record["caption"],
                    image_id_0=int(record["image_id_0"]),
                    image_id_1=int(record["image_id_1"]),
                    true_image_id=int(record["true_image_id"]),
                    true_image_split=record["true_image_karpathy_split"],
                    caption_id=int(caption_id) if caption_id else None,
                    caption_id_source=record["caption_id_source"],
                )
            except ValueError as error:
                raise DatasetError(f"{path}: data row {number}: {error}") from error
            if row.true_image_id not in (row.image_id_0, row.image_id_1):
                raise DatasetError(
                    f"{path}: data row {number}: true_image_id {row.true_image_id} is neither "
                    f"{row.image_id_0} nor {row.image_id_1}"
                )
            rows.append(row)
    logger.info("read %d BISON rows from %s", len(rows), path)
    return rows


def infer_filename_pattern(images: Sequence[ImageEntry]) -> tuple[str, str] | None:
    """The ``(prefix, suffix)`` around the 12-digit zero-padded id shared by every file name.

    ``COCO_val2014_000000123456.jpg`` gives ``("COCO_val2014_", ".jpg")``. Returns ``None``
    when there are no images or the names do not all follow one such pattern.
    """
    pattern: tuple[str, str] | None = None
    for image in images:
        digits = f"{image.image_id:012d}"
        prefix, found, suffix = image.filename.rpartition(digits)
        if not found:
            return None
        if pattern is None:
            pattern = (prefix, suffix)
        elif pattern != (prefix, suffix):
            return None
    return pattern


@dataclass(frozen=True)
class ImageNamer:
    """Maps a numeric image id to the file name the service and the images folder use.

    Attributes:
        by_id: the split's images (from the captions file), id → file name.
        pattern: ``(prefix, suffix)`` for ids outside the split (``prefix + f"{id:012d}" +
            suffix``), or ``None`` to leave them unnamed.
    """

    by_id: dict[int, str]
    pattern: tuple[str, str] | None

    @classmethod
    def from_images(cls, images: Sequence[ImageEntry], dataset: str) -> ImageNamer:
        """The namer of a split: its own images, and the pattern its file names follow; for the
        ``coco-karpathy`` dataset, COCO val2014's pattern when none can be inferred."""
        pattern = infer_filename_pattern(images)
        if pattern is None and dataset == "coco-karpathy":
            pattern = COCO_VAL2014_PATTERN
        return cls(by_id={image.image_id: image.filename for image in images}, pattern=pattern)

    def __call__(self, image_id: int) -> str | None:
        """The file name of ``image_id``, or ``None`` when it cannot be named."""
        name = self.by_id.get(image_id)
        if name is None and self.pattern is not None:
            prefix, suffix = self.pattern
            name = f"{prefix}{image_id:012d}{suffix}"
        return name


@dataclass
class BisonPlan(Generic[SideT]):
    """The scorable rows of a BISON file and the sides to score.

    Attributes:
        rows: indices (into the file's rows) of the rows to score.
        captions: per scored row, its caption text.
        true_sides: per scored row, the side of its true image.
        other_sides: per scored row, the side of its other image.
        skipped: rows left out, by reason (``unnamed_image``: an id with no file name;
            ``image_unavailable``: an image neither served nor uploadable).
        total: rows in the file.
    """

    rows: list[int] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    true_sides: list[SideT] = field(default_factory=list)
    other_sides: list[SideT] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    total: int = 0


def plan_bison(
    rows: Sequence[BisonRow],
    namer: Callable[[int], str | None],
    side_of: Callable[[str], SideT | None],
) -> BisonPlan[SideT]:
    """Resolve each row's two images to sides; rows with an unresolvable image are skipped.

    Args:
        rows: the BISON rows.
        namer: image id → file name (``None`` when unknown).
        side_of: file name → the side to score it by, or ``None`` when unavailable.
    """
    plan: BisonPlan[SideT] = BisonPlan(total=len(rows))
    for index, row in enumerate(rows):
        names = (namer(row.true_image_id), namer(row.other_image_id))
        if names[0] is None or names[1] is None:
            plan.skipped["unnamed_image"] = plan.skipped.get("unnamed_image", 0) + 1
            continue
        true_side, other_side = side_of(names[0]), side_of(names[1])
        if true_side is None or other_side is None:
            plan.skipped["image_unavailable"] = plan.skipped.get("image_unavailable", 0) + 1
            continue
        plan.rows.append(index)
        plan.captions.append(row.caption)
        plan.true_sides.append(true_side)
        plan.other_sides.append(other_side)
    return plan


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

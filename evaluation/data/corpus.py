"""One split's evaluation data, loaded once: captions, images, CxC ratings, BISON rows.

The layout is that of ``../shared/data`` (and of the generated scenes corpus)::

    <data>/coco-karpathy-captions/captions_<split>.csv     required
    <data>/cxc/sts_<split>.csv, sis_<split>.csv, sits_<split>.csv   each optional
    <data>/bison/bison_<split>.csv  (or bison_shared.csv, or --bison PATH)   optional
    <data>/images/<split>/          image files (scenes corpus; optional)

A missing optional file is not an error: the tasks that need it are skipped and the reason is
reported (:mod:`evaluation.data.task_plan`). The files are read by :mod:`formats`' readers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.data.bison_rows import ImageNamer
from formats.bison import BisonRow, read_bison
from formats.cxc import Rating, RatingKind, read_ratings
from formats.karpathy import CaptionRecord, ImageEntry, images_of_captions, read_captions
from formats.layout import bison_path, captions_path, default_bison_path, images_dir

DATASETS = ("coco-karpathy", "scenes")


@dataclass(frozen=True)
class CxcData:
    """A split's ground truth.

    Attributes:
        dataset: ``coco-karpathy`` or ``scenes`` (decides the fallback image-name pattern).
        split: the split name (``val``, ``test``).
        captions: the captions file's rows (row order = the ``captions`` collection's).
        images: the split's images (row order = the ``images`` collection's).
        ratings: the CxC ratings of each kind whose file exists.
        bison: the BISON rows, or ``None`` when there is no BISON file.
        bison_file: the BISON file read, or ``None``.
        missing: data kind (``sts``, ``sis``, ``sits``, ``bison``) → the path looked for, for
            each optional file that was absent.
    """

    dataset: str
    split: str
    captions: list[CaptionRecord]
    images: list[ImageEntry]
    ratings: Mapping[RatingKind, list[Rating]] = field(default_factory=dict)
    bison: list[BisonRow] | None = None
    bison_file: Path | None = None
    missing: Mapping[str, Path] = field(default_factory=dict)

    def image_namer(self) -> ImageNamer:
        """Numeric image id → file name, for BISON (see
        :class:`evaluation.data.bison_rows.ImageNamer`)."""
        return ImageNamer.from_images(self.images, self.dataset)


def load_cxc_data(
    data_dir: Path,
    split: str,
    *,
    dataset: str = "coco-karpathy",
    bison_file: Path | None = None,
    kinds: tuple[RatingKind, ...] = tuple(RatingKind),
    with_bison: bool = True,
) -> CxcData:
    """Read a split's files.

    Args:
        data_dir: the data folder.
        split: split name in the file names.
        dataset: ``coco-karpathy`` or ``scenes``.
        bison_file: the BISON file; by default ``bison/bison_<split>.csv``, else
            ``bison/bison_shared.csv``. A given path must exist.
        kinds: the rating kinds to read (a kind not read is neither loaded nor reported
            missing).
        with_bison: whether to read the BISON file at all.

    Raises:
        FileNotFoundError: the captions file, or a given ``bison_file``, does not exist.
        formats.errors.FormatError: a file is malformed.
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {list(DATASETS)}; got {dataset!r}")
    captions = read_captions(captions_path(data_dir, split))
    ratings: dict[RatingKind, list[Rating]] = {}
    missing: dict[str, Path] = {}
    for kind in kinds:
        path = kind.path(data_dir, split)
        if path.is_file():
            ratings[kind] = read_ratings(path, kind)
        else:
            missing[kind.value] = path
    bison: list[BisonRow] | None = None
    chosen: Path | None = None
    if with_bison:
        if bison_file is not None and not bison_file.is_file():
            raise FileNotFoundError(f"BISON file {bison_file} does not exist")
        chosen = bison_file or default_bison_path(data_dir, split)
        if chosen is None:
            missing["bison"] = bison_path(data_dir, split)
        else:
            bison = read_bison(chosen)
    return CxcData(
        dataset=dataset,
        split=split,
        captions=captions,
        images=images_of_captions(captions),
        ratings=ratings,
        bison=bison,
        bison_file=chosen,
        missing=missing,
    )


def default_images_dir(data_dir: Path, split: str) -> Path | None:
    """``<data>/images/<split>`` when that folder exists (the scenes corpus layout), else None."""
    candidate = images_dir(data_dir, split)
    return candidate if candidate.is_dir() else None

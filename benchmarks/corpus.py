"""One split's evaluation data, loaded once: captions, images, CxC ratings, BISON rows.

The layout is that of ``../shared/data`` (and of the generated scenes corpus)::

    <data>/coco-karpathy-captions/captions_<split>.csv     required
    <data>/cxc/sts_<split>.csv, sis_<split>.csv, sits_<split>.csv   each optional
    <data>/bison/bison_<split>.csv  (or bison_shared.csv, or --bison PATH)   optional
    <data>/images/<split>/          image files (scenes corpus; optional)

A missing optional file is not an error: the tasks that need it are skipped and the reason is
reported (:mod:`benchmarks.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.bison import BisonRow, ImageNamer, default_bison_path, read_bison
from benchmarks.datasets import (
    Caption,
    ImageEntry,
    Rating,
    RatingKind,
    captions_path,
    images_of_captions,
    read_captions,
    read_ratings,
)

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
    captions: list[Caption]
    images: list[ImageEntry]
    ratings: Mapping[RatingKind, list[Rating]] = field(default_factory=dict)
    bison: list[BisonRow] | None = None
    bison_file: Path | None = None
    missing: Mapping[str, Path] = field(default_factory=dict)

    def image_namer(self) -> ImageNamer:
        """Numeric image id → file name, for BISON (see :class:`benchmarks.bison.ImageNamer`)."""
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
        DatasetError: a file is malformed.
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
            missing["bison"] = data_dir / "bison" / f"bison_{split}.csv"
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

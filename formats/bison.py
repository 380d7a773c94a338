"""COCO-BISON rows (``bison/bison_shared.csv`` for COCO, ``bison/bison_<split>.csv`` for the
scenes corpus): a caption, two images, and which of them the caption describes.

Columns: ``bison_id, caption, image_id_0, image_id_1, true_image_id, true_image_karpathy_split,
caption_id, caption_id_source``. Image ids are numbers (see :mod:`formats.ids` for the file
names they map to); ``caption_id`` may be empty.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from formats.csv_records import open_csv

logger = logging.getLogger(__name__)

BISON_COLUMNS: Final = (
    "bison_id",
    "caption",
    "image_id_0",
    "image_id_1",
    "true_image_id",
    "true_image_karpathy_split",
    "caption_id",
    "caption_id_source",
)
_INTEGER_COLUMNS: Final = ("bison_id", "image_id_0", "image_id_1", "true_image_id")


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


def read_bison(path: Path) -> list[BisonRow]:
    """Read a BISON CSV.

    Returns:
        One :class:`BisonRow` per data row, in file order.

    Raises:
        FormatError: with the file and line — a column is missing, a record has the wrong
            number of fields, a number does not parse, or ``true_image_id`` is neither of the
            row's images.
        OSError: the file cannot be read.
    """
    rows: list[BisonRow] = []
    with open_csv(path) as table:
        column = table.require_columns(BISON_COLUMNS)
        for record in table.records():
            fields = {name: record.fields[column[name]] for name in BISON_COLUMNS}
            numbers = {name: table.integer(record, name, fields[name]) for name in _INTEGER_COLUMNS}
            caption_id = fields["caption_id"].strip()
            row = BisonRow(
                bison_id=numbers["bison_id"],
                caption=fields["caption"],
                image_id_0=numbers["image_id_0"],
                image_id_1=numbers["image_id_1"],
                true_image_id=numbers["true_image_id"],
                true_image_split=fields["true_image_karpathy_split"],
                caption_id=table.integer(record, "caption_id", caption_id) if caption_id else None,
                caption_id_source=fields["caption_id_source"],
            )
            if row.true_image_id not in (row.image_id_0, row.image_id_1):
                raise table.error(
                    record,
                    f"true_image_id {row.true_image_id} is neither {row.image_id_0} nor "
                    f"{row.image_id_1}",
                )
            rows.append(row)
    logger.info("read %d BISON rows from %s", len(rows), path)
    return rows


def write_bison(path: Path, rows: Iterable[BisonRow]) -> None:
    """Write a BISON CSV with the real file's columns (the csv module's CRLF line ends); an
    unknown ``caption_id`` is written empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(BISON_COLUMNS)
        for row in rows:
            writer.writerow(
                [
                    row.bison_id,
                    row.caption,
                    row.image_id_0,
                    row.image_id_1,
                    row.true_image_id,
                    row.true_image_split,
                    "" if row.caption_id is None else row.caption_id,
                    row.caption_id_source,
                ]
            )

"""The Karpathy-split captions CSV (``coco-karpathy-captions/captions_<split>.csv``): its row
type, its reader and writer, and the split's images derived from it.

Columns: ``sentid, cxc_caption_key, image_id, filename, karpathy_image_index, caption_index,
text, raw``. ``cxc_caption_key`` is the caption's id (``COCO_val2014:sentid:N``), ``filename``
its image's id; ``text`` is the caption with white space folded (what an index embeds), ``raw``
the exact original string, which may hold newlines — so the file is read with the :mod:`csv`
module, never line by line. The row order is the order of a bundle's ``captions`` collection.

The images of a split have no file of their own: :func:`images_of_captions` derives them (one
per distinct ``filename``, in order of first appearance — the ``images`` collection's order).
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from formats.csv_records import CsvRecord, CsvTable, open_csv
from formats.errors import FormatError

logger = logging.getLogger(__name__)

CAPTION_COLUMNS: Final = (
    "sentid",
    "cxc_caption_key",
    "image_id",
    "filename",
    "karpathy_image_index",
    "caption_index",
    "text",
    "raw",
)
_INTEGER_COLUMNS: Final = ("sentid", "image_id", "karpathy_image_index", "caption_index")


@dataclass(frozen=True, slots=True)
class CaptionRecord:
    """One caption row.

    Attributes:
        sentid: the caption's annotation id ``N`` (the key CxC uses).
        key: the CxC caption key, ``COCO_val2014:sentid:N`` — the caption's id in a bundle.
        image_id: the numeric id of the image the caption describes.
        filename: the image's file name — the image's id in a bundle (a plain name).
        image_index: ``karpathy_image_index``, the image's position in the Karpathy split.
        caption_index: the caption's position among its image's captions (0–4 for COCO).
        text: the caption with white space folded (the string an index embeds).
        raw: the exact original string (may contain newlines).
        row: the 0-based position of the row among the file's data rows.
    """

    sentid: int
    key: str
    image_id: int
    filename: str
    image_index: int
    caption_index: int
    text: str
    raw: str
    row: int


@dataclass(frozen=True, slots=True)
class ImageEntry:
    """One image of a split, as the captions file describes it.

    Attributes:
        filename: the image file name — the image's id in a bundle's ``images`` collection.
        image_id: the numeric image id (COCO's, or the scenes corpus's).
        row: the 0-based position among the split's images (order of first appearance in the
            captions file; the ``images`` collection's row order).
        captions: the keys of the image's captions, in captions-file order (5 for COCO).
    """

    filename: str
    image_id: int
    row: int
    captions: tuple[str, ...]


def read_captions(path: Path) -> list[CaptionRecord]:
    """Read every caption of a Karpathy captions CSV, in file order.

    Raises:
        FormatError: with the file and the line where the offending record starts — a column
            is missing, a record has the wrong number of fields, an integer column does not
            parse, a file name is not a plain name, a caption key appears twice, or one file
            name carries two image ids (or one image id two file names).
        OSError: the file cannot be read.
    """
    records: list[CaptionRecord] = []
    with open_csv(path) as table:
        column = table.require_columns(CAPTION_COLUMNS)
        first_line: dict[str, int] = {}
        id_of: dict[str, int] = {}
        name_of: dict[int, str] = {}
        for record in table.records():
            caption = _caption(table, record, column)
            if caption.key in first_line:
                raise table.error(
                    record,
                    f"caption key {caption.key!r} appears twice (first at line "
                    f"{first_line[caption.key]})",
                )
            first_line[caption.key] = record.line
            known_id = id_of.setdefault(caption.filename, caption.image_id)
            known_name = name_of.setdefault(caption.image_id, caption.filename)
            if known_id != caption.image_id or known_name != caption.filename:
                raise table.error(record, _disagreement(caption, known_name, known_id))
            records.append(caption)
    logger.info("read %d captions from %s", len(records), path)
    return records


def _caption(table: CsvTable, record: CsvRecord, column: dict[str, int]) -> CaptionRecord:
    fields = record.fields
    numbers = {name: table.integer(record, name, fields[column[name]]) for name in _INTEGER_COLUMNS}
    filename = fields[column["filename"]]
    if not is_plain_filename(filename):
        raise table.error(record, f"file name {filename!r} is not a plain name")
    return CaptionRecord(
        sentid=numbers["sentid"],
        key=fields[column["cxc_caption_key"]],
        image_id=numbers["image_id"],
        filename=filename,
        image_index=numbers["karpathy_image_index"],
        caption_index=numbers["caption_index"],
        text=fields[column["text"]],
        raw=fields[column["raw"]],
        row=record.number,
    )


def is_plain_filename(name: str) -> bool:
    """Whether ``name`` is a file name with no folder part (and not hidden), safe to join to an
    images folder."""
    return bool(name) and Path(name).name == name and not name.startswith(".")


def _disagreement(caption: CaptionRecord, known_name: str, known_id: int) -> str:
    return (
        f"caption {caption.key}: image {caption.filename!r} / id {caption.image_id} "
        f"disagrees with an earlier row ({known_name!r} / {known_id})"
    )


def write_captions(path: Path, captions: Iterable[CaptionRecord]) -> None:
    """Write a Karpathy captions CSV (the csv module's CRLF line ends, as the real file has),
    one row per caption in the given order (``row`` is not written: it is the position)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CAPTION_COLUMNS)
        for caption in captions:
            writer.writerow(
                [
                    caption.sentid,
                    caption.key,
                    caption.image_id,
                    caption.filename,
                    caption.image_index,
                    caption.caption_index,
                    caption.text,
                    caption.raw,
                ]
            )


def images_of_captions(captions: Sequence[CaptionRecord]) -> list[ImageEntry]:
    """The split's images, derived from its captions.

    Returns:
        One :class:`ImageEntry` per distinct ``filename``, in order of first appearance
        (``row`` = 0, 1, ...), each with its caption keys in file order.

    Raises:
        FormatError: one file name carries two image ids, or one image id two file names
            (never for rows :func:`read_captions` returned: it refuses such files).
    """
    keys_of: dict[str, list[str]] = {}
    id_of: dict[str, int] = {}
    name_of: dict[int, str] = {}
    for caption in captions:
        known_id = id_of.setdefault(caption.filename, caption.image_id)
        known_name = name_of.setdefault(caption.image_id, caption.filename)
        if known_id != caption.image_id or known_name != caption.filename:
            raise FormatError(_disagreement(caption, known_name, known_id))
        keys_of.setdefault(caption.filename, []).append(caption.key)
    return [
        ImageEntry(filename=name, image_id=id_of[name], row=row, captions=tuple(keys))
        for row, (name, keys) in enumerate(keys_of.items())
    ]

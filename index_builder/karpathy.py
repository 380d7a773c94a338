"""Reader for the Karpathy-split captions CSV (``captions_<split>.csv``)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

EXPECTED_COLUMNS = (
    "sentid",
    "cxc_caption_key",
    "image_id",
    "filename",
    "karpathy_image_index",
    "caption_index",
    "text",
    "raw",
)


@dataclass(frozen=True)
class CaptionRecord:
    """One caption row; ``key`` is the CxC caption key used as the item id."""

    sentid: int
    key: str
    image_id: int
    filename: str
    image_index: int
    caption_index: int
    text: str
    raw: str

    def metadata(self) -> dict[str, object]:
        """JSON-serialisable metadata stored beside the id in a bundle."""
        return {
            "text": self.text,
            "image_id": self.image_id,
            "filename": self.filename,
            "sentid": self.sentid,
        }


class DatasetFormatError(ValueError):
    """A dataset file does not have the expected columns or values."""


def read_captions(path: Path) -> list[CaptionRecord]:
    """Read every caption in file order (the row order a bundle keeps).

    The ``raw`` column may contain newlines, so the file is parsed with the csv module.
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = set(EXPECTED_COLUMNS) - set(reader.fieldnames or ())
        if missing:
            raise DatasetFormatError(f"{path}: missing columns {sorted(missing)}")
        records = []
        for row in reader:
            try:
                records.append(
                    CaptionRecord(
                        sentid=int(row["sentid"]),
                        key=row["cxc_caption_key"],
                        image_id=int(row["image_id"]),
                        filename=row["filename"],
                        image_index=int(row["karpathy_image_index"]),
                        caption_index=int(row["caption_index"]),
                        text=row["text"],
                        raw=row["raw"],
                    )
                )
            except (TypeError, ValueError) as exc:
                line = reader.line_num
                raise DatasetFormatError(f"{path}: record ending at line {line}: {exc}") from exc
    keys = {record.key for record in records}
    if len(keys) != len(records):
        raise DatasetFormatError(f"{path}: caption keys are not unique")
    return records

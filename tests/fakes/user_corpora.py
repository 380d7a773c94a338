"""User corpora written by tests: JSONL / CSV / Parquet tables and folders of image files."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from tests.fakes.fake_encoders import COLOURS


def write_jsonl(path: Path, rows: Sequence[Mapping[str, object] | str]) -> Path:
    """One line per row: a mapping as JSON, a string as written (a malformed line)."""
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Path:
    """A CSV file with ``header`` and ``rows`` (cells as given)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_parquet(
    path: Path, columns: Mapping[str, Sequence[object]], types: object = None
) -> Path:
    """A Parquet file of ``columns`` (pyarrow infers the types unless ``types`` is a schema)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    table = pa.table({name: list(values) for name, values in columns.items()}, schema=types)
    pq.write_table(table, path)
    return path


def image_bytes(colour: str, fmt: str, size: tuple[int, int] = (16, 12)) -> bytes:
    """A solid image of a :data:`COLOURS` colour; a GIF gets a second, black frame."""
    buffer = io.BytesIO()
    first = Image.new("RGB", size, COLOURS[colour])
    if fmt == "GIF":
        second = Image.new("RGB", size, COLOURS["black"])
        first.save(buffer, format="GIF", save_all=True, append_images=[second], duration=50)
    else:
        first.save(buffer, format=fmt)
    return buffer.getvalue()


def write_image(path: Path, colour: str, fmt: str, size: tuple[int, int] = (16, 12)) -> Path:
    """Write :func:`image_bytes` to ``path`` (folders made as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(image_bytes(colour, fmt, size))
    return path


def truncated_png(size: tuple[int, int] = (64, 64)) -> bytes:
    """The first 60 % of a PNG of noise: its header parses, its pixel data is cut short (found
    only when the image is decoded)."""
    noise = np.random.default_rng(0).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    whole = buffer.getvalue()
    return whole[: len(whole) * 6 // 10]

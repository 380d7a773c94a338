"""Writing the corpus files in the real datasets' formats (and the ground truth beside them).

Layout under the output folder::

    coco-karpathy-captions/captions_<split>.csv   Karpathy captions format (CRLF, as the real file)
    images/<split>/scenes_<split>_<image_id:012d>.png
    cxc/sts_<split>.csv  cxc/sis_<split>.csv  cxc/sits_<split>.csv   CxC format (LF)
    bison/bison_<split>.csv                        BISON format (CRLF)
    scenes_<split>.jsonl                           ground truth, one image per line
    manifest.json                                  version, seed, sizes, sha256 of every file

Every writer is deterministic: same inputs, same bytes.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from index_builder.karpathy import EXPECTED_COLUMNS
from index_builder.scenes.bison import BISON_COLUMNS, BisonRow
from index_builder.scenes.corpus import SplitCorpus
from index_builder.scenes.facts import fact_to_json
from index_builder.scenes.grading import as_score
from index_builder.scenes.judgments import Rating

CAPTIONS_DIR = "coco-karpathy-captions"
IMAGES_DIR = "images"
CXC_DIR = "cxc"
BISON_DIR = "bison"
MANIFEST = "manifest.json"
CXC_HEADERS = MappingProxyType(
    {
        "sts": ("caption1", "caption2"),
        "sis": ("image1", "image2"),
        "sits": ("caption", "image"),
    }
)


def captions_path(root: Path, split: str) -> Path:
    """``<root>/coco-karpathy-captions/captions_<split>.csv``."""
    return root / CAPTIONS_DIR / f"captions_{split}.csv"


def images_path(root: Path, split: str) -> Path:
    """``<root>/images/<split>`` (a flat folder of PNGs)."""
    return root / IMAGES_DIR / split


def cxc_path(root: Path, task: str, split: str) -> Path:
    """``<root>/cxc/<task>_<split>.csv`` for task ``sts``, ``sis`` or ``sits``."""
    return root / CXC_DIR / f"{task}_{split}.csv"


def bison_path(root: Path, split: str) -> Path:
    """``<root>/bison/bison_<split>.csv``."""
    return root / BISON_DIR / f"bison_{split}.csv"


def ground_truth_path(root: Path, split: str) -> Path:
    """``<root>/scenes_<split>.jsonl``."""
    return root / f"scenes_{split}.jsonl"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_captions(path: Path, corpus: SplitCorpus) -> None:
    """The Karpathy captions CSV: one row per caption, images in row order, captions in
    ascending ``sentid`` (``caption_index`` 0–4); ``raw`` keeps stray white space."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(EXPECTED_COLUMNS)
        for image in corpus.images:
            for index, caption in enumerate(image.captions):
                writer.writerow(
                    [
                        image.sentid(index),
                        image.caption_key(index),
                        image.image_id,
                        image.filename,
                        image.index,
                        index,
                        caption.text,
                        caption.raw,
                    ]
                )


def write_ratings(path: Path, task: str, ratings: Iterable[Rating]) -> None:
    """A CxC CSV (``caption1,caption2`` / ``image1,image2`` / ``caption,image`` then
    ``agg_score,sampling_method``), scores printed like CxC's (``1.84``, ``3.0``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*CXC_HEADERS[task], "agg_score", "sampling_method"])
        for rating in ratings:
            writer.writerow(
                [rating.left, rating.right, repr(as_score(rating.hundredths)), rating.method]
            )


def write_bison(path: Path, rows: Iterable[BisonRow]) -> None:
    """The BISON CSV with the real file's columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(BISON_COLUMNS)
        for row in rows:
            writer.writerow(row.csv_row())


def image_ground_truth(corpus: SplitCorpus, row: int, image_size: int) -> dict[str, Any]:
    """The JSON object of one image: ids, scene (objects with pixel boxes, background,
    relations) and every caption with its facts."""
    image = corpus.images[row]
    return {
        "image_id": image.image_id,
        "filename": image.filename,
        "split": image.split,
        "karpathy_image_index": image.index,
        "width": image_size,
        "height": image_size,
        "scene": image.scene.to_json(image_size),
        "captions": [
            {
                "sentid": image.sentid(index),
                "key": image.caption_key(index),
                "caption_index": index,
                "kind": caption.kind,
                "text": caption.text,
                "facts": [fact_to_json(fact) for fact in caption.facts],
            }
            for index, caption in enumerate(image.captions)
        ],
    }


def write_ground_truth(path: Path, corpus: SplitCorpus, image_size: int) -> None:
    """``scenes_<split>.jsonl``: :func:`image_ground_truth` per line, in row order."""
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in range(len(corpus.images)):
            handle.write(json.dumps(image_ground_truth(corpus, row, image_size)))
            handle.write("\n")


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    """``manifest.json`` with sorted keys (deterministic bytes)."""
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")

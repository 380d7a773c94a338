"""Writing the corpus files in the real datasets' formats (and the ground truth beside them).

Layout under the output folder (:mod:`formats.layout`)::

    coco-karpathy-captions/captions_<split>.csv   Karpathy captions format (CRLF, as the real file)
    images/<split>/scenes_<split>_<image_id:012d>.png
    cxc/sts_<split>.csv  cxc/sis_<split>.csv  cxc/sits_<split>.csv   CxC format (LF)
    bison/bison_<split>.csv                        BISON format (CRLF)
    scenes_<split>.jsonl                           ground truth, one image per line
    manifest.json                                  version, seed, sizes, sha256 of every file

The format files are written by the writers of :mod:`formats`; this module turns a split into
their rows. Every writer is deterministic: same inputs, same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from formats.cxc import Rating as CxcRating
from formats.cxc import RatingKind, write_ratings
from formats.karpathy import CaptionRecord, write_captions
from scenes.corpus import SplitCorpus
from scenes.facts import fact_to_json
from scenes.grading import as_score
from scenes.judgments import Rating


def ground_truth_path(root: Path, split: str) -> Path:
    """``<root>/scenes_<split>.jsonl``."""
    return root / f"scenes_{split}.jsonl"


def caption_records(corpus: SplitCorpus) -> Iterator[CaptionRecord]:
    """The split's Karpathy caption rows: images in row order, captions in ascending ``sentid``
    (``caption_index`` 0–4); ``raw`` keeps stray white space."""
    row = 0
    for image in corpus.images:
        for index, caption in enumerate(image.captions):
            yield CaptionRecord(
                sentid=image.sentid(index),
                key=image.caption_key(index),
                image_id=image.image_id,
                filename=image.filename,
                image_index=image.index,
                caption_index=index,
                text=caption.text,
                raw=caption.raw,
                row=row,
            )
            row += 1


def write_split_captions(path: Path, corpus: SplitCorpus) -> None:
    """The split's Karpathy captions CSV (:func:`caption_records`)."""
    write_captions(path, caption_records(corpus))


def write_judgments(path: Path, kind: RatingKind, ratings: Iterable[Rating]) -> None:
    """A CxC CSV of the split's graded judgments, scores printed like CxC's (``1.84``,
    ``3.0``)."""
    write_ratings(
        path,
        kind,
        (
            CxcRating(rating.left, rating.right, as_score(rating.hundredths), rating.method)
            for rating in ratings
        ),
    )


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

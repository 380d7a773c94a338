"""The corpus kinds a build reads: a table of texts, a folder of images (with optional sidecar
metadata), a table of image paths, and Karpathy captions (with an optional folder of their
images) — and what a build's report and manifest say each one read.

Each kind is one input option of ``python -m index_builder build``: ``--texts``, ``--images``,
``--image-table``, ``--captions``. Which collections a kind yields with a given variant is
decided in :mod:`index_builder.preconditions`; how its records become items in
:mod:`index_builder.readers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from formats.hashing import sha256_file
from formats.karpathy import CaptionRecord


@dataclass(frozen=True)
class TextTable:
    """A table of text items: ``id_column`` and ``text_column``, every other column metadata."""

    path: Path
    id_column: str = "id"
    text_column: str = "text"


@dataclass(frozen=True)
class ImageFolderCorpus:
    """A folder of images; ``metadata``: an optional sidecar table keyed by a ``path`` column
    (the image's path relative to the folder)."""

    folder: Path
    metadata: Path | None = None


@dataclass(frozen=True)
class ImageTable:
    """A table of images: ``path_column`` (relative to the table's folder, or absolute), the id
    in ``id_column`` (default: the path as written), every other column metadata."""

    path: Path
    path_column: str = "path"
    id_column: str | None = None


@dataclass(frozen=True)
class KarpathyCaptions:
    """Karpathy-split captions (``formats.karpathy``): the ``captions`` collection (ids = CxC
    caption keys) and, with ``images_dir``, the ``images`` collection (ids = image file names
    under ``images_dir``, in order of first appearance among the records).

    ``records`` are the captions to build, already read (and cut to a limit) by the caller;
    ``source`` is the CSV they came from, named with its sha256 in the report and manifest.
    """

    records: Sequence[CaptionRecord]
    source: Path
    images_dir: Path | None = None


UserCorpus = TextTable | ImageFolderCorpus | ImageTable
"""A corpus of one collection, named by the build."""

Corpus = UserCorpus | KarpathyCaptions
"""Any corpus a build reads."""


def corpus_kind(corpus: Corpus) -> str:
    """The input option ``corpus`` came from: ``texts``, ``images``, ``image_table`` or
    ``captions``."""
    if isinstance(corpus, TextTable):
        return "texts"
    if isinstance(corpus, KarpathyCaptions):
        return "captions"
    return "image_table" if isinstance(corpus, ImageTable) else "images"


def corpus_inputs(corpus: Corpus) -> dict[str, object]:
    """What a build read, for its report and its manifest (files with their sha256)."""
    if isinstance(corpus, TextTable):
        return {
            "texts": str(corpus.path),
            "sha256": sha256_file(corpus.path),
            "id_column": corpus.id_column,
            "text_column": corpus.text_column,
        }
    if isinstance(corpus, ImageTable):
        return {
            "image_table": str(corpus.path),
            "sha256": sha256_file(corpus.path),
            "path_column": corpus.path_column,
            "id_column": corpus.id_column,
        }
    if isinstance(corpus, KarpathyCaptions):
        found: dict[str, object] = {
            "captions": str(corpus.source),
            "sha256": sha256_file(corpus.source),
            "records": len(corpus.records),
        }
        if corpus.images_dir is not None:
            found["images_dir"] = str(corpus.images_dir)
        return found
    found = {"images": str(corpus.folder)}
    if corpus.metadata is not None:
        found["metadata"] = str(corpus.metadata)
        found["metadata_sha256"] = sha256_file(corpus.metadata)
    return found

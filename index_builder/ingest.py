"""Building a bundle from any corpus: a table of texts, a folder of images, a table of images.

The stages, each with a progress bar:

1. **read** every record into an item or a bad item (:mod:`index_builder.sources`);
2. **check** image files without decoding them — size, format, pixel count
   (:mod:`index_builder.image_checks`);
3. with ``on_error=refuse`` and any bad item: stop here, before embedding, writing nothing;
4. **embed** the items (:mod:`index_builder.embed`); an image that fails to decode is a bad
   item too — with ``refuse`` the job stops at its batch and writes nothing;
5. **write** one collection and ``build_report.json`` with :func:`write_bundle` (atomic: an
   interrupted build leaves the previous version serving and no half folder).

With ``on_error=skip`` the bad items are left out and listed in the report; the build fails
only when no item is left.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Final

import numpy as np
from tqdm import tqdm

from encoders.image_decode import ImageLimits
from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from formats.field_types import FieldType
from index_builder.build_report import REPORT_FILE, BuildReport, problem_lines
from index_builder.embed import BUILD_IMAGE_LIMITS, embed_images, embed_texts
from index_builder.field_schema import CorpusError
from index_builder.image_checks import check_image_file, image_problem
from index_builder.index_plan import IndexSpec
from index_builder.index_writer import index_writer
from index_builder.items import BadItem, ImageItem, TextItem
from index_builder.sources import (
    Corpus,
    ImageFolderCorpus,
    ImageTable,
    TextTable,
    corpus_inputs,
    corpus_kind,
    read_corpus,
)
from storage.layout import COLLECTION_PATTERN
from storage.writer import CollectionInput, write_bundle

logger = logging.getLogger(__name__)

SHOWN_REFUSALS: Final = 50


class OnError(StrEnum):
    """What a build does with bad items."""

    REFUSE = "refuse"
    SKIP = "skip"


def default_collection_name(bundle_name: str) -> str:
    """``My-Products.v2`` → ``my_products_v2``; :class:`CorpusError` when that is still no
    collection name (then ``--collection`` must name one)."""
    candidate = bundle_name.lower().replace("-", "_").replace(".", "_")
    if not COLLECTION_PATTERN.match(candidate):
        raise CorpusError(
            f"cannot derive a collection name from bundle name {bundle_name!r} ({candidate!r} "
            "does not match ^[a-z][a-z0-9_]{0,63}$): give --collection"
        )
    return candidate


@dataclass(frozen=True)
class IngestOptions:
    """How to build: the collection's name, the bad-item policy, declared field types, image
    limits, the faiss factory or an index spec, an item limit, progress bars and batch sizes."""

    collection: str
    on_error: OnError = OnError.REFUSE
    fields: Mapping[str, FieldType] = field(default_factory=dict)
    limits: ImageLimits = BUILD_IMAGE_LIMITS
    factory: str = "Flat"
    index: IndexSpec | None = None
    """A planned, tuned index (docs/indexes.md) instead of ``factory``."""
    limit: int | None = None
    progress: bool = True
    text_batch_size: int = 256
    image_batch_size: int = 64
    decode_workers: int = 2
    check_workers: int = 4


class BuildRefusedError(Exception):
    """The build found bad items under ``on_error=refuse`` (or nothing left to index) and
    wrote nothing. ``bad`` lists them; ``str()`` names each, up to a cap."""

    def __init__(self, bad: Sequence[BadItem], *, read: int, headline: str) -> None:
        self.bad = sorted(bad, key=BadItem.sort_key)
        self.read = read
        self.headline = headline
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """The headline, then one ``file:line: reason`` line per bad item (capped)."""
        return [self.headline, *problem_lines(self.bad, limit=SHOWN_REFUSALS, indent="  ")]


@dataclass(frozen=True)
class IngestResult:
    """The new version folder and the build's report."""

    version_dir: Path
    report: BuildReport


def _check_images(
    items: list[ImageItem], options: IngestOptions
) -> tuple[list[ImageItem], list[BadItem]]:
    """Split image items into those whose files look usable and bad items."""
    kept: list[ImageItem] = []
    bad: list[BadItem] = []
    with ThreadPoolExecutor(max_workers=options.check_workers) as pool:
        faults = pool.map(lambda item: check_image_file(item.file, options.limits), items)
        progress = tqdm(
            zip(items, faults, strict=True),
            total=len(items),
            desc="checking images",
            unit="image",
            disable=not options.progress,
        )
        for item, fault in progress:
            if fault is None:
                kept.append(item)
            else:
                bad.append(BadItem(item.origin, fault[0], fault[1], item.item_id))
    return kept, bad


def _refuse_before_embedding(bad: list[BadItem], read: int, options: IngestOptions) -> None:
    if bad and options.on_error is OnError.REFUSE:
        raise BuildRefusedError(
            bad,
            read=read,
            headline=(
                f"refused: {len(bad)} of {read} records are bad; nothing was embedded or "
                "written (--on-error skip leaves them out)"
            ),
        )


def ingest(
    corpus: Corpus,
    *,
    text_encoder: TextEncoderProtocol | None,
    image_encoder: ImageEncoderProtocol | None,
    bundles_root: Path,
    name: str,
    options: IngestOptions,
    version: str | None = None,
) -> IngestResult:
    """Read, check, embed and write ``corpus`` as one collection of a new bundle version.

    Raises :class:`BuildRefusedError` (bad items under ``refuse``, or none left),
    :class:`CorpusError` (inputs unusable as a whole), ``formats.errors.FormatError`` (a file of
    no readable format), ``storage.manifest.BundleError`` or
    ``index_builder.index_plan.IndexPlanError`` (an index the collection cannot have); nothing
    is written then.
    """
    if not COLLECTION_PATTERN.match(options.collection):
        raise CorpusError(
            f"collection name {options.collection!r} does not match ^[a-z][a-z0-9_]{{0,63}}$"
        )
    started = time.perf_counter()
    if isinstance(corpus, TextTable):
        if text_encoder is None:
            raise CorpusError("a table of texts needs a variant with a text tower")
        encoder: TextEncoderProtocol | ImageEncoderProtocol = text_encoder
    else:
        if image_encoder is None:
            raise CorpusError("images need a variant with an image tower")
        encoder = image_encoder
    inputs = corpus_inputs(corpus)
    read_items = read_corpus(
        corpus, declared=options.fields, limit=options.limit, progress=options.progress
    )
    timings = {"read": time.perf_counter() - started}
    bad = list(read_items.bad)

    mark = time.perf_counter()
    metadata: list[Mapping[str, object]]
    if isinstance(corpus, ImageFolderCorpus | ImageTable):
        image_items = [item for item in read_items.items if isinstance(item, ImageItem)]
        image_items, unusable = _check_images(image_items, options)
        bad.extend(unusable)
        timings["check"] = time.perf_counter() - mark
        _refuse_before_embedding(bad, read_items.read, options)
        _refuse_if_empty(image_items, bad, read_items.read)
        assert image_encoder is not None
        mark = time.perf_counter()
        ids, metadata, vectors, image_paths = _embed_image_items(
            image_encoder, image_items, bad, read_items.read, options
        )
    else:
        text_items = [item for item in read_items.items if isinstance(item, TextItem)]
        _refuse_before_embedding(bad, read_items.read, options)
        _refuse_if_empty(text_items, bad, read_items.read)
        assert text_encoder is not None
        mark = time.perf_counter()
        vectors = embed_texts(
            text_encoder,
            [item.text for item in text_items],
            batch_size=options.text_batch_size,
            progress=options.progress,
            description="embedding texts",
        )
        ids = [item.item_id for item in text_items]
        metadata = [item.metadata for item in text_items]
        image_paths = None
    timings["embed"] = time.perf_counter() - mark
    timings["total"] = time.perf_counter() - started

    report = BuildReport(
        collection=options.collection,
        kind=corpus_kind(corpus),
        inputs=inputs,
        on_error=options.on_error.value,
        read=read_items.read,
        indexed=len(ids),
        skipped=sorted(bad, key=BadItem.sort_key),
        fields=read_items.schema.types,
        timings=timings,
        notes=read_items.notes,
    )
    build_info: dict[str, object] = {
        **report.build_info(),
        "embed_seconds": {options.collection: round(timings["embed"], 3)},
        "providers": list(encoder.providers),
        "host": platform.node(),
        "report": REPORT_FILE,
    }
    collection = CollectionInput(
        name=options.collection,
        ids=ids,
        metadata=metadata,
        vectors=vectors,
        index=index_writer(options.factory, options.index),
        fields=read_items.schema.types,
        image_paths=image_paths,
    )
    version_dir = write_bundle(
        bundles_root,
        name,
        [collection],
        variant_name=encoder.name,
        variant_fingerprint=encoder.fingerprint,
        version=version,
        build_info=build_info,
        extra_files={REPORT_FILE: report.to_bytes()},
    )
    logger.info("wrote %s in %.1f s", version_dir, time.perf_counter() - started)
    return IngestResult(version_dir=version_dir, report=report)


def _refuse_if_empty(items: Sequence[object], bad: list[BadItem], read: int) -> None:
    if not items:
        raise BuildRefusedError(
            bad,
            read=read,
            headline=f"nothing to index: none of the {read} records is usable; nothing written",
        )


def _embed_image_items(
    encoder: ImageEncoderProtocol,
    items: list[ImageItem],
    bad: list[BadItem],
    read: int,
    options: IngestOptions,
) -> tuple[list[str], list[Mapping[str, object]], np.ndarray, list[Path]]:
    refuse = options.on_error is OnError.REFUSE
    embedding = embed_images(
        encoder,
        [item.file for item in items],
        batch_size=options.image_batch_size,
        decode_workers=options.decode_workers,
        limits=options.limits,
        stop_at_failure=refuse,
        progress=options.progress,
    )
    for position, error in embedding.failures:
        item = items[position]
        problem, reason = image_problem(error)
        bad.append(BadItem(item.origin, problem, reason, item.item_id))
    if refuse and embedding.failures:
        later = (
            " (the build stopped there: later images were not tried)" if embedding.stopped else ""
        )
        raise BuildRefusedError(
            bad,
            read=read,
            headline=(
                f"refused: {len(bad)} image(s) could not be decoded while embedding{later}; "
                "nothing was written (--on-error skip leaves them out)"
            ),
        )
    kept = [items[position] for position in embedding.embedded]
    _refuse_if_empty(kept, bad, read)
    return (
        [item.item_id for item in kept],
        [item.metadata for item in kept],
        embedding.vectors,
        [item.file for item in kept],
    )

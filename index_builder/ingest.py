"""Building a bundle from any corpus: a table of texts, a folder of images, a table of images,
Karpathy captions (with their images).

The stages, each with a progress bar:

0. **plan** the collections the corpus yields with the towers given, and check their names
   (:mod:`index_builder.preconditions`);
1. **read** every record of each collection into an item or a bad item
   (:mod:`index_builder.readers`);
2. **check** image files without decoding them — size, format, pixel count
   (:mod:`index_builder.image_checks`);
3. with ``on_error=refuse`` and any bad item in any collection: stop here, before embedding,
   writing nothing (:mod:`index_builder.bad_item_policy`);
4. **embed** each collection's items (:mod:`index_builder.embed`); an image that fails to
   decode is a bad item too — with ``refuse`` the job stops at its batch and writes nothing;
5. **write** every collection and one ``build_report.json`` with :func:`write_bundle` (atomic:
   an interrupted build leaves the previous version serving and no half folder).

With ``on_error=skip`` the bad items are left out and listed in the report; the build fails
only when a collection is left with no item. The distributed build (``cluster.build``) runs the
same plan, reading, checks, refusals, report and writing (:func:`collection_input`,
:func:`write_build`) around its own embedding stage.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from encoders.image_decode import ImageLimits
from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from formats.field_types import FieldType
from index_builder.bad_item_policy import (
    OnError,
    refuse_bad_items,
    refuse_decode_failures,
    refuse_if_empty,
)
from index_builder.build_report import REPORT_FILE, BuildReport, CollectionReport
from index_builder.corpus import Corpus, corpus_inputs, corpus_kind
from index_builder.embed import BUILD_IMAGE_LIMITS, embed_images, embed_texts
from index_builder.field_schema import FieldSchema
from index_builder.image_checks import checked_images, image_problem
from index_builder.index_writer import index_writer
from index_builder.items import BadItem, ImageItem, TextItem
from index_builder.preconditions import CollectionPlan, encoder_variant, plan_collections
from index_builder.readers import read_collection
from index_builder.record_typing import stored_fields
from storage.index_plan import IndexSpec
from storage.writer import CollectionInput, write_bundle

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestOptions:
    """How to build: the collection's name (of a table of texts, a folder or a table of images;
    Karpathy captions name theirs ``captions`` and ``images``), the bad-item policy, declared
    field types, image limits, the faiss factory or an index spec, an item limit, progress bars
    and batch sizes."""

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


@dataclass(frozen=True)
class IngestResult:
    """The new version folder and the build's report."""

    version_dir: Path
    report: BuildReport


@dataclass
class _Collection:
    """One collection on its way through the stages."""

    plan: CollectionPlan
    schema: FieldSchema | None
    read: int
    notes: dict[str, object]
    text_items: list[TextItem] = field(default_factory=list)
    image_items: list[ImageItem] = field(default_factory=list)
    bad: list[BadItem] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


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
    """Read, check, embed and write ``corpus`` as the collections of a new bundle version: one
    for a table or folder (``options.collection``), ``captions`` and/or ``images`` for Karpathy
    captions, as the towers given allow (:func:`~index_builder.preconditions.plan_collections`).

    Raises :class:`~index_builder.bad_item_policy.BuildRefusedError` (bad items under
    ``refuse``, or a collection left empty), :class:`~index_builder.field_schema.CorpusError`
    (inputs unusable as a whole), ``formats.errors.FormatError`` (a file of no readable format),
    ``storage.manifest.BundleError`` or ``storage.index_plan.IndexPlanError`` (an index
    the collection cannot have); nothing is written then.
    """
    variant = encoder_variant(text_encoder, image_encoder)
    plans = plan_collections(
        corpus, variant.towers, variant=variant.name, collection=options.collection
    )
    started = time.perf_counter()
    inputs = corpus_inputs(corpus)
    collections = [_read_and_check(corpus, plan, options) for plan in plans]
    read = sum(collection.read for collection in collections)
    refuse_bad_items([item for c in collections for item in c.bad], read, options.on_error)
    for collection in collections:
        kept = len(collection.text_items) + len(collection.image_items)
        refuse_if_empty(
            collection.plan.name, kept, collection.bad, collection.read, collections=len(plans)
        )
    inputs_to_write: list[CollectionInput] = []
    for collection in collections:
        mark = time.perf_counter()
        if collection.plan.tower == "text":
            assert text_encoder is not None
            embedded = _embed_texts(text_encoder, collection, options)
        else:
            assert image_encoder is not None
            embedded = _embed_image_items(image_encoder, collection, options)
        collection.timings["embed"] = time.perf_counter() - mark
        inputs_to_write.append(embedded)
        logger.info(
            "embedded %d items of %s in %.1f s",
            len(embedded.ids),
            collection.plan.name,
            collection.timings["embed"],
        )
    report = BuildReport(
        kind=corpus_kind(corpus),
        inputs=inputs,
        on_error=options.on_error.value,
        collections=[
            CollectionReport(
                name=collection.plan.name,
                read=collection.read,
                indexed=len(written.ids),
                skipped=sorted(collection.bad, key=BadItem.sort_key),
                fields=dict(written.fields or {}),
                timings=collection.timings,
                notes=collection.notes,
            )
            for collection, written in zip(collections, inputs_to_write, strict=True)
        ],
        total=time.perf_counter() - started,
    )
    providers = [
        provider
        for encoder in (text_encoder, image_encoder)
        if encoder is not None
        for provider in encoder.providers
    ]
    version_dir = write_build(
        bundles_root,
        name,
        inputs_to_write,
        report,
        variant_name=variant.name,
        variant_fingerprint=variant.fingerprint,
        providers=list(dict.fromkeys(providers)),
        version=version,
    )
    logger.info("wrote %s in %.1f s", version_dir, time.perf_counter() - started)
    return IngestResult(version_dir=version_dir, report=report)


def _read_and_check(corpus: Corpus, plan: CollectionPlan, options: IngestOptions) -> _Collection:
    """Stages 1 and 2 for one collection."""
    mark = time.perf_counter()
    found = read_collection(
        corpus, plan, declared=options.fields, limit=options.limit, progress=options.progress
    )
    collection = _Collection(plan, found.schema, found.read, dict(found.notes), bad=list(found.bad))
    collection.timings["read"] = time.perf_counter() - mark
    if plan.tower == "text":
        collection.text_items = [item for item in found.items if isinstance(item, TextItem)]
        return collection
    mark = time.perf_counter()
    images = [item for item in found.items if isinstance(item, ImageItem)]
    collection.image_items = list(
        checked_images(
            images,
            options.limits,
            collection.bad,
            workers=options.check_workers,
            progress=options.progress,
            total=len(images),
        )
    )
    collection.timings["check"] = time.perf_counter() - mark
    return collection


def _embed_texts(
    encoder: TextEncoderProtocol, collection: _Collection, options: IngestOptions
) -> CollectionInput:
    items = collection.text_items
    vectors = embed_texts(
        encoder,
        [item.text for item in items],
        batch_size=options.text_batch_size,
        progress=options.progress,
        description=f"embedding {collection.plan.name}",
    )
    return collection_input(
        collection.plan.name,
        [item.item_id for item in items],
        [item.metadata for item in items],
        vectors,
        collection.schema,
        options,
    )


def _embed_image_items(
    encoder: ImageEncoderProtocol, collection: _Collection, options: IngestOptions
) -> CollectionInput:
    items = collection.image_items
    embedding = embed_images(
        encoder,
        [item.file for item in items],
        batch_size=options.image_batch_size,
        decode_workers=options.decode_workers,
        limits=options.limits,
        stop_at_failure=options.on_error is OnError.REFUSE,
        progress=options.progress,
        description=f"embedding {collection.plan.name}",
    )
    for position, error in embedding.failures:
        item = items[position]
        problem, reason = image_problem(error)
        collection.bad.append(BadItem(item.origin, problem, reason, item.item_id))
    refuse_decode_failures(
        collection.bad,
        len(embedding.failures),
        collection.read,
        options.on_error,
        stopped=embedding.stopped,
    )
    kept = [items[position] for position in embedding.embedded]
    refuse_if_empty(collection.plan.name, len(kept), collection.bad, collection.read)
    return collection_input(
        collection.plan.name,
        [item.item_id for item in kept],
        [item.metadata for item in kept],
        embedding.vectors,
        collection.schema,
        options,
        image_paths=[item.file for item in kept],
    )


def collection_input(
    name: str,
    ids: Sequence[str],
    metadata: Sequence[Mapping[str, object]],
    vectors: np.ndarray,
    schema: FieldSchema | None,
    options: IngestOptions,
    *,
    image_paths: Sequence[Path] | None = None,
) -> CollectionInput:
    """One embedded collection as the bundle writer takes it: its index as ``options`` asks,
    its fields typed by ``schema`` (or, without one, by the stored values, as the writer would
    infer them: :func:`~index_builder.record_typing.stored_fields`)."""
    return CollectionInput(
        name=name,
        ids=ids,
        metadata=metadata,
        vectors=vectors,
        index=index_writer(options.factory, options.index),
        fields=stored_fields(schema, metadata),
        image_paths=image_paths,
    )


def write_build(
    bundles_root: Path,
    name: str,
    collections: Sequence[CollectionInput],
    report: BuildReport,
    *,
    variant_name: str,
    variant_fingerprint: str,
    providers: Sequence[str],
    version: str | None = None,
    extra_info: Mapping[str, object] | None = None,
) -> Path:
    """Write the build's collections and ``build_report.json`` as a new bundle version (atomic,
    ``CURRENT`` switched). ``build_info`` holds the report's
    (:meth:`~index_builder.build_report.BuildReport.build_info`), each collection's embedding
    seconds, the providers, the host, the report's file name and ``extra_info``."""
    build_info: dict[str, object] = {
        **(extra_info or {}),
        **report.build_info(),
        "embed_seconds": {
            collection.name: round(collection.timings.get("embed", 0.0), 3)
            for collection in report.collections
        },
        "providers": list(providers),
        "host": platform.node(),
        "report": REPORT_FILE,
    }
    return write_bundle(
        bundles_root,
        name,
        collections,
        variant_name=variant_name,
        variant_fingerprint=variant_fingerprint,
        version=version,
        build_info=build_info,
        extra_files={REPORT_FILE: report.to_bytes()},
    )

"""Build a bundle from a Karpathy-format corpus: captions and/or images, embedded by one variant.

A text tower gives a ``captions`` collection (ids = CxC caption keys), an image tower an
``images`` collection (ids = image file names, in first-appearance order of the CSV). A variant
with both towers gives both, in one bundle, in one space.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from formats.hashing import sha256_file
from formats.karpathy import CaptionRecord, ImageEntry, images_of_captions
from index_builder.embed import embed_image_files, embed_texts
from index_builder.index_plan import IndexSpec
from index_builder.index_writer import index_writer
from storage.manifest import BundleError
from storage.writer import CollectionInput, write_bundle

logger = logging.getLogger(__name__)


def caption_metadata(record: CaptionRecord) -> dict[str, object]:
    """The JSON-serialisable metadata stored beside a caption's id in a bundle."""
    return {
        "text": record.text,
        "image_id": record.image_id,
        "filename": record.filename,
        "sentid": record.sentid,
    }


def image_metadata(image: ImageEntry) -> dict[str, object]:
    """The JSON-serialisable metadata stored beside an image's id in a bundle."""
    return {
        "image_id": image.image_id,
        "filename": image.filename,
        "captions": list(image.captions),
    }


@dataclass(frozen=True)
class BuildInputs:
    """What to embed: the caption records and, for an image tower, where their files are."""

    records: Sequence[CaptionRecord]
    images_dir: Path | None = None
    source: Path | None = None


def _captions_collection(
    encoder: TextEncoderProtocol,
    records: Sequence[CaptionRecord],
    factory: str,
    index: IndexSpec | None,
    progress: bool,
) -> tuple[CollectionInput, float]:
    started = time.perf_counter()
    vectors = embed_texts(encoder, [record.text for record in records], progress=progress)
    seconds = time.perf_counter() - started
    logger.info(
        "embedded %d captions in %.1f s (%.0f/s) on %s",
        len(records),
        seconds,
        len(records) / max(seconds, 1e-9),
        encoder.providers,
    )
    collection = CollectionInput(
        name="captions",
        ids=[record.key for record in records],
        metadata=[caption_metadata(record) for record in records],
        vectors=vectors,
        index=index_writer(factory, index),
    )
    return collection, seconds


def _images_collection(
    encoder: ImageEncoderProtocol,
    images: Sequence[ImageEntry],
    images_dir: Path,
    factory: str,
    index: IndexSpec | None,
    progress: bool,
) -> tuple[CollectionInput, float]:
    paths = [images_dir / image.filename for image in images]
    missing = [path for path in paths if not path.is_file()]
    if missing:
        raise BundleError(
            f"{len(missing)} of {len(paths)} images are missing under {images_dir} "
            f"(first: {missing[0].name})"
        )
    started = time.perf_counter()
    vectors = embed_image_files(encoder, paths, progress=progress)
    seconds = time.perf_counter() - started
    logger.info(
        "embedded %d images in %.1f s (%.0f/s) on %s",
        len(paths),
        seconds,
        len(paths) / max(seconds, 1e-9),
        encoder.providers,
    )
    collection = CollectionInput(
        name="images",
        ids=[image.filename for image in images],
        metadata=[image_metadata(image) for image in images],
        vectors=vectors,
        index=index_writer(factory, index),
        image_paths=paths,
    )
    return collection, seconds


def build_bundle(
    inputs: BuildInputs,
    *,
    text_encoder: TextEncoderProtocol | None,
    image_encoder: ImageEncoderProtocol | None,
    bundles_root: Path,
    name: str,
    version: str | None = None,
    factory: str = "Flat",
    index: IndexSpec | None = None,
    progress: bool = True,
) -> Path:
    """Embed the corpus with the towers given and write one bundle; returns its version folder.

    Both encoders, when given, must be towers of one variant (same name and fingerprint).
    ``CURRENT`` points at the new version once it is complete. ``index`` plans and tunes each
    collection's index (docs/indexes.md) instead of building ``factory`` as it is.
    """
    encoders = [encoder for encoder in (text_encoder, image_encoder) if encoder is not None]
    if not encoders:
        raise BundleError("nothing to embed: give a text encoder, an image encoder or both")
    if len({(encoder.name, encoder.fingerprint) for encoder in encoders}) != 1:
        raise BundleError("the text and image encoders are not towers of one variant")
    if image_encoder is not None and inputs.images_dir is None:
        raise BundleError(f"variant {image_encoder.name} has an image tower: give --images-dir")
    started = time.perf_counter()
    collections: list[CollectionInput] = []
    timings: dict[str, float] = {}
    if text_encoder is not None:
        captions, timings["captions"] = _captions_collection(
            text_encoder, inputs.records, factory, index, progress
        )
        collections.append(captions)
    if image_encoder is not None and inputs.images_dir is not None:
        images, timings["images"] = _images_collection(
            image_encoder,
            images_of_captions(inputs.records),
            inputs.images_dir,
            factory,
            index,
            progress,
        )
        collections.append(images)
    build_info: dict[str, object] = {
        "embed_seconds": {key: round(value, 3) for key, value in timings.items()},
        "providers": list(encoders[0].providers),
        "host": platform.node(),
    }
    if inputs.source is not None:
        build_info["source"] = {"path": str(inputs.source), "sha256": sha256_file(inputs.source)}
    if inputs.images_dir is not None and image_encoder is not None:
        build_info["images_dir"] = str(inputs.images_dir)
    version_dir = write_bundle(
        bundles_root,
        name,
        collections,
        variant_name=encoders[0].name,
        variant_fingerprint=encoders[0].fingerprint,
        version=version,
        build_info=build_info,
    )
    logger.info("wrote %s in %.1f s", version_dir, time.perf_counter() - started)
    return version_dir


def build_captions_bundle(
    encoder: TextEncoderProtocol,
    records: Sequence[CaptionRecord],
    *,
    bundles_root: Path,
    name: str,
    source: Path | None = None,
    version: str | None = None,
    factory: str = "Flat",
    index: IndexSpec | None = None,
    progress: bool = True,
) -> Path:
    """A text-only bundle with one ``captions`` collection (see :func:`build_bundle`)."""
    return build_bundle(
        BuildInputs(records=records, source=source),
        text_encoder=encoder,
        image_encoder=None,
        bundles_root=bundles_root,
        name=name,
        version=version,
        factory=factory,
        index=index,
        progress=progress,
    )

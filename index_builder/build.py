"""Build a captions bundle: read the Karpathy CSV, embed with a variant, write the bundle."""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Sequence
from pathlib import Path

from encoders.hashing import sha256_file
from encoders.protocols import TextEncoderProtocol

from index_builder.bundle import CollectionInput, write_bundle
from index_builder.embed import embed_texts
from index_builder.karpathy import CaptionRecord

logger = logging.getLogger(__name__)


def build_captions_bundle(
    encoder: TextEncoderProtocol,
    records: Sequence[CaptionRecord],
    *,
    bundles_root: Path,
    name: str,
    source: Path | None = None,
    version: str | None = None,
    factory: str = "Flat",
    batch_size: int = 256,
    progress: bool = True,
) -> Path:
    """Embed every caption's ``text`` and write a bundle with one ``captions`` collection.

    Returns the new version folder; ``CURRENT`` points at it once it is complete.
    """
    started = time.perf_counter()
    vectors = embed_texts(
        encoder, [record.text for record in records], batch_size=batch_size, progress=progress
    )
    embed_seconds = time.perf_counter() - started
    logger.info(
        "embedded %d captions in %.1f s (%.0f captions/s) on %s",
        len(records),
        embed_seconds,
        len(records) / max(embed_seconds, 1e-9),
        encoder.providers,
    )
    build_info: dict[str, object] = {
        "embed_seconds": round(embed_seconds, 3),
        "providers": list(encoder.providers),
        "host": platform.node(),
        "batch_size": batch_size,
    }
    if source is not None:
        build_info["source"] = {"path": str(source), "sha256": sha256_file(source)}
    collection = CollectionInput(
        name="captions",
        ids=[record.key for record in records],
        metadata=[record.metadata() for record in records],
        vectors=vectors,
        factory=factory,
    )
    version_dir = write_bundle(
        bundles_root,
        name,
        [collection],
        variant_name=encoder.name,
        variant_fingerprint=encoder.fingerprint,
        version=version,
        build_info=build_info,
    )
    logger.info("wrote %s in %.1f s", version_dir, time.perf_counter() - started)
    return version_dir

"""A ``captions`` bundle built from caption records by the one ingest pipeline
(:func:`index_builder.ingest.ingest` with :class:`~index_builder.corpus.KarpathyCaptions`), for
tests that need one: the e2e service, the distributed build's comparison."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from encoders.protocols import TextEncoderProtocol
from formats.karpathy import CaptionRecord
from index_builder.corpus import KarpathyCaptions
from index_builder.ingest import IngestOptions, ingest
from index_builder.preconditions import CAPTIONS_COLLECTION


def build_captions_bundle(
    encoder: TextEncoderProtocol,
    records: Sequence[CaptionRecord],
    *,
    source: Path,
    bundles_root: Path,
    name: str,
    version: str | None = None,
) -> Path:
    """Embed ``records`` (read from ``source``) with a text tower into the ``captions``
    collection of a new version of bundle ``name``; returns the version folder."""
    return ingest(
        KarpathyCaptions(records=records, source=source),
        text_encoder=encoder,
        image_encoder=None,
        bundles_root=bundles_root,
        name=name,
        version=version,
        options=IngestOptions(collection=CAPTIONS_COLLECTION, progress=False),
    ).version_dir

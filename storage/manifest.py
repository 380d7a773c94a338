"""``manifest.json``: what a bundle version holds, every file's sha256, and how to check them.

The manifest is written last into a version's staging folder (:mod:`storage.writer`) and read
first by everything that opens one (:func:`read_manifest`, :func:`verify_bundle`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from formats.field_types import FieldType
from formats.hashing import sha256_file
from storage.layout import MANIFEST_FILE

SCHEMA_VERSION: Final = 2
READABLE_SCHEMA_VERSIONS: Final = frozenset({1, 2})
"""Versions :func:`verify_bundle` accepts: version 1 bundles have no columns file; their fields
are inferred from the items' metadata when they are loaded."""

TuningParameter = Literal["nprobe", "efSearch"]
"""The faiss search parameter a tuned index kind has: IVF's ``nprobe``, HNSW's ``efSearch``."""


class BundleError(RuntimeError):
    """A bundle is missing, incomplete, corrupt or inconsistent."""


class SweepPoint(BaseModel):
    """Recall and speed of one parameter value on the held-out queries."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: int
    recall_at_10: float = Field(ge=0.0, le=1.0)
    ms_per_query: float = Field(ge=0.0)


class IndexTuning(BaseModel):
    """The build's measurement of an approximate index against exact search.

    ``recall_at_10`` is the mean share of the exact top 10 (inner product over the stored
    vectors) that the index returns in its top 10, over ``held_out_queries`` queries, at the
    chosen ``value`` of ``parameter``; ``met`` says whether that reached ``target_recall``
    (False: the largest value tried was chosen and still fell short).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_recall: float = Field(gt=0.0, le=1.0)
    parameter: TuningParameter
    value: int
    recall_at_10: float = Field(ge=0.0, le=1.0)
    met: bool
    held_out_queries: int = Field(ge=1)
    seed: int
    queries: str = Field(
        description="Where the held-out queries came from, e.g. 'sample of 1000 stored rows, "
        "each query's own row left out of both answers'."
    )
    sweep: list[SweepPoint]
    index_kind: str | None = None
    """The planned kind (``hnsw``, ``ivf-flat``, ``ivf-pq``)."""
    reason: str | None = None
    """Why the plan chose that index, one line."""


class CollectionManifest(BaseModel):
    """What the manifest records of one collection."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int
    dim: int
    index_file: str
    ids_file: str
    vectors_file: str
    factory: str
    metric: Literal["ip"]
    search_params: dict[str, float | int | str]
    fields: dict[str, FieldType] = {}
    """Metadata fields filters can use, with their types."""
    columns_file: str | None = None
    thumbnails_file: str | None = None
    """The rows' thumbnails (JPEGs back to back) and their offsets; None without images."""
    thumbnail_offsets_file: str | None = None
    tuning: IndexTuning | None = None
    """An approximate index's measured recall and the search parameter chosen for it; None for
    an exact (flat) index."""
    ivfdata_file: str | None = None
    """An IVF index's on-disk inverted lists, beside ``index_file`` (read with
    ``IO_FLAG_ONDISK_SAME_DIR``); None when the index is wholly in ``index_file``."""


class BundleManifest(BaseModel):
    """``manifest.json``: everything needed to check a bundle before serving it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    name: str
    version: str
    created_at: str
    variant_name: str
    variant_fingerprint: str
    dim: int
    metric: Literal["ip"]
    collections: dict[str, CollectionManifest]
    files: dict[str, str]
    build_info: dict[str, Any]


def read_manifest(version_dir: Path) -> BundleManifest:
    """Parse ``manifest.json`` without checking the files."""
    path = version_dir / MANIFEST_FILE
    try:
        return BundleManifest.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise BundleError(f"{version_dir} has no {MANIFEST_FILE}") from exc
    except ValidationError as exc:
        raise BundleError(f"{path} is not a valid manifest: {exc.error_count()} errors") from exc


def verify_bundle(version_dir: Path) -> BundleManifest:
    """Check the manifest's schema and the sha256 of every file it lists.

    Raises :class:`BundleError` naming the first problem found.
    """
    manifest = read_manifest(version_dir)
    if manifest.schema_version not in READABLE_SCHEMA_VERSIONS:
        raise BundleError(
            f"{version_dir}: schema version {manifest.schema_version}, expected one of "
            f"{sorted(READABLE_SCHEMA_VERSIONS)}"
        )
    if manifest.version != version_dir.name:
        raise BundleError(f"{version_dir}: manifest names version {manifest.version!r}")
    for collection in manifest.collections.values():
        listed = (collection.index_file, collection.ids_file, collection.vectors_file)
        optional = (collection.columns_file, collection.ivfdata_file)
        for filename in listed + tuple(name for name in optional if name):
            if filename not in manifest.files:
                raise BundleError(f"{version_dir}: {filename} is not hashed in the manifest")
    for filename, expected in manifest.files.items():
        path = version_dir / filename
        if path.parent != version_dir:
            raise BundleError(f"{version_dir}: manifest lists a file outside the bundle")
        if not path.is_file():
            raise BundleError(f"{version_dir}: {filename} is missing")
        actual = sha256_file(path)
        if actual != expected:
            raise BundleError(f"{version_dir}: {filename} has sha256 {actual}, expected {expected}")
    return manifest

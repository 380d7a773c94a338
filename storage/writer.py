"""Writing a bundle version: every file into a staging folder, fsynced, hashed into the
manifest, then the folder renamed into place; ``CURRENT`` replaced with ``os.replace``. A
reader therefore sees either the old bundle or the whole new one, never half of one, and a
crash leaves at most a staging folder no reader opens.

The writer writes what it is given. A collection's index comes from an :class:`IndexWriter`:
:class:`FactoryIndex` builds a faiss factory string as it is; the index builder's planned,
tuned index (``index_builder.index_writer.PlannedIndex``) plugs in the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from formats.field_types import FieldType
from formats.hashing import sha256_file
from storage.columns import ColumnError, build_columns, infer_fields, save_columns
from storage.durability import fsync_path, replace_durably
from storage.index_files import build_index, write_index
from storage.layout import (
    COLLECTION_PATTERN,
    CURRENT_FILE,
    MANIFEST_FILE,
    PUBLISHED_VERSION_MODE,
    VERSION_PATTERN,
    columns_file,
    ids_file,
    index_file,
    new_version_name,
    vectors_file,
)
from storage.manifest import (
    SCHEMA_VERSION,
    BundleError,
    BundleManifest,
    CollectionManifest,
    IndexTuning,
    verify_bundle,
)
from storage.thumbnails import write_thumbnails


@dataclass(frozen=True)
class WrittenIndex:
    """What the manifest records of a collection's written index."""

    factory: str
    index_file: str
    ivfdata_file: str | None = None
    search_params: dict[str, float | int | str] = field(default_factory=dict)
    tuning: IndexTuning | None = None


class IndexWriter(Protocol):
    """Writes a collection's faiss index into a staging folder."""

    def write(self, folder: Path, collection: str, vectors: np.ndarray) -> WrittenIndex:
        """Write ``folder/<collection>.faiss`` (and any file beside it) over ``vectors``
        (float32 ``[n, d]``, L2-normalised, in row order: the index's ids are the rows)."""
        ...


@dataclass(frozen=True)
class FactoryIndex:
    """A faiss factory string built as it is (trained on the rows when it needs training),
    untuned: no search parameters."""

    factory: str = "Flat"

    def write(self, folder: Path, collection: str, vectors: np.ndarray) -> WrittenIndex:
        """Build ``factory`` over ``vectors`` and write it (see :class:`IndexWriter`)."""
        name = index_file(collection)
        write_index(build_index(vectors, self.factory), folder / name)
        return WrittenIndex(factory=self.factory, index_file=name)


@dataclass(frozen=True)
class CollectionInput:
    """One collection to write: ids, metadata and vectors in row order.

    ``vectors`` is float32 ``[n, d]`` with L2-normalised rows; ``metadata`` holds one
    JSON-serialisable mapping per row. ``fields`` types the metadata fields filters may use
    (:mod:`storage.columns`); None infers them from the values.
    """

    name: str
    ids: Sequence[str]
    metadata: Sequence[Mapping[str, object]]
    vectors: np.ndarray
    index: IndexWriter = FactoryIndex()
    """What writes the collection's index (default: an exact ``Flat`` one)."""
    fields: Mapping[str, FieldType] | None = None
    image_paths: Sequence[Path] | None = None
    """The image file of each row, for a collection of images: the bundle then keeps a small
    thumbnail of each (:mod:`storage.thumbnails`)."""


def _validate_input(collection: CollectionInput) -> np.ndarray:
    if not COLLECTION_PATTERN.match(collection.name):
        raise BundleError(f"collection name {collection.name!r} is not a plain lowercase name")
    vectors = np.ascontiguousarray(collection.vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise BundleError(f"{collection.name}: vectors must be a non-empty [n, d] matrix")
    n = vectors.shape[0]
    if len(collection.ids) != n or len(collection.metadata) != n:
        raise BundleError(
            f"{collection.name}: {n} vectors but {len(collection.ids)} ids "
            f"and {len(collection.metadata)} metadata rows"
        )
    if len(set(collection.ids)) != n:
        raise BundleError(f"{collection.name}: ids are not unique")
    if not np.isfinite(vectors).all():
        raise BundleError(f"{collection.name}: vectors contain NaN or Inf")
    norms = np.linalg.norm(vectors, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-3):
        raise BundleError(f"{collection.name}: vectors are not L2-normalised")
    return vectors


def _write_collection(folder: Path, collection: CollectionInput) -> CollectionManifest:
    vectors = _validate_input(collection)
    written = collection.index.write(folder, collection.name, vectors)
    with (folder / ids_file(collection.name)).open("w", encoding="utf-8") as handle:
        for item_id, metadata in zip(collection.ids, collection.metadata, strict=True):
            if "id" in metadata:
                raise BundleError(f"{collection.name}: metadata may not redefine 'id'")
            handle.write(json.dumps({"id": item_id, **metadata}, ensure_ascii=False) + "\n")
    # Row-major: the service's exact scan (onnxruntime's Gemm with transB) is fastest over
    # [n, d] rows; bundles written column-major load the same.
    np.save(folder / vectors_file(collection.name), np.ascontiguousarray(vectors))
    try:
        fields = dict(collection.fields or infer_fields(collection.metadata))
        columns = build_columns(collection.metadata, fields)
    except ColumnError as exc:
        raise BundleError(f"{collection.name}: {exc}") from exc
    save_columns(folder / columns_file(collection.name), columns)
    thumbnails_file = offsets_file = None
    if collection.image_paths is not None:
        if len(collection.image_paths) != vectors.shape[0]:
            raise BundleError(f"{collection.name}: one image path per row is needed")
        thumbnails_file, offsets_file = write_thumbnails(
            folder, collection.name, collection.image_paths
        )
    return CollectionManifest(
        count=vectors.shape[0],
        dim=vectors.shape[1],
        index_file=written.index_file,
        ids_file=ids_file(collection.name),
        vectors_file=vectors_file(collection.name),
        factory=written.factory,
        metric="ip",
        search_params=dict(written.search_params),
        fields=fields,
        columns_file=columns_file(collection.name),
        thumbnails_file=thumbnails_file,
        thumbnail_offsets_file=offsets_file,
        tuning=written.tuning,
        ivfdata_file=written.ivfdata_file,
    )


def write_bundle(
    bundles_root: Path,
    name: str,
    collections: Sequence[CollectionInput],
    *,
    variant_name: str,
    variant_fingerprint: str,
    version: str | None = None,
    make_current: bool = True,
    build_info: Mapping[str, object] | None = None,
    extra_files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write a bundle version atomically and return its folder.

    Files go into a temporary sibling folder, are fsynced, hashed into the manifest and the
    folder is renamed into place; with ``make_current`` the ``CURRENT`` pointer is then
    switched. An existing version is never overwritten. ``extra_files`` (plain names → bytes,
    e.g. a build report) are written and hashed beside the collections. Whatever a
    collection's :class:`IndexWriter` raises (e.g. an index the collection cannot have) leaves
    nothing written.
    """
    if not VERSION_PATTERN.match(name):
        raise BundleError(f"bundle name {name!r} is not a plain folder name")
    version = version or new_version_name()
    if not VERSION_PATTERN.match(version):
        raise BundleError(f"bundle version {version!r} is not a plain folder name")
    if not collections:
        raise BundleError("a bundle needs at least one collection")
    names = [collection.name for collection in collections]
    if len(set(names)) != len(names):
        raise BundleError(f"duplicate collection names: {names}")
    dims = {int(np.asarray(collection.vectors).shape[-1]) for collection in collections}
    if len(dims) != 1:
        raise BundleError(f"collections disagree on the embedding dimension: {sorted(dims)}")

    bundle_dir = bundles_root / name
    bundle_dir.mkdir(parents=True, exist_ok=True)
    final_dir = bundle_dir / version
    if final_dir.exists():
        raise BundleError(f"{final_dir} already exists; versions are immutable")
    staging = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=bundle_dir))
    # mkdtemp makes the folder private (0700); the published version must be readable by the
    # service, which may run as another user (the container image's, over a shared volume).
    staging.chmod(PUBLISHED_VERSION_MODE)
    try:
        collection_manifests = {
            collection.name: _write_collection(staging, collection) for collection in collections
        }
        for filename, content in (extra_files or {}).items():
            target = staging / filename
            if target.parent != staging or target.exists() or filename == MANIFEST_FILE:
                raise BundleError(f"extra file {filename!r} is not a new plain file name")
            target.write_bytes(content)
        files = {}
        for path in sorted(staging.iterdir()):
            fsync_path(path)
            files[path.name] = sha256_file(path)
        manifest = BundleManifest(
            schema_version=SCHEMA_VERSION,
            name=name,
            version=version,
            created_at=datetime.now(UTC).isoformat(),
            variant_name=variant_name,
            variant_fingerprint=variant_fingerprint,
            dim=dims.pop(),
            metric="ip",
            collections=collection_manifests,
            files=files,
            build_info=dict(build_info or {}),
        )
        manifest_path = staging / MANIFEST_FILE
        manifest_path.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        fsync_path(manifest_path)
        fsync_path(staging)
        os.rename(staging, final_dir)
        fsync_path(bundle_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if make_current:
        set_current(bundle_dir, version)
    return final_dir


def set_current(bundle_dir: Path, version: str) -> None:
    """Atomically point ``CURRENT`` at an existing, verified version folder."""
    verify_bundle(bundle_dir / version)
    pointer_tmp = bundle_dir / f".{CURRENT_FILE}.{os.getpid()}.tmp"
    pointer_tmp.write_text(version + "\n", encoding="utf-8")
    replace_durably(pointer_tmp, bundle_dir / CURRENT_FILE)

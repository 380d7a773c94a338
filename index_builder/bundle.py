"""The on-disk index bundle: write atomically, verify, load.

Layout (DESIGN §4)::

    <bundles_root>/<name>/<version>/manifest.json
                                   <collection>.faiss
                                   <collection>.ids.jsonl
                                   <collection>.vectors.npy
                                   <collection>.columns.npz   typed metadata for filters
                                   build_report.json ...      extra files a build adds
    <bundles_root>/<name>/CURRENT      the served version's folder name

A version folder is written under a temporary name, every file fsynced, then renamed into
place; ``CURRENT`` is replaced with ``os.replace``. A reader therefore sees either the old
bundle or the whole new one, never half of one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import faiss
import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from formats.field_types import FieldType
from formats.hashing import sha256_file
from index_builder.bundle_layout import (
    CURRENT_FILE,
    MANIFEST_FILE,
    PUBLISHED_VERSION_MODE,
    VERSION_PATTERN,
)
from index_builder.columns import (
    Column,
    ColumnError,
    build_columns,
    infer_fields,
    load_columns,
    save_columns,
)
from index_builder.faiss_index import build_index
from index_builder.id_table import DuplicateIdError, IdTable
from index_builder.index_plan import IndexSpec
from index_builder.index_tuning import IndexTuning, set_search_parameter
from index_builder.index_writer import write_planned_index
from index_builder.ivf_merge import read_on_disk_index
from index_builder.thumbnails import (
    Thumbnails,
    ThumbnailsError,
    load_thumbnails,
    write_thumbnails,
)

SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = frozenset({1, 2})
"""Versions :func:`verify_bundle` accepts: version 1 bundles have no columns file; their fields
are inferred from the items' metadata when they are loaded."""
COLLECTION_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class BundleError(RuntimeError):
    """A bundle is missing, incomplete, corrupt or inconsistent."""


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


@dataclass(frozen=True)
class CollectionInput:
    """One collection to write: ids, metadata and vectors in row order.

    ``vectors`` is float32 ``[n, d]`` with L2-normalised rows; ``metadata`` holds one
    JSON-serialisable mapping per row. ``fields`` types the metadata fields filters may use
    (:mod:`index_builder.columns`); None infers them from the values.
    """

    name: str
    ids: Sequence[str]
    metadata: Sequence[Mapping[str, object]]
    vectors: np.ndarray
    factory: str = "Flat"
    fields: Mapping[str, FieldType] | None = None
    image_paths: Sequence[Path] | None = None
    """The image file of each row, for a collection of images: the bundle then keeps a small
    thumbnail of each (:mod:`index_builder.thumbnails`)."""
    index: IndexSpec | None = None
    """The index to plan, build and tune (:mod:`index_builder.index_plan`); None builds
    ``factory`` as it is, untuned (``search_params`` empty)."""


@dataclass(frozen=True)
class LoadedCollection:
    """A collection ready to search: faiss index, ids and stored vectors share row numbers.

    As loaded by :func:`load_bundle`, ``vectors`` and a flat index's codes are read-only memory
    maps of the bundle's files."""

    name: str
    index: Any
    ids: Sequence[str]
    row_of: Mapping[str, int]
    metadata: list[Mapping[str, object]]
    vectors: np.ndarray
    factory: str
    metric: Literal["ip"]
    search_params: dict[str, float | int | str] = field(default_factory=dict)
    columns: dict[str, Column] = field(default_factory=dict)
    """The typed metadata columns filters read, by field name."""
    thumbnails: Thumbnails | None = None
    """Each row's thumbnail, for a collection of images built with them."""
    tuning: IndexTuning | None = None
    """What the build measured of an approximate index (None for a flat one)."""

    @property
    def fields(self) -> dict[str, FieldType]:
        """Filterable field name → type, sorted by name."""
        return {name: self.columns[name].type for name in sorted(self.columns)}

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return int(self.vectors.shape[1])

    @property
    def count(self) -> int:
        """Number of rows."""
        return len(self.ids)


@dataclass(frozen=True)
class LoadedBundle:
    """A verified bundle version loaded into memory."""

    path: Path
    manifest: BundleManifest
    collections: dict[str, LoadedCollection]

    @property
    def name(self) -> str:
        """Bundle name (the folder above the version folders)."""
        return self.manifest.name

    @property
    def version(self) -> str:
        """Version folder name."""
        return self.manifest.version

    @property
    def variant_name(self) -> str:
        """Name of the encoder variant that embedded this bundle."""
        return self.manifest.variant_name

    @property
    def variant_fingerprint(self) -> str:
        """Fingerprint of that variant's files; the service refuses a different encoder."""
        return self.manifest.variant_fingerprint


def new_version_name(now: datetime | None = None) -> str:
    """A sortable UTC timestamp, e.g. ``20261122T101500123456Z``."""
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y%m%dT%H%M%S%fZ")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
    index_file = f"{collection.name}.faiss"
    factory = collection.factory
    search_params: dict[str, float | int | str] = {}
    tuning: IndexTuning | None = None
    ivfdata_file: str | None = None
    if collection.index is None:
        faiss.write_index(build_index(vectors, factory), str(folder / index_file))
    else:
        written = write_planned_index(folder, collection.name, vectors, collection.index)
        factory, search_params = written.plan.factory, written.search_params
        tuning, ivfdata_file = written.tuning, written.ivfdata_file
    ids_file = f"{collection.name}.ids.jsonl"
    vectors_file = f"{collection.name}.vectors.npy"
    with (folder / ids_file).open("w", encoding="utf-8") as handle:
        for item_id, metadata in zip(collection.ids, collection.metadata, strict=True):
            if "id" in metadata:
                raise BundleError(f"{collection.name}: metadata may not redefine 'id'")
            handle.write(json.dumps({"id": item_id, **metadata}, ensure_ascii=False) + "\n")
    # Row-major: the service's exact scan (onnxruntime's Gemm with transB, service.exact_scan)
    # is fastest over [n, d] rows (8.1 ms for 16 queries x 25,000 x 384 against 13.1 column-major
    # and numpy's 15.8, scripts/scan_layout.py); bundles written column-major load the same.
    np.save(folder / vectors_file, np.ascontiguousarray(vectors))
    try:
        fields = dict(collection.fields or infer_fields(collection.metadata))
        columns = build_columns(collection.metadata, fields)
    except ColumnError as exc:
        raise BundleError(f"{collection.name}: {exc}") from exc
    columns_file = f"{collection.name}.columns.npz"
    save_columns(folder / columns_file, columns)
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
        index_file=index_file,
        ids_file=ids_file,
        vectors_file=vectors_file,
        factory=factory,
        metric="ip",
        search_params=search_params,
        fields=fields,
        columns_file=columns_file,
        thumbnails_file=thumbnails_file,
        thumbnail_offsets_file=offsets_file,
        tuning=tuning,
        ivfdata_file=ivfdata_file,
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
    e.g. a build report) are written and hashed beside the collections. A collection with an
    ``index`` spec gets a planned, tuned index; ``index_builder.index_plan.IndexPlanError`` when
    it cannot have it (nothing is written then).
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
            _fsync_path(path)
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
        _fsync_path(manifest_path)
        _fsync_path(staging)
        os.rename(staging, final_dir)
        _fsync_path(bundle_dir)
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
    _fsync_path(pointer_tmp)
    os.replace(pointer_tmp, bundle_dir / CURRENT_FILE)
    _fsync_path(bundle_dir)


def resolve_current(bundle_dir: Path) -> Path:
    """The version folder that ``<bundle_dir>/CURRENT`` names."""
    pointer = bundle_dir / CURRENT_FILE
    try:
        version = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError as exc:
        raise BundleError(f"{bundle_dir} has no {CURRENT_FILE} pointer") from exc
    if not VERSION_PATTERN.match(version):
        raise BundleError(f"{pointer} holds an invalid version {version!r}")
    return bundle_dir / version


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


def _load_collection(version_dir: Path, name: str, entry: CollectionManifest) -> LoadedCollection:
    metadata: list[Mapping[str, object]] = []
    # Rows without metadata share one read-only empty mapping: a dict left empty by the pop
    # keeps its 184 bytes, a million of them in every worker process that loads the bundle;
    # the ids go into a compact IdTable rather than a list and a dict (see index_builder.id_table).
    no_metadata: Mapping[str, object] = MappingProxyType({})

    def read_ids(handle: Iterable[str]) -> Iterator[str]:
        for line in handle:
            row = json.loads(line)
            yield str(row.pop("id"))
            metadata.append(row if row else no_metadata)

    with (version_dir / entry.ids_file).open(encoding="utf-8") as handle:
        try:
            ids = IdTable(read_ids(handle))
        except DuplicateIdError as exc:
            raise BundleError(f"{version_dir}: {name} ids are not unique: {exc}") from exc
    # Memory-mapped, read-only: the pages are the page cache's, so every worker process that
    # serves this version shares one copy (a flat index's codes are mapped the same way).
    vectors = np.load(version_dir / entry.vectors_file, mmap_mode="r", allow_pickle=False)
    if entry.ivfdata_file is not None:
        # The .faiss names its lists by the staging folder's path: read them from beside it.
        if entry.ivfdata_file != Path(entry.index_file).with_suffix(".ivfdata").name:
            raise BundleError(f"{version_dir}: {name} ivfdata file must sit beside its index")
        index = read_on_disk_index(version_dir / entry.index_file)
    else:
        index = faiss.read_index(str(version_dir / entry.index_file), faiss.IO_FLAG_MMAP_IFC)
    for parameter, value in sorted(entry.search_params.items()):
        if isinstance(value, str):
            raise BundleError(f"{version_dir}: {name} search parameter {parameter} is not a number")
        set_search_parameter(index, parameter, value)
    if not (len(ids) == vectors.shape[0] == index.ntotal == entry.count):
        raise BundleError(
            f"{version_dir}: {name} counts disagree (manifest {entry.count}, ids {len(ids)}, "
            f"vectors {vectors.shape[0]}, index {index.ntotal})"
        )
    if vectors.dtype != np.float32 or vectors.shape[1] != entry.dim or index.d != entry.dim:
        raise BundleError(f"{version_dir}: {name} dimension or dtype disagrees with the manifest")
    try:
        if entry.columns_file is None:  # schema version 1: the fields are the metadata's own
            columns = build_columns(metadata, infer_fields(metadata))
        else:
            columns = load_columns(version_dir / entry.columns_file, entry.fields, entry.count)
        thumbnails = None
        if entry.thumbnails_file is not None and entry.thumbnail_offsets_file is not None:
            thumbnails = load_thumbnails(
                version_dir, entry.thumbnails_file, entry.thumbnail_offsets_file, entry.count
            )
    except (ColumnError, ThumbnailsError) as exc:
        raise BundleError(f"{version_dir}: {name}: {exc}") from exc
    return LoadedCollection(
        name=name,
        index=index,
        ids=ids,
        row_of=ids.row_of,
        metadata=metadata,
        vectors=np.asarray(vectors),  # a read-only ndarray view of the mapping, no copy
        factory=entry.factory,
        metric=entry.metric,
        search_params=dict(entry.search_params),
        columns=columns,
        thumbnails=thumbnails,
        tuning=entry.tuning,
    )


def load_bundle(version_dir: Path, *, verify: bool = True) -> LoadedBundle:
    """Load a bundle version (verifying every hash first unless ``verify`` is False)."""
    manifest = verify_bundle(version_dir) if verify else read_manifest(version_dir)
    try:
        collections = {
            name: _load_collection(version_dir, name, entry)
            for name, entry in manifest.collections.items()
        }
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"{version_dir}: cannot load: {exc}") from exc
    return LoadedBundle(path=version_dir, manifest=manifest, collections=collections)

"""Reading a bundle version: verify it, then map it for search.

:func:`load_bundle` checks every file's sha256 against the manifest (:func:`verify_bundle`),
then loads each collection: its ids (a compact :class:`~storage.id_table.IdTable`) and
metadata, its stored vectors and index codes memory-mapped read-only, its typed columns and its
thumbnails. :func:`resolve_current` follows a bundle's ``CURRENT`` pointer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from formats.field_types import FieldType
from storage.columns import Column, ColumnError, build_columns, infer_fields, load_columns
from storage.id_table import DuplicateIdError, IdTable
from storage.index_files import read_index, read_on_disk_index, set_search_parameter
from storage.layout import CURRENT_FILE, VERSION_PATTERN
from storage.manifest import (
    BundleError,
    BundleManifest,
    CollectionManifest,
    IndexTuning,
    read_manifest,
    verify_bundle,
)
from storage.thumbnails import Thumbnails, ThumbnailsError, load_thumbnails


@dataclass(frozen=True)
class LoadedCollection:
    """A collection ready to search: faiss index, ids and stored vectors share row numbers.

    As loaded by :func:`load_bundle`, ``vectors`` and a flat index's codes are read-only memory
    maps of the bundle's files."""

    name: str
    index: Any
    ids: IdTable
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


def _load_collection(version_dir: Path, name: str, entry: CollectionManifest) -> LoadedCollection:
    metadata: list[Mapping[str, object]] = []
    # Rows without metadata share one read-only empty mapping: a dict left empty by the pop
    # keeps its 184 bytes, a million of them in every worker process that loads the bundle;
    # the ids go into a compact IdTable rather than a list and a dict (see storage.id_table).
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
        index = read_index(version_dir / entry.index_file)
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

"""Cutting one collection of a bundle into shard bundles, and the shard map that ties them.

Shard ``i`` holds the contiguous rows ``[row_offset_i, row_offset_i + count_i)`` of the source
collection, as an ordinary bundle written by :func:`storage.writer.write_bundle` (same
faiss factory, variant name and fingerprint, the source's field types); its ``build_info``
records where it came from. An item's global row is ``row_offset + local row`` and its id is
unchanged, so the merged top-k under the tie rule (score descending, then global row ascending)
is the unsplit bundle's.

The shard map (``shards.json``) names the source bundle and version, the collection, the total
count and, per shard, its bundle folder (relative to the map), version, row offset, count and
the sha256 of its manifest; it is written atomically (temporary file, fsync, rename). A shard
replica refuses a bundle whose manifest hash differs from the map's.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from formats.hashing import sha256_file
from storage.layout import MANIFEST_FILE
from storage.manifest import BundleError
from storage.reader import LoadedBundle, load_bundle, resolve_current
from storage.writer import CollectionInput, FactoryIndex, write_bundle

SHARD_MAP_SCHEMA_VERSION = 1
SHARD_MAP_FILE = "shards.json"
MAX_SHARDS = 256


class ShardMapError(RuntimeError):
    """A shard map is missing or invalid, or a split cannot be made as asked."""


class ShardEntry(BaseModel):
    """One shard of the map."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        description="The shard's name: its Serve deployment, and what missing_shards lists."
    )
    bundle: str
    version: str
    path: str = Field(description="The shard's bundle version folder, relative to the map.")
    row_offset: int = Field(ge=0)
    count: int = Field(ge=1)
    manifest_sha256: str


class ShardMap(BaseModel):
    """``shards.json``: one source collection as contiguous shards."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    source_bundle: str
    source_version: str
    collection: str
    variant_name: str
    variant_fingerprint: str
    dim: int
    factory: str
    total_count: int = Field(ge=1)
    shards: list[ShardEntry] = Field(min_length=1, max_length=MAX_SHARDS)

    @model_validator(mode="after")
    def _contiguous(self) -> Self:
        start = 0
        for shard in self.shards:
            if shard.row_offset != start:
                raise ValueError(
                    f"shard {shard.name!r} starts at row {shard.row_offset}, expected {start}"
                )
            start += shard.count
        if start != self.total_count:
            raise ValueError(f"shards hold {start} rows, total_count is {self.total_count}")
        names = [shard.name for shard in self.shards]
        if len(set(names)) != len(names):
            raise ValueError(f"shard names repeat: {names}")
        return self


@dataclass(frozen=True)
class LocatedShard:
    """A shard entry with its bundle folder resolved against the map's location."""

    entry: ShardEntry
    version_dir: Path


def shard_ranges(total: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous ``(start, end)`` row ranges covering ``total`` rows, sizes within
    one of each other (the first ones one larger)."""
    if shards < 1 or shards > MAX_SHARDS:
        raise ShardMapError(f"the number of shards must be 1..{MAX_SHARDS}, got {shards}")
    if total < shards:
        raise ShardMapError(f"{total} rows cannot make {shards} non-empty shards")
    base, extra = divmod(total, shards)
    ranges, start = [], 0
    for index in range(shards):
        end = start + base + (1 if index < extra else 0)
        ranges.append((start, end))
        start = end
    return ranges


def shard_name(index: int) -> str:
    """The name of shard ``index`` (``shard-0``, ...)."""
    return f"shard-{index}"


def _source_dir(bundle: Path) -> Path:
    """A version folder as given, or the version ``CURRENT`` names in a bundle folder."""
    return bundle if (bundle / MANIFEST_FILE).is_file() else resolve_current(bundle)


def split_bundle(
    source: Path,
    collection: str,
    shards: int,
    out_root: Path,
    map_path: Path,
) -> ShardMap:
    """Split ``collection`` of the bundle at ``source`` (a version folder, or a bundle folder
    whose ``CURRENT`` is used) into ``shards`` bundles under ``out_root`` named
    ``<source bundle>-<collection>-<i>of<shards>``, each at the source's version, and write the
    shard map to ``map_path``. Thumbnails and an approximate index's tuning are not carried
    over (a shard's index is rebuilt with the same factory). Raises :class:`ShardMapError`."""
    try:
        loaded = load_bundle(_source_dir(source))
    except BundleError as exc:
        raise ShardMapError(f"cannot read the source bundle: {exc}") from exc
    if collection not in loaded.collections:
        raise ShardMapError(
            f"bundle {loaded.name!r} has no collection {collection!r}; it has "
            f"{', '.join(sorted(loaded.collections))}"
        )
    entries = []
    map_dir = map_path.parent.resolve()
    for index, (start, end) in enumerate(
        shard_ranges(loaded.collections[collection].count, shards)
    ):
        folder = _write_shard(loaded, collection, index, shards, start, end, out_root)
        entries.append(
            ShardEntry(
                name=shard_name(index),
                bundle=folder.parent.name,
                version=folder.name,
                path=os.path.relpath(folder.resolve(), map_dir),
                row_offset=start,
                count=end - start,
                manifest_sha256=sha256_file(folder / MANIFEST_FILE),
            )
        )
    source_collection = loaded.collections[collection]
    shard_map = ShardMap(
        schema_version=SHARD_MAP_SCHEMA_VERSION,
        source_bundle=loaded.name,
        source_version=loaded.version,
        collection=collection,
        variant_name=loaded.variant_name,
        variant_fingerprint=loaded.variant_fingerprint,
        dim=source_collection.dim,
        factory=source_collection.factory,
        total_count=source_collection.count,
        shards=entries,
    )
    write_shard_map(map_path, shard_map)
    return shard_map


def _write_shard(
    loaded: LoadedBundle,
    collection: str,
    index: int,
    shards: int,
    start: int,
    end: int,
    out_root: Path,
) -> Path:
    source = loaded.collections[collection]
    rows = range(start, end)
    part = CollectionInput(
        name=collection,
        ids=[source.ids[row] for row in rows],
        metadata=[source.metadata[row] for row in rows],
        vectors=source.vectors[start:end],
        index=FactoryIndex(source.factory),
        fields=source.fields,
    )
    try:
        return write_bundle(
            out_root,
            f"{loaded.name}-{collection}-{index}of{shards}",
            [part],
            variant_name=loaded.variant_name,
            variant_fingerprint=loaded.variant_fingerprint,
            version=loaded.version,
            build_info={
                "shard_of": {
                    "bundle": loaded.name,
                    "version": loaded.version,
                    "collection": collection,
                    "index": index,
                    "shards": shards,
                    "row_offset": start,
                    "count": end - start,
                    "total_count": source.count,
                    "source_manifest_sha256": sha256_file(loaded.path / MANIFEST_FILE),
                }
            },
        )
    except BundleError as exc:
        raise ShardMapError(f"cannot write shard {index}: {exc}") from exc


def write_shard_map(path: Path, shard_map: ShardMap) -> None:
    """Write ``shard_map`` to ``path`` atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(shard_map.model_dump_json(indent=2) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_shard_map(path: Path) -> ShardMap:
    """Parse and check ``shards.json``; raises :class:`ShardMapError`."""
    try:
        return ShardMap.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise ShardMapError(f"no shard map at {path}") from exc
    except ValidationError as exc:
        raise ShardMapError(f"{path} is not a valid shard map: {exc}") from exc
    except json.JSONDecodeError as exc:  # pragma: no cover - pydantic reports bad JSON itself
        raise ShardMapError(f"{path} is not JSON: {exc}") from exc


def locate_shards(map_path: Path, shard_map: ShardMap) -> list[LocatedShard]:
    """Each shard with its bundle folder resolved against ``map_path``'s folder (absolute)."""
    base = map_path.parent.resolve()
    return [LocatedShard(entry, (base / entry.path).resolve()) for entry in shard_map.shards]

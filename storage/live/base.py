"""A live collection's base segment: an immutable bundle version that a compaction wrote (or a
restore copied in), holding every item alive at one log sequence number.

``<collection>/base/<version>/`` is an ordinary bundle version (:mod:`storage.writer`: files
fsynced, sha256-hashed into the manifest, the folder renamed into place) with one collection,
``items``, whose rows are the items in row order, and ``items.texts.jsonl`` beside it (the text
each row was embedded from, or null). ``<collection>/base.json`` names the version served and
the last log sequence number it holds; it is the base's only pointer, replaced atomically and
durably (:func:`publish_base`), so a crash leaves the old base or the new one. A version the
pointer does not name is a compaction that a crash cut short, removed when the collection
opens (:func:`remove_unpublished`).

Because a base version is a bundle, ``index_builder`` and the service read it as one, and a
snapshot (:func:`write_items_bundle` into another folder) is the same thing published with a
``CURRENT`` pointer instead.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NamedTuple

import faiss
import numpy as np

from formats.field_types import FieldType
from storage.durability import fsync_path, replace_durably
from storage.index_files import build_index, write_index
from storage.index_plan import plan_factory
from storage.index_tuning import tune_index
from storage.layout import index_file
from storage.manifest import BundleError, IndexTuning, TuningParameter, verify_bundle
from storage.reader import LoadedCollection, load_bundle
from storage.writer import CollectionInput, WrittenIndex, write_bundle

BASE_FOLDER: Final = "base"
BASE_POINTER: Final = "base.json"
ITEMS: Final = "items"
"""The collection a base or snapshot bundle holds."""
TEXTS_FILE: Final = "items.texts.jsonl"
CLIENT_VECTORS: Final = "client-vectors"
"""The variant name a bundle of client vectors records."""
_TUNING_QUERIES: Final = 200
_TUNING_SEED: Final = 20261128


class BaseError(RuntimeError):
    """A base segment that cannot be read (its pointer or its bundle is damaged)."""


@dataclass(frozen=True)
class BaseIndex:
    """The faiss index a compaction writes over the base: ``factory`` as
    :func:`storage.index_plan.plan_factory` plans it (``Flat`` is exact; an IVF factory is
    ``Flat`` below :data:`~storage.index_plan.MIN_POINTS_PER_CENTROID` rows a list, else tuned
    so that its recall@10 against exact search reaches ``target_recall``)."""

    factory: str = "Flat"
    target_recall: float = 0.95

    def write(self, folder: Path, collection: str, vectors: np.ndarray) -> WrittenIndex:
        """Build, tune and write the index (the :class:`storage.writer.IndexWriter` protocol)."""
        count, dim = (int(size) for size in vectors.shape)
        plan = plan_factory(count, dim, self.factory)
        index = build_index(vectors, plan.factory)
        name = index_file(collection)
        tuning, params = None, dict[str, float | int | str]()
        if plan.parameter is not None:
            tuning = _tune(index, vectors, plan.parameter, plan.candidates, self.target_recall)
            params = {tuning.parameter: tuning.value}
        write_index(index, folder / name)
        return WrittenIndex(
            factory=plan.factory, index_file=name, search_params=params, tuning=tuning
        )


def _tune(
    index: Any,
    vectors: np.ndarray,
    parameter: TuningParameter,
    candidates: Sequence[int],
    target: float,
) -> IndexTuning:
    """The smallest of the planned ``candidates`` (``nprobe``: powers of two up to nlist) whose
    recall@10 against exact search reaches ``target`` (:func:`storage.index_tuning.tune_index`,
    as the index builder tunes bundles), over up to 200 stored rows as queries."""
    tuning = tune_index(
        index,
        vectors,
        parameter,
        candidates,
        target_recall=target,
        held_out_queries=_TUNING_QUERIES,
        seed=_TUNING_SEED,
    )
    kind = "ivf-flat" if factory_is_flat_ivf(index) else "ivf"
    return tuning.model_copy(update={"index_kind": kind, "reason": "live collection compaction"})


def factory_is_flat_ivf(index: Any) -> bool:
    """Whether ``index`` is an IVF index storing raw vectors (IVF-Flat)."""
    return isinstance(faiss.downcast_index(index), faiss.IndexIVFFlat)


@dataclass(frozen=True)
class ItemRows:
    """Items in row order: what a base or a snapshot holds."""

    ids: Sequence[str]
    vectors: np.ndarray
    metadata: Sequence[Mapping[str, Any]]
    texts: Sequence[str | None]


@dataclass(frozen=True)
class BaseSegment:
    """A loaded base: the ``items`` collection of a bundle version (its vectors and flat
    codes memory-mapped), the texts of its rows, and the last log sequence it holds."""

    seq: int
    version: str
    items: LoadedCollection
    texts: Sequence[str | None]

    @property
    def count(self) -> int:
        """Rows in the base."""
        return self.items.count


def write_items_bundle(
    root: Path,
    name: str,
    rows: ItemRows,
    *,
    fields: Mapping[str, FieldType],
    variant: str | None,
    variant_fingerprint: str | None,
    seq: int,
    index: BaseIndex,
    make_current: bool,
    source: str,
) -> Path:
    """Write ``rows`` as bundle ``root/name``'s new version (its ``items`` collection, typed
    ``fields``, the texts beside it); returns the version folder. ``seq`` and ``source`` are
    recorded in the manifest's build info."""
    texts = "".join(json.dumps(text, ensure_ascii=False) + "\n" for text in rows.texts)
    return write_bundle(
        root,
        name,
        [
            CollectionInput(
                name=ITEMS,
                ids=list(rows.ids),
                metadata=list(rows.metadata),
                vectors=rows.vectors,
                index=index,
                fields=dict(fields),
            )
        ],
        variant_name=variant or CLIENT_VECTORS,
        variant_fingerprint=variant_fingerprint or "",
        make_current=make_current,
        build_info={"live_collection": source, "log_seq": seq},
        extra_files={TEXTS_FILE: texts.encode("utf-8")},
    )


class BasePointer(NamedTuple):
    """What ``base.json`` says: the base version (None: no base), the last log sequence it
    holds, and which of its bundle's collections holds the items (``items``, or the
    collection of an offline bundle a collection started from)."""

    version: str | None
    seq: int
    collection: str = ITEMS


def publish_base(folder: Path, version: str | None, seq: int, collection: str = ITEMS) -> None:
    """Point the collection in ``folder`` at base ``version`` (None: no base, every item was
    deleted) holding the log up to ``seq``, its items in bundle collection ``collection``:
    atomically and durably."""
    pointer = folder / BASE_POINTER
    staging = folder / f".{BASE_POINTER}.{os.getpid()}.tmp"
    document = {"version": version, "seq": seq, "collection": collection}
    staging.write_text(json.dumps(document) + "\n", encoding="utf-8")
    replace_durably(staging, pointer)


def read_base_pointer(folder: Path) -> BasePointer:
    """The base that ``folder`` points at; (None, 0) without a pointer (a collection never
    compacted)."""
    pointer = folder / BASE_POINTER
    if not pointer.exists():
        return BasePointer(None, 0)
    try:
        document = json.loads(pointer.read_text(encoding="utf-8"))
        version, seq = document["version"], int(document["seq"])
        collection = str(document.get("collection", ITEMS))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BaseError(f"{pointer}: not a base pointer: {exc}") from None
    if version is not None and not isinstance(version, str):
        raise BaseError(f"{pointer}: version must be a string or null")
    return BasePointer(version, seq, collection)


def load_base(
    folder: Path, version: str, seq: int, dim: int, collection: str = ITEMS
) -> BaseSegment:
    """Load (verifying every hash) base ``version`` of the collection in ``folder``, its
    items in bundle collection ``collection`` (a bundle without a texts file: no texts)."""
    version_dir = folder / BASE_FOLDER / version
    try:
        bundle = load_bundle(version_dir)
        items = bundle.collections[collection]
        texts: list[str | None] = [None] * items.count
        if collection == ITEMS:
            with (version_dir / TEXTS_FILE).open(encoding="utf-8") as handle:
                texts = [json.loads(line) for line in handle]
    except (BundleError, KeyError, OSError, ValueError) as exc:
        raise BaseError(f"{version_dir}: cannot load the base: {exc}") from exc
    if items.dim != dim or len(texts) != items.count:
        raise BaseError(f"{version_dir}: dimension or row count disagrees with the collection")
    return BaseSegment(seq=seq, version=version, items=items, texts=texts)


def remove_unpublished(folder: Path, keep: str | None) -> None:
    """Remove every base version of ``folder`` but ``keep`` (a compaction cut short, or a base
    a later one replaced); readers still holding an old one keep their mapped pages."""
    base_dir = folder / BASE_FOLDER
    if not base_dir.is_dir():
        return
    removed = False
    for entry in base_dir.iterdir():
        if entry.name != keep:
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink()
            removed = True
    if removed:
        fsync_path(base_dir)


@dataclass(frozen=True)
class SnapshotInfo:
    """What a snapshot holds, from its verified manifest: the dimension, the variant that
    embedded it (None: client vectors) and its build, and its typed fields."""

    dim: int
    variant: str | None
    variant_fingerprint: str | None
    fields: Mapping[str, FieldType]
    count: int


def read_snapshot(version_dir: Path, collection: str = ITEMS) -> SnapshotInfo:
    """Verify the snapshot (or base, or offline bundle) in ``version_dir`` — every file
    against its manifest hash — and say what its ``collection`` holds; :class:`BaseError` when
    it is not one."""
    try:
        manifest = verify_bundle(version_dir)
        items = manifest.collections[collection]
        if collection == ITEMS and not (version_dir / TEXTS_FILE).is_file():
            raise BaseError(f"{version_dir}: no {TEXTS_FILE}")
    except (BundleError, KeyError, OSError) as exc:
        raise BaseError(f"{version_dir}: not a live collection's snapshot: {exc}") from exc
    client = manifest.variant_name == CLIENT_VECTORS
    return SnapshotInfo(
        dim=manifest.dim,
        variant=None if client else manifest.variant_name,
        variant_fingerprint=None if client else manifest.variant_fingerprint,
        fields=dict(items.fields),
        count=items.count,
    )

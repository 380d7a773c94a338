"""The live collections one service serves: opened (their logs replayed) at start-up, created and
dropped over HTTP (:mod:`service.engine.writes.collection_creation` makes what a request asks for
into a spec), each with its writer (:class:`service.engine.collection.write_path.CollectionWriter`)
and the high-water marks a write must fit under (:meth:`LiveCollections.admit`).

A live collection's name is its only name (no ``<bundle>:`` qualifier); it may not be the name of
a collection the catalog serves from a bundle, so a search names one or the other, never both.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from formats.field_types import FieldType
from service.engine.collection.commit_signal import CommitSignal
from service.engine.collection.live_view import LiveFields
from service.engine.collection.write_path import CollectionWriter
from service.engine.rank.lexical_index import LexicalIndexes
from service.exceptions import (
    CollectionEmptyError,
    CollectionExistsError,
    CollectionLimitError,
    FieldMismatchError,
    InvalidQueryError,
    NotFoundError,
    OverloadedError,
    WriteFailedError,
    WritesUnavailableError,
    quoted,
)
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.live import collection as collection_files
from storage.live.base import ITEMS, BaseError
from storage.live.collection import SNAPSHOTS_FOLDER, LiveCollection, Snapshot
from storage.live.idempotency import KeyTable
from storage.live.spec import CollectionSpec, CollectionSpecError
from storage.live.terms import TermHistory

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CollectionCopy:
    """A collection as a follower installs it from its leader: the spec, the base (a bundle
    version folder, None: no base) with the last sequence number it holds and its bundle
    collection, the term history and the idempotency keys remembered."""

    spec: CollectionSpec
    base_dir: Path | None
    base_seq: int
    base_collection: str
    terms: TermHistory
    keys: KeyTable


@dataclass(frozen=True)
class LiveEntry:
    """One open live collection: its writer (which holds the collection) and its fields."""

    writer: CollectionWriter
    fields: LiveFields
    lexical: LexicalIndexes = field(default_factory=LexicalIndexes, compare=False, repr=False)
    """The collection's keyword indexes, made on first use and renewed with its segment."""

    @property
    def collection(self) -> LiveCollection:
        """The open collection."""
        return self.writer.collection


class LiveCollections:
    """The open live collections under ``settings.collections_dir`` (none when it is unset or
    ``unavailable`` says why this process cannot own logs)."""

    def __init__(
        self, settings: Settings, metrics: ServiceMetrics, unavailable: str | None = None
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._root = settings.collections_dir
        if self._root is None and unavailable is None:
            unavailable = (
                "this server keeps no live collections: start it with collections_dir "
                "(CRISSCROSS_COLLECTIONS_DIR) to create and write collections"
            )
        self._unavailable = unavailable
        self._entries: dict[str, LiveEntry] = {}
        self._lock = asyncio.Lock()
        self.signal = CommitSignal()
        """Fired whenever any collection here makes writes visible (or is installed)."""

    @property
    def root(self) -> Path | None:
        """The folder of the collections (None: none are kept)."""
        return None if self._unavailable is not None else self._root

    def open_all(self) -> list[str]:
        """Open every collection under the folder (blocking: replays each log); returns their
        names. A collection that cannot be opened is logged and left unserved."""
        root = self.root
        if root is None:
            return []
        for name in collection_files.collection_names(root):
            try:
                self._add(LiveCollection.open(root / name))
            except (OSError, ValueError, RuntimeError) as exc:
                logger.error("live collection %s cannot be opened, not served: %s", name, exc)
        return sorted(self._entries)

    def _add(self, collection: LiveCollection) -> LiveEntry:
        settings = self._settings
        writer = CollectionWriter(
            collection,
            self._metrics,
            signal=self.signal,
            max_pending=settings.max_pending_writes,
            retry_after_s=settings.write_retry_after_s,
            compact_dead_fraction=settings.compact_dead_fraction,
            compact_min_rows=settings.compact_min_rows,
            compact_own_rows=settings.compact_own_rows,
        )
        entry = LiveEntry(writer, LiveFields.of(collection.name, collection.spec.fields))
        self._entries[collection.name] = entry
        recovery = collection.recovery
        if recovery.truncated_bytes:
            logger.warning(
                "live collection %s: cut %d bytes off its log (%s)",
                collection.name,
                recovery.truncated_bytes,
                recovery.reason,
            )
        view = collection.view()
        self._metrics.record_collection(
            collection.name, view.count, collection.rows, collection.log_bytes
        )
        return entry

    def get(self, name: str) -> LiveEntry | None:
        """The live collection ``name``, or None."""
        return self._entries.get(name)

    def require(self, name: str) -> LiveEntry:
        """The live collection ``name``; :class:`WritesUnavailableError` on a server without
        live collections, :class:`NotFoundError` for an unknown name."""
        self.require_writable()
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(sorted(self._entries)) or "none"
            raise NotFoundError(f"unknown live collection {quoted(name)}; live: {known}")
        return entry

    def admit(self, name: str, rows: int) -> LiveEntry:
        """The live collection ``name`` (as :meth:`require`), when a write of ``rows`` rows
        fits under its high-water marks: :class:`OverloadedError` (with the settings'
        ``write_retry_after_s``), before anything is embedded or logged, when the rows written
        since its base would pass ``max_live_rows`` or its log has reached ``max_log_bytes``."""
        entry = self.require(name)
        settings, collection = self._settings, entry.collection
        reason = None
        if collection.own_rows + rows > settings.max_live_rows:
            reason = (
                f"it holds {collection.own_rows} rows written since its base and this write adds "
                f"{rows} (max_live_rows={settings.max_live_rows})"
            )
        elif collection.log_bytes >= settings.max_log_bytes:
            reason = (
                f"its log holds {collection.log_bytes} bytes "
                f"(max_log_bytes={settings.max_log_bytes})"
            )
        if reason is not None:
            raise OverloadedError(
                f"collection {collection.name!r} takes no more writes now: {reason}",
                settings.write_retry_after_s,
            )
        return entry

    def require_writable(self) -> None:
        """Raise :class:`WritesUnavailableError` when this server keeps no live collections."""
        if self._unavailable is not None:
            raise WritesUnavailableError(self._unavailable)

    @property
    def entries(self) -> list[LiveEntry]:
        """The open collections, by name."""
        return [self._entries[name] for name in sorted(self._entries)]

    @property
    def snapshots_root(self) -> Path:
        """Where snapshots are written: ``<collections_dir>/.snapshots/<name>/<version>``."""
        root = self.root
        if root is None:
            raise WritesUnavailableError(self._unavailable or "no live collections")
        return root / SNAPSHOTS_FOLDER

    def snapshot_path(self, collection: str, version: str) -> Path:
        """The folder of snapshot ``version`` of ``collection``; :class:`NotFoundError` when
        there is none."""
        self.require_writable()
        path = self.snapshots_root / collection / version
        if not (path / "manifest.json").is_file():
            raise NotFoundError(f"no snapshot {quoted(version)} of collection {quoted(collection)}")
        return path

    async def snapshot(self, name: str) -> Snapshot:
        """Write a snapshot of collection ``name`` (see :meth:`snapshot_path`);
        :class:`CollectionEmptyError` when it holds no item."""
        entry = self.require(name)
        if entry.collection.view().count == 0:
            raise CollectionEmptyError(
                f"live collection {quoted(name)} holds no item: nothing to snapshot"
            )
        try:
            return await entry.writer.snapshot(self.snapshots_root)
        except BaseError as exc:
            raise WriteFailedError(str(exc), self._settings.write_retry_after_s) from None

    async def create(
        self,
        spec: CollectionSpec,
        taken: set[str],
        base_from: Path | None = None,
        base_collection: str = ITEMS,
    ) -> LiveEntry:
        """Create and open collection ``spec``, starting from the bundle version in
        ``base_from`` (a snapshot, or a served bundle whose collection ``base_collection``
        holds the items; None: empty); ``taken`` are the names the catalog serves. Raises
        :class:`CollectionExistsError`, :class:`CollectionLimitError`,
        :class:`WritesUnavailableError`."""
        self.require_writable()
        root = self.root
        assert root is not None
        async with self._lock:
            if spec.name in self._entries or spec.name in taken:
                raise CollectionExistsError(f"a collection named {quoted(spec.name)} exists")
            if len(self._entries) >= self._settings.max_collections:
                raise CollectionLimitError(
                    f"{len(self._entries)} live collections exist "
                    f"(max_collections={self._settings.max_collections}); drop one first"
                )

            def make() -> LiveCollection:
                try:
                    folder = collection_files.create_collection(
                        root, spec, base_from, base_collection
                    )
                except collection_files.CollectionExistsError as exc:
                    raise CollectionExistsError(str(exc)) from None
                return LiveCollection.open(folder)

            return self._add(await asyncio.to_thread(make))

    async def add_fields(
        self, name: str, fields: Mapping[str, FieldType | None], max_fields: int
    ) -> LiveEntry:
        """Declare new ``fields`` in collection ``name``, durably (see
        :meth:`CollectionWriter.add_fields`), and return its entry, renewed. A field declared
        already with the same type is left as it is (the request may be repeated). Fields are
        only ever added: :class:`FieldMismatchError` naming a field declared with another type,
        or one given null (a removal); :class:`InvalidQueryError` for null on a field not
        declared, or when the collection would hold more than ``max_fields``;
        :class:`WriteFailedError` when the spec cannot be written."""
        entry = self.require(name)
        async with self._lock:
            if self._entries.get(name) is not entry:
                raise NotFoundError(f"unknown live collection {quoted(name)}")
            declared = entry.collection.spec.fields
            added = _added_fields(declared, fields)
            if not added:
                return entry
            if len(declared) + len(added) > max_fields:
                raise InvalidQueryError(
                    f"fields: collection {quoted(name)} declares {len(declared)} fields and this "
                    f"adds {len(added)}, more than max_collection_fields={max_fields}"
                )
            try:
                spec = await entry.writer.add_fields(added)
            except CollectionSpecError as exc:
                raise InvalidQueryError(f"fields: {exc}") from None
            renewed = dataclasses.replace(entry, fields=LiveFields.of(name, spec.fields))
            self._entries[name] = renewed
            return renewed

    async def drop(self, name: str) -> None:
        """Finish the collection's pending writes, close it and delete its folder."""
        entry = self.require(name)
        root = self.root
        assert root is not None
        async with self._lock:
            if self._entries.get(name) is not entry:
                raise NotFoundError(f"unknown live collection {quoted(name)}")
            del self._entries[name]
            await entry.writer.close()
            await asyncio.to_thread(collection_files.drop_collection, root, name)
            self._metrics.forget_collection(name)

    async def install(self, copy: CollectionCopy) -> LiveEntry:
        """Put ``copy`` of a collection (a follower's copy of its leader's) in place of the
        collection of that name, if any: the old one serves reads until the new one is open,
        then its folder is removed. Its base (if any) is hard-linked from ``copy.base_dir``,
        which the caller removes after."""
        root = self.root
        if root is None:
            raise WritesUnavailableError(self._unavailable or "no live collections")
        name = copy.spec.name
        async with self._lock:
            old = self._entries.get(name)
            if old is not None:
                await old.writer.close()

            def make() -> tuple[LiveCollection, Path | None]:
                aside = None
                if (root / name).exists():
                    aside = root / f".dropped-{name}-{uuid.uuid4().hex}"
                    (root / name).rename(aside)
                folder = collection_files.create_collection(
                    root,
                    copy.spec,
                    copy.base_dir,
                    copy.base_collection,
                    base_seq=copy.base_seq,
                    terms=copy.terms,
                    keys=copy.keys,
                )
                return LiveCollection.open(folder), aside

            collection, aside = await asyncio.to_thread(make)
            entry = self._add(collection)
            if aside is not None:
                await asyncio.to_thread(shutil.rmtree, aside, True)
        self.signal.fire()
        return entry

    async def close(self) -> None:
        """Finish every pending write and close every log."""
        for entry in list(self._entries.values()):
            await entry.writer.close()
        self._entries.clear()


def _added_fields(
    declared: Mapping[str, FieldType], asked: Mapping[str, FieldType | None]
) -> dict[str, FieldType]:
    """The fields of ``asked`` that ``declared`` lacks; :class:`FieldMismatchError` for one it
    declares with another type or that ``asked`` removes (null), :class:`InvalidQueryError` for
    null on one it lacks."""
    added: dict[str, FieldType] = {}
    for field_name, kind in asked.items():
        held = declared.get(field_name)
        if kind is None and held is not None:
            raise FieldMismatchError(
                f"fields.{field_name}: field {quoted(field_name)} is declared ({held}); fields "
                "are only added, never removed",
                param=f"fields.{field_name}",
            )
        if kind is None:
            raise InvalidQueryError(
                f"fields.{field_name}: null declares nothing; give the field's type",
                param=f"fields.{field_name}",
            )
        if held is None:
            added[field_name] = FieldType(kind)
        elif held != kind:
            raise FieldMismatchError(
                f"fields.{field_name}: field {quoted(field_name)} is declared as {held}, not "
                f"{kind}; a field's type never changes",
                param=f"fields.{field_name}",
            )
    return added

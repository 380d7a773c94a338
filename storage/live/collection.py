"""A live collection on disk: a folder holding its spec, its base segment and its write-ahead
log, replayed into a mutable segment when it opens.

``<root>/<name>/collection.json`` says what the collection is (dimension, typed fields, the
variant that embeds its texts and images, if any); ``<root>/<name>/base.json`` names the base
segment — a bundle version under ``base/`` holding every item alive at one sequence number
(:mod:`storage.live.base`), none before the first compaction; ``<root>/<name>/log.wal`` holds
every operation after it (:mod:`storage.live.log`). A collection is created by writing
its folder under a staging name, fsyncing it and renaming it into place, and dropped by
renaming it out of the way before it is removed: a crash leaves it whole or absent. One process
owns a collection while it is open.

The spec changes in one way only: fields are added (:meth:`LiveCollection.add_fields`). The
new spec is written beside the old one, fsynced, renamed over it and the folder fsynced, so a
crash leaves the old spec or the new one, never half of either; a field is in the spec before
any record that gives it a value is logged, so replay always reads such a record with a spec
that declares it.

Writes take two steps: :meth:`LiveCollection.stage` gives an operation the next sequence number
and applies it to the segment, where readers do not see it yet; :meth:`LiveCollection.commit`
appends every staged record to the log with one fsync and then raises the visible sequence, so
a reader sees a write only once it is durable, and concurrent writers share the fsync.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from formats.field_types import FieldType
from storage.durability import fsync_path, replace_durably
from storage.live.base import (
    BASE_FOLDER,
    ITEMS,
    BaseError,
    BaseIndex,
    BaseSegment,
    ItemRows,
    load_base,
    publish_base,
    read_base_pointer,
    remove_unpublished,
    write_items_bundle,
)
from storage.live.idempotency import KeyedWrite, KeyTable, read_keys, write_keys
from storage.live.log import LogError, LogRecord, Recovery, WriteAheadLog, read_frames
from storage.live.operations import Checkpoint, Operation, decode, encode
from storage.live.segment import MutableSegment, SegmentView
from storage.live.spec import CollectionSpec
from storage.live.terms import TermHistory, read_terms, write_terms

SPEC_FILE: Final = "collection.json"
SPEC_STAGING: Final = ".collection.json.tmp"
"""Beside the spec, the new spec :meth:`LiveCollection.add_fields` writes before the rename."""
RENUMBERINGS_KEPT: Final = 4
"""How many compactions' renumberings of rows an open collection remembers
(:meth:`LiveCollection.carried_row`)."""
LOG_FILE: Final = "log.wal"
SNAPSHOTS_FOLDER: Final = ".snapshots"
"""Under the collections' folder, the bundles that snapshots write (one per collection)."""
_STAGING: Final = ".staging-"
_DROPPED: Final = ".dropped-"


class CollectionExistsError(ValueError):
    """A collection of that name exists already."""


def collection_names(root: Path) -> list[str]:
    """The collections under ``root``, by name (staging and dropped leftovers removed)."""
    if not root.is_dir():
        return []
    names = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith((_STAGING, _DROPPED)):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.is_dir() and (entry / SPEC_FILE).is_file():
            names.append(entry.name)
    return names


def create_collection(
    root: Path,
    spec: CollectionSpec,
    base_from: Path | None = None,
    base_collection: str = ITEMS,
    *,
    base_seq: int = 0,
    terms: TermHistory | None = None,
    keys: KeyTable | None = None,
) -> Path:
    """Write the folder of a new collection under ``root`` atomically and durably; raises
    :class:`CollectionExistsError` when ``spec.name`` is taken. ``base_from`` (a bundle version
    folder: a snapshot, or a bundle ``index_builder`` wrote, its items in collection
    ``base_collection``) becomes its base: its files are linked (copied across file systems)
    into the new folder, and the log starts empty. A replica's copy of its leader's collection
    gives the leader's base sequence number (``base_seq``: the log goes on after it), term
    history and remembered idempotency keys."""
    root.mkdir(parents=True, exist_ok=True)
    target = root / spec.name
    if target.exists():
        raise CollectionExistsError(f"collection {spec.name!r} exists")
    staging = root / f"{_STAGING}{spec.name}-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        spec_path = staging / SPEC_FILE
        spec_path.write_text(spec.to_json(), encoding="utf-8")
        fsync_path(spec_path)
        (staging / LOG_FILE).touch()
        fsync_path(staging / LOG_FILE)
        if terms is not None and terms.entries:
            write_terms(staging, terms)
        if keys is not None and len(keys):
            write_keys(staging, keys)
        if base_from is not None:
            mine = root.resolve() in base_from.resolve().parents  # a snapshot of ours
            _link_base(base_from, staging, base_collection, link=mine, seq=base_seq)
        elif base_seq:
            publish_base(staging, None, base_seq)
        fsync_path(staging)
        if target.exists():
            raise CollectionExistsError(f"collection {spec.name!r} exists")
        staging.rename(target)
        fsync_path(root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _link_base(version_dir: Path, folder: Path, collection: str, *, link: bool, seq: int) -> None:
    """With ``link`` (a snapshot: the live collections' own files, never changed in place) the
    files are hard-linked; else (a bundle of the bundles folder) copied, so that nothing done
    to its files there can reach the pages this collection maps."""
    base_dir = folder / BASE_FOLDER
    target = base_dir / version_dir.name
    target.mkdir(parents=True)
    for source in sorted(version_dir.iterdir()):
        if not source.is_file():
            continue
        try:
            if not link:
                raise OSError("copied")
            (target / source.name).hardlink_to(source)
        except OSError:
            shutil.copyfile(source, target / source.name)
            fsync_path(target / source.name)
    fsync_path(target)
    fsync_path(base_dir)
    publish_base(folder, version_dir.name, seq, collection)


def drop_collection(root: Path, name: str) -> None:
    """Remove collection ``name``: renamed out of the way (durably), then deleted."""
    target = root / name
    aside = root / f"{_DROPPED}{name}-{uuid.uuid4().hex}"
    target.rename(aside)
    fsync_path(root)
    shutil.rmtree(aside, ignore_errors=True)


class LiveCollection:
    """An open live collection: its spec, its log and its segment (see the module docstring).

    One thread at a time may stage, commit and compact; any thread may read :meth:`view` and
    take a :meth:`snapshot`."""

    def __init__(
        self,
        folder: Path,
        spec: CollectionSpec,
        log: WriteAheadLog,
        segment: MutableSegment,
        recovery: Recovery,
        *,
        base_seq: int = 0,
        base_collection: str = ITEMS,
        keys: KeyTable | None = None,
        terms: TermHistory | None = None,
    ) -> None:
        self.folder = folder
        self.spec = spec
        self.recovery = recovery
        self._base_seq = base_seq
        self._base_collection = base_collection
        self._keys = keys if keys is not None else KeyTable()
        self._terms = terms if terms is not None else TermHistory()
        self._log = log
        self._segment = segment
        self._visible = segment.applied_seq
        self._staged: list[LogRecord] = []
        self._view: SegmentView | None = None
        self._renumbered: dict[int, tuple[int, np.ndarray]] = {}
        """Per generation a compaction ended: the generation it started and the rows of the
        old one it kept (ascending; row ``i`` of the new one is ``kept[i]`` of the old)."""

    @classmethod
    def open(cls, folder: Path) -> LiveCollection:
        """Open the collection in ``folder``: read its spec, load its base (verifying its
        hashes; a version the pointer does not name is removed), recover its log (a torn tail
        is cut off) and replay every record after the base into a new segment."""
        (folder / SPEC_STAGING).unlink(missing_ok=True)  # an add_fields a crash cut short
        spec = CollectionSpec.from_json((folder / SPEC_FILE).read_text(encoding="utf-8"))
        version, base_seq, items = read_base_pointer(folder)
        remove_unpublished(folder, version)
        base = None if version is None else load_base(folder, version, base_seq, spec.dim, items)
        keys, terms = read_keys(folder), read_terms(folder)
        log, records, recovery = WriteAheadLog.open(folder / LOG_FILE, after=base_seq)
        try:
            operations = [decode(record.payload) for record in records]
            first = operations[0] if operations else None
            if records and records[0].seq != base_seq + 1 and not isinstance(first, Checkpoint):
                raise ValueError(
                    f"the log goes on at sequence {records[0].seq}, the base holds up to {base_seq}"
                )
            capacity = len(first.ids) if isinstance(first, Checkpoint) else 0
            # Without a base (none yet, or a compaction found no item) the segment starts at
            # the pointer's sequence, where the log goes on.
            segment = MutableSegment(
                spec.dim, spec.fields, capacity=max(1024, capacity), base=base, applied=base_seq
            )
            for record, operation in zip(records, operations, strict=True):
                done = segment.apply(record.seq, operation)
                if operation.key is not None:
                    keys.remember(operation.key, KeyedWrite(record.seq, done))
        except ValueError as exc:
            log.close()
            raise LogError(f"{folder / LOG_FILE}: record cannot be replayed: {exc}") from exc
        return cls(
            folder,
            spec,
            log,
            segment,
            recovery,
            base_seq=base_seq,
            base_collection=items,
            keys=keys,
            terms=terms,
        )

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.spec.name

    @property
    def visible_seq(self) -> int:
        """The last sequence number readers see (every one up to it is durable)."""
        return self._visible

    @property
    def base_seq(self) -> int:
        """The last sequence number the base holds (the log goes on after it)."""
        return self._base_seq

    @property
    def base_collection(self) -> str:
        """The bundle collection of the base that holds the items."""
        return self._base_collection

    @property
    def terms(self) -> TermHistory:
        """Which leader term wrote which records (:mod:`storage.live.terms`)."""
        return self._terms

    def begin_term(self, term: int) -> TermHistory:
        """Record, durably, that the records after the visible sequence are of ``term``
        (this replica leads from now on). Call it with nothing staged."""
        if self._staged:
            raise RuntimeError("begin_term() with writes staged")
        history = self._terms.begun(term, self._visible + 1)
        write_terms(self.folder, history)
        self._terms = history
        return history

    def adopt_terms(self, history: TermHistory) -> None:
        """Take the leader's term history (a follower whose records agree with the leader's),
        durably; nothing is written when it is the one held."""
        if history != self._terms:
            write_terms(self.folder, history)
            self._terms = history

    def keyed(self, key: str) -> KeyedWrite | None:
        """The write that idempotency key ``key`` made, staged or visible (None: none)."""
        return self._keys.get(key)

    @property
    def log_bytes(self) -> int:
        """Size of the log file."""
        return self._log.size_bytes

    @property
    def rows(self) -> int:
        """Rows of the base and the segment, every version counted."""
        return self._segment.rows

    @property
    def own_rows(self) -> int:
        """Rows written since the base (every version counted): what memory grows with."""
        return self._segment.rows - (0 if self._segment.base is None else self._segment.base.count)

    @property
    def base(self) -> BaseSegment | None:
        """The base segment (None before the first compaction)."""
        return self._segment.base

    @property
    def failed(self) -> str | None:
        """Why the collection stopped taking writes (None while it takes them)."""
        return self._log.failed

    def view(self) -> SegmentView:
        """The collection as readers see it now (one view per visible sequence, shared)."""
        view, segment = self._view, self._segment
        if view is None or view.seq != self._visible or view.fields is not segment.fields:
            view = segment.view(self._visible)
            self._view = view
        return view

    def add_fields(self, fields: Mapping[str, FieldType]) -> CollectionSpec:
        """Declare ``fields`` (names the spec does not hold; :class:`CollectionSpecError` for
        a bad name, ``ValueError`` for a name it holds) and return the new spec, durable: the
        spec file is replaced atomically (see the module docstring). Items written before hold
        no value of them; views made from now on read them. Call it with nothing staged (the
        writer's thread, between groups). Raises ``OSError`` when the spec cannot be written
        (nothing changed)."""
        if self._staged:
            raise RuntimeError("add_fields() with writes staged")
        taken = sorted(set(fields) & set(self.spec.fields))
        if taken:
            raise ValueError(f"fields {', '.join(map(repr, taken))} are declared already")
        if not fields:
            return self.spec
        spec = dataclasses.replace(self.spec, fields={**self.spec.fields, **fields})
        staging = self.folder / SPEC_STAGING
        staging.write_text(spec.to_json(), encoding="utf-8")
        replace_durably(staging, self.folder / SPEC_FILE)
        self.spec = spec
        self._segment.add_fields(fields)
        self._view = None
        return spec

    def carried_row(self, generation: int, row: int, to: int) -> int | None:
        """Where a reader that stood at row ``row`` of the segment of generation
        ``generation`` (:attr:`SegmentView.generation`) goes on in the segment of generation
        ``to``: the row of the first item at or after it that the compactions between them
        kept (a compaction keeps the rows alive in their order). None when a compaction between
        them is not remembered (more than :data:`RENUMBERINGS_KEPT` ago, or before the
        collection was opened)."""
        while generation != to:
            step = self._renumbered.get(generation)
            if step is None:
                return None
            generation, kept = step
            row = int(np.searchsorted(kept, row, side="left"))
        return row

    def staged_view(self) -> SegmentView:
        """The collection with every staged operation applied (for resolving the next one)."""
        return self._segment.view(self._segment.applied_seq)

    def stage(self, operation: Operation) -> tuple[int, int]:
        """Give ``operation`` the next sequence number and apply it, unseen by readers until
        :meth:`commit`; returns (its sequence number, items it wrote or deleted)."""
        if self._log.failed is not None:
            raise LogError(f"the log stopped taking records: {self._log.failed}")
        seq = self._segment.applied_seq + 1
        payload = encode(operation)
        done = self._segment.apply(seq, operation)
        self._staged.append(LogRecord(seq, payload))
        if operation.key is not None:
            self._keys.remember(operation.key, KeyedWrite(seq, done))
        return seq, done

    def commit(self, sync: bool = True) -> int:
        """Append every staged record with one write and one fsync (none when ``sync`` is
        False), then let readers see them; returns the visible sequence. Raises
        :class:`LogError` when the log fails: the staged operations then stay unseen and the
        collection takes no more writes."""
        staged, self._staged = self._staged, []
        try:
            self._log.append(staged, sync=sync)
        except LogError:
            self._keys.forget_after(self._visible)
            raise
        if staged:
            self._visible = staged[-1].seq
        return self._visible

    def apply_replicated(self, data: bytes) -> int:
        """Append the leader's framed records ``data`` (:meth:`frames_after` of the leader's
        copy, which must go on from :attr:`visible_seq`) to this collection's log with one
        write and one fsync, applied to the segment, then let readers see them; returns the
        visible sequence. ``ValueError`` (nothing applied) when a record is damaged, out of
        sequence or not an operation; :class:`LogError` when the log fails. Call it with
        nothing staged (a follower's writer thread)."""
        if self._staged:
            raise RuntimeError("apply_replicated() with writes staged")
        if self._log.failed is not None:
            raise LogError(f"the log stopped taking records: {self._log.failed}")
        records = read_frames(data, self._segment.applied_seq)
        operations = [decode(record.payload) for record in records]
        for record, operation in zip(records, operations, strict=True):
            done = self._segment.apply(record.seq, operation)
            self._staged.append(record)
            if operation.key is not None:
                self._keys.remember(operation.key, KeyedWrite(record.seq, done))
        return self.commit()

    def frames_after(self, after: int, max_bytes: int) -> bytes:
        """The framed records after ``after`` that readers see (at least one, then up to
        ``max_bytes``): what a follower appends (:meth:`apply_replicated`). Any thread.
        ``ValueError`` when a compaction has put them in the base (the follower needs it)."""
        return self._log.frames_after(after, self._visible, max_bytes)

    def compact(self, index: BaseIndex | None = None) -> Compaction:
        """Write the items alive now, in row order (so the tie rule orders them as before), as
        a new base — a bundle version with a faiss index of ``index`` (default: the spec's
        factory), tuned when it is approximate — publish it, serve it, then empty the log:
        replaced versions and deleted items leave memory and disk, and nothing is embedded
        again. Call it with nothing staged (the writer's thread, between groups).

        Each step is atomic and durable, and a crash between two leaves a collection that opens
        to the same items: after the bundle is written and before it is published, the old
        base and the whole log (the new version is removed at the next open); after the
        publication, the new base and a log whose records up to its sequence number are
        skipped. Readers holding an older view finish on it. Raises :class:`LogError` when the
        log cannot be rewritten (the collection then takes no more writes) and
        :class:`BaseError` when the base cannot be written (nothing changed)."""
        if self._staged:
            raise RuntimeError("compact() with writes staged")
        started = time.perf_counter()
        before_rows, before_bytes = self._segment.rows, self._log.size_bytes
        view = self.view()
        seq = view.seq
        rows = view.live_rows()
        old = self._segment.base
        version: str | None = None
        if len(rows):
            try:
                written = write_items_bundle(
                    self.folder,
                    BASE_FOLDER,
                    _item_rows(view, rows),
                    fields=self.spec.fields,
                    variant=self.spec.variant,
                    variant_fingerprint=self.spec.variant_fingerprint,
                    seq=seq,
                    index=index or BaseIndex(self.spec.index),
                    make_current=False,
                    source=self.name,
                )
            except (OSError, ValueError, RuntimeError) as exc:
                raise BaseError(f"{self.folder}: cannot write a base: {exc}") from exc
            version = written.name
        try:
            write_keys(self.folder, self._keys)
            publish_base(self.folder, version, seq)
            base = None if version is None else load_base(self.folder, version, seq, self.spec.dim)
        except OSError as exc:
            raise BaseError(f"{self.folder}: cannot publish the base: {exc}") from exc
        # Without a base (every item was deleted) the empty segment still stands at ``seq``.
        generation = self._segment.generation
        self._segment = MutableSegment(self.spec.dim, self.spec.fields, base=base, applied=seq)
        if generation != seq:  # the same sequence: nothing written since, rows unchanged
            self._renumbered[generation] = (seq, rows)
            while len(self._renumbered) > RENUMBERINGS_KEPT:
                del self._renumbered[next(iter(self._renumbered))]
        self._view, self._visible = None, seq
        self._base_seq, self._base_collection = seq, ITEMS
        self._log.replace_with([], after=seq)
        remove_unpublished(self.folder, version)
        return Compaction(
            seq=seq,
            rows_before=before_rows,
            rows_after=self._segment.rows,
            log_bytes_before=before_bytes,
            log_bytes_after=self._log.size_bytes,
            seconds=time.perf_counter() - started,
            base_version=version,
            replaced_version=None if old is None else old.version,
            index_factory=None if base is None else base.items.factory,
            recall_at_10=(
                None
                if base is None or base.items.tuning is None
                else base.items.tuning.recall_at_10
            ),
        )

    def snapshot(self, root: Path) -> Snapshot:
        """Write the items readers see now as a new version of bundle ``root/<name>`` (its
        ``CURRENT`` pointed at it): a consistent, checksummed copy that the service, the index
        builder or :func:`create_collection` (``base_from``) read back. Any thread; writes go
        on meanwhile. Raises :class:`BaseError` when it cannot be written, or when the
        collection holds no item (a bundle holds at least one)."""
        started = time.perf_counter()
        view = self.view()
        rows = view.live_rows()
        if not len(rows):
            raise BaseError(f"collection {self.name!r} holds no item: nothing to snapshot")
        try:
            written = write_items_bundle(
                root,
                self.name,
                _item_rows(view, rows),
                fields=self.spec.fields,
                variant=self.spec.variant,
                variant_fingerprint=self.spec.variant_fingerprint,
                seq=view.seq,
                index=BaseIndex(self.spec.index),
                make_current=True,
                source=self.name,
            )
        except (OSError, ValueError, RuntimeError) as exc:
            raise BaseError(f"cannot write a snapshot of {self.name!r}: {exc}") from exc
        return Snapshot(
            seq=view.seq,
            count=len(rows),
            path=written,
            version=written.name,
            seconds=time.perf_counter() - started,
        )

    def close(self) -> None:
        """Close the log."""
        self._log.close()


def _item_rows(view: SegmentView, rows: np.ndarray) -> ItemRows:
    return ItemRows(
        ids=[view.item_id(int(row)) for row in rows],
        vectors=view.vectors_of(rows.astype(np.int64)),
        metadata=[view.metadata(int(row)) for row in rows],
        texts=[view.text(int(row)) for row in rows],
    )


@dataclass(frozen=True)
class Compaction:
    """What a compaction did: the sequence its base holds, rows (every version) and log bytes
    before and after, its time, the base version written (None: no item was alive) and the one
    it replaced, and the base's index (its factory and, for a tuned one, its recall@10)."""

    seq: int
    rows_before: int
    rows_after: int
    log_bytes_before: int
    log_bytes_after: int
    seconds: float
    base_version: str | None = None
    replaced_version: str | None = None
    index_factory: str | None = None
    recall_at_10: float | None = None


@dataclass(frozen=True)
class Snapshot:
    """A snapshot written: the sequence it holds, its items, its version folder and time."""

    seq: int
    count: int
    path: Path
    version: str
    seconds: float

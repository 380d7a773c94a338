"""A live collection on disk: a folder holding its spec and its write-ahead log, replayed into
a mutable segment when it opens.

``<root>/<name>/collection.json`` says what the collection is (dimension, typed fields, the
variant that embeds its texts and images, if any); ``<root>/<name>/log.wal`` holds every
operation since it was created (:mod:`storage.live.log`). A collection is created by writing
its folder under a staging name, fsyncing it and renaming it into place, and dropped by
renaming it out of the way before it is removed: a crash leaves it whole or absent. One process
owns a collection while it is open.

Writes take two steps: :meth:`LiveCollection.stage` gives an operation the next sequence number
and applies it to the segment, where readers do not see it yet; :meth:`LiveCollection.commit`
appends every staged record to the log with one fsync and then raises the visible sequence, so
a reader sees a write only once it is durable, and concurrent writers share the fsync.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import numpy as np

from formats.field_types import FieldType, field_name_problem
from storage.durability import fsync_path
from storage.live.log import LogError, LogRecord, Recovery, WriteAheadLog
from storage.live.operations import Checkpoint, Operation, decode, encode
from storage.live.segment import MutableSegment, SegmentView

SPEC_FILE: Final = "collection.json"
LOG_FILE: Final = "log.wal"
NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A collection's name: a letter or digit, then up to 63 letters, digits, ``_``, ``.``, ``-``."""
_STAGING: Final = ".staging-"
_DROPPED: Final = ".dropped-"


class CollectionExistsError(ValueError):
    """A collection of that name exists already."""


class CollectionSpecError(ValueError):
    """A spec that cannot describe a collection (bad name, dimension or field)."""


@dataclass(frozen=True)
class CollectionSpec:
    """What a live collection is: its name, dimension, typed fields and the variant that embeds
    its texts and images (None: the client sends vectors)."""

    name: str
    dim: int
    fields: Mapping[str, FieldType]
    variant: str | None = None
    variant_fingerprint: str | None = None
    created: str = ""

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise CollectionSpecError(
                f"collection name {self.name!r} must be 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        if self.dim < 1:
            raise CollectionSpecError(f"dim must be at least 1, got {self.dim}")
        for name in self.fields:
            if (problem := field_name_problem(name)) is not None:
                raise CollectionSpecError(problem)

    def to_json(self) -> str:
        """The spec file's text."""
        document = {
            "name": self.name,
            "dim": self.dim,
            "fields": {name: str(kind) for name, kind in sorted(self.fields.items())},
            "variant": self.variant,
            "variant_fingerprint": self.variant_fingerprint,
            "created": self.created,
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CollectionSpec:
        """The spec a spec file holds; :class:`CollectionSpecError` when it holds none."""
        try:
            document = json.loads(text)
            return cls(
                name=str(document["name"]),
                dim=int(document["dim"]),
                fields={str(k): FieldType(v) for k, v in document["fields"].items()},
                variant=document.get("variant"),
                variant_fingerprint=document.get("variant_fingerprint"),
                created=str(document.get("created", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, CollectionSpecError):
                raise
            raise CollectionSpecError(f"not a collection spec: {exc}") from None


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


def create_collection(root: Path, spec: CollectionSpec) -> Path:
    """Write the folder of a new collection under ``root`` atomically and durably; raises
    :class:`CollectionExistsError` when ``spec.name`` is taken."""
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
        fsync_path(staging)
        if target.exists():
            raise CollectionExistsError(f"collection {spec.name!r} exists")
        staging.rename(target)
        fsync_path(root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def drop_collection(root: Path, name: str) -> None:
    """Remove collection ``name``: renamed out of the way (durably), then deleted."""
    target = root / name
    aside = root / f"{_DROPPED}{name}-{uuid.uuid4().hex}"
    target.rename(aside)
    fsync_path(root)
    shutil.rmtree(aside, ignore_errors=True)


def now_text() -> str:
    """The current UTC time as ISO 8601, for :attr:`CollectionSpec.created`."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class LiveCollection:
    """An open live collection: its spec, its log and its segment (see the module docstring).

    One thread at a time may stage and commit; any thread may read :meth:`view`."""

    def __init__(
        self,
        folder: Path,
        spec: CollectionSpec,
        log: WriteAheadLog,
        segment: MutableSegment,
        recovery: Recovery,
    ) -> None:
        self.folder = folder
        self.spec = spec
        self.recovery = recovery
        self._log = log
        self._segment = segment
        self._visible = segment.applied_seq
        self._staged: list[LogRecord] = []
        self._view: SegmentView | None = None

    @classmethod
    def open(cls, folder: Path) -> LiveCollection:
        """Open the collection in ``folder``: read its spec, recover its log (a torn tail is cut
        off) and replay every record into a new segment."""
        spec = CollectionSpec.from_json((folder / SPEC_FILE).read_text(encoding="utf-8"))
        log, records, recovery = WriteAheadLog.open(folder / LOG_FILE)
        try:
            operations = [decode(record.payload) for record in records]
            first = operations[0] if operations else None
            if records and records[0].seq != 1 and not isinstance(first, Checkpoint):
                raise ValueError(
                    f"the log starts at sequence {records[0].seq} without a checkpoint"
                )
            capacity = len(first.ids) if isinstance(first, Checkpoint) else 0
            segment = MutableSegment(spec.dim, spec.fields, capacity=max(1024, capacity))
            for record, operation in zip(records, operations, strict=True):
                segment.apply(record.seq, operation)
        except ValueError as exc:
            log.close()
            raise LogError(f"{folder / LOG_FILE}: record cannot be replayed: {exc}") from exc
        return cls(folder, spec, log, segment, recovery)

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.spec.name

    @property
    def visible_seq(self) -> int:
        """The last sequence number readers see (every one up to it is durable)."""
        return self._visible

    @property
    def log_bytes(self) -> int:
        """Size of the log file."""
        return self._log.size_bytes

    @property
    def rows(self) -> int:
        """Rows in the segment, every version counted (memory grows with it)."""
        return self._segment.rows

    @property
    def failed(self) -> str | None:
        """Why the collection stopped taking writes (None while it takes them)."""
        return self._log.failed

    def view(self) -> SegmentView:
        """The collection as readers see it now (one view per visible sequence, shared)."""
        view = self._view
        if view is None or view.seq != self._visible:
            view = self._segment.view(self._visible)
            self._view = view
        return view

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
        return seq, done

    def commit(self, sync: bool = True) -> int:
        """Append every staged record with one write and one fsync (none when ``sync`` is
        False), then let readers see them; returns the visible sequence. Raises
        :class:`LogError` when the log fails: the staged operations then stay unseen and the
        collection takes no more writes."""
        staged, self._staged = self._staged, []
        self._log.append(staged, sync=sync)
        if staged:
            self._visible = staged[-1].seq
        return self._visible

    def compact(self) -> Compaction:
        """Rewrite the log as one checkpoint of the items alive now (in row order, so the tie
        rule orders them as before) and start a segment that holds them alone: replaced
        versions and deleted items leave memory and disk. Call it with nothing staged (the
        writer's thread, between groups). Atomic and durable
        (:meth:`storage.live.log.WriteAheadLog.replace_with`); readers holding an older view
        finish on it. Raises :class:`LogError` when the rewrite fails (the old log stays)."""
        if self._staged:
            raise RuntimeError("compact() with writes staged")
        started = time.perf_counter()
        before_rows, before_bytes = self._segment.rows, self._log.size_bytes
        view = self.view()
        rows = view.live_rows()
        checkpoint = Checkpoint(
            ids=tuple(view.item_id(int(row)) for row in rows),
            vectors=np.ascontiguousarray(view.vectors[rows]),
            metadata=tuple(view.metadata(int(row)) for row in rows),
            texts=tuple(view.text(int(row)) for row in rows),
        )
        segment = MutableSegment(self.spec.dim, self.spec.fields, capacity=max(1024, len(rows)))
        seq = max(view.seq, 1)
        segment.apply(seq, checkpoint)
        self._log.replace_with([LogRecord(seq, encode(checkpoint))])
        self._segment, self._view, self._visible = segment, None, seq
        return Compaction(
            seq=seq,
            rows_before=before_rows,
            rows_after=segment.rows,
            log_bytes_before=before_bytes,
            log_bytes_after=self._log.size_bytes,
            seconds=time.perf_counter() - started,
        )

    def close(self) -> None:
        """Close the log."""
        self._log.close()


@dataclass(frozen=True)
class Compaction:
    """What a compaction did: the sequence its checkpoint holds, segment rows and log bytes
    before and after, and its time."""

    seq: int
    rows_before: int
    rows_after: int
    log_bytes_before: int
    log_bytes_after: int
    seconds: float

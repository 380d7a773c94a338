"""The mutable segment: a live collection's items as they stand after each log record, kept
so that a reader can see the collection as of any applied sequence number.

Rows are only ever appended. Row ``r`` holds one version of one item: its vector, id, metadata
and text, the sequence number that wrote it (``created``) and the one that replaced or deleted
it (``deleted``, :data:`NEVER` while it lives). A reader at sequence ``S`` sees the rows with
``created <= S < deleted`` (:meth:`MutableSegment.view`), so a writer can apply a record before
it is durable and publish it afterwards by raising the visible sequence alone; a reader that
took its view earlier keeps a consistent picture. Each row also points at the previous version
of its id, so an id's version at ``S`` is found by walking back from the newest.

A segment may start from a base (:class:`storage.live.base.BaseSegment`, what the last
compaction wrote): rows ``0..base_rows - 1`` are the base's items, their vectors in its
memory-mapped bundle, written by the base's sequence number; a later write that replaces or
deletes one of them sets its ``deleted`` mark like any other row's, so the ``deleted`` array is
the base's delete bitmap (by sequence number). Rows from ``base_rows`` on are the segment's own,
their vectors in memory.

A field declared after rows were written (:meth:`MutableSegment.add_fields`) holds no value
in them: a base whose bundle predates it reads it as a column of no value.

The arrays grow by doubling; a view holds the arrays it started with, whose rows below its
length never change except for ``deleted`` marks of sequence numbers above the view's, which
it ignores. One thread writes (:meth:`MutableSegment.apply`); any thread reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from formats.field_types import FieldType
from storage.columns import Column, Mask, build_columns
from storage.live.base import BaseSegment
from storage.live.operations import Checkpoint, Delete, Operation, Upsert

NEVER: Final = np.iinfo(np.int64).max
"""The ``deleted`` mark of a row that lives."""
_NO_ROW: Final = -1


@dataclass(frozen=True)
class _Arrays:
    vectors: npt.NDArray[np.float32]
    """The segment's own rows' vectors (row ``base_rows + i`` at ``i``)."""
    created: npt.NDArray[np.int64]
    deleted: npt.NDArray[np.int64]
    previous: npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class SegmentView:
    """The segment as of sequence ``seq``: rows ``0..rows - 1`` of its arrays, those alive at
    ``seq`` counting. Read-only, safe to use on any thread while the writer goes on."""

    seq: int
    rows: int
    dim: int
    fields: Mapping[str, FieldType]
    base: BaseSegment | None
    _arrays: _Arrays
    _ids: list[str]
    _metadata: list[Mapping[str, Any]]
    _texts: list[str | None]
    _latest: dict[str, int]
    _owner: MutableSegment
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def segment(self) -> MutableSegment:
        """The segment this view reads: rows keep their numbers until a compaction replaces
        it with a new one."""
        return self._owner

    @property
    def generation(self) -> int:
        """The sequence number the segment this view reads starts at
        (:attr:`MutableSegment.generation`): two views of one generation number rows alike."""
        return self._owner.generation

    @property
    def base_rows(self) -> int:
        """Rows of the base (0 without one): rows ``0..base_rows - 1``."""
        return 0 if self.base is None else self.base.count

    @property
    def own_vectors(self) -> npt.NDArray[np.float32]:
        """float32 ``[rows - base_rows, dim]``: the vectors of the rows after the base, dead
        rows too (mask with :meth:`alive`)."""
        return self._arrays.vectors[: self.rows - self.base_rows]

    def vector(self, row: int) -> npt.NDArray[np.float32]:
        """A copy of row ``row``'s vector."""
        vectors = self.vectors_of(np.array([row], dtype=np.int64))
        one: npt.NDArray[np.float32] = vectors[0]
        return one

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """float32 ``[len(rows), dim]``: the vectors of ``rows`` (a copy), from the base or the
        segment's own."""
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        split = self.base_rows
        in_base = rows < split
        if self.base is not None and in_base.any():
            out[in_base] = self.base.items.vectors[rows[in_base]]
        if not in_base.all():
            out[~in_base] = self._arrays.vectors[rows[~in_base] - split]
        return out

    def alive(self) -> Mask:
        """One boolean per row: the row is an item's current version at :attr:`seq`."""
        cached = self._cache.get("alive")
        if cached is None:
            arrays = self._arrays
            created, deleted = arrays.created[: self.rows], arrays.deleted[: self.rows]
            cached = (created <= self.seq) & (deleted > self.seq)
            self._cache["alive"] = cached
        mask: Mask = cached
        return mask

    @property
    def count(self) -> int:
        """Items alive at :attr:`seq`."""
        return int(np.count_nonzero(self.alive()))

    def row_of(self, item_id: str) -> int | None:
        """The row of ``item_id``'s version at :attr:`seq`; None when it has none alive."""
        row = self._latest.get(item_id, _NO_ROW)
        arrays = self._arrays
        while row >= self.rows:  # written after this view: only the writer's arrays hold it
            row = int(self._owner.previous_of(row))
        while row != _NO_ROW and int(arrays.created[row]) > self.seq:
            row = int(arrays.previous[row])
        if row == _NO_ROW or int(arrays.deleted[row]) <= self.seq:
            return None
        return row

    def item_id(self, row: int) -> str:
        """The id row ``row`` holds."""
        return self._ids[row]

    def metadata(self, row: int) -> Mapping[str, Any]:
        """The metadata row ``row`` holds."""
        return self._metadata[row]

    def text(self, row: int) -> str | None:
        """The text row ``row`` was embedded from (None for a client's vector)."""
        return self._texts[row]

    def live_rows(self) -> npt.NDArray[np.int64]:
        """The rows alive at :attr:`seq`, ascending."""
        return np.flatnonzero(self.alive()).astype(np.int64)

    def base_columns(self) -> Mapping[str, Column]:
        """The typed columns of the base's rows, as its bundle stores them (empty without a
        base); a declared field the base's bundle lacks (one added after it was written) is a
        column of no value."""
        if self.base is None:
            return {}
        stored = self.base.items.columns
        added = {name: kind for name, kind in self.fields.items() if name not in stored}
        if not added:
            return stored
        cached = self._cache.get("base_columns")
        if cached is None:
            cached = {**stored, **build_columns([{}] * self.base_rows, added)}
            self._cache["base_columns"] = cached
        columns: dict[str, Column] = cached
        return columns

    def own_columns(self) -> dict[str, Column]:
        """The typed columns of the declared fields over rows ``base_rows..rows - 1`` (built
        on first use: filters read them)."""
        cached = self._cache.get("columns")
        if cached is None:
            cached = build_columns(self._metadata[self.base_rows : self.rows], self.fields)
            self._cache["columns"] = cached
        columns: dict[str, Column] = cached
        return columns


class MutableSegment:
    """The versions of a live collection's items (see the module docstring): on top of
    ``base``, or empty at sequence ``applied`` (a compaction that found no item alive)."""

    def __init__(
        self,
        dim: int,
        fields: Mapping[str, FieldType],
        capacity: int = 1024,
        base: BaseSegment | None = None,
        applied: int = 0,
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.fields = dict(fields)
        self.base = base
        self._base_rows = 0 if base is None else base.count
        self._arrays = _allocate(dim, max(capacity, 1), self._base_rows)
        self._rows = self._base_rows
        self._ids: list[str] = []
        self._metadata: list[Mapping[str, Any]] = []
        self._texts: list[str | None] = []
        self._latest: dict[str, int] = {}
        self._applied = applied
        if base is not None:
            self._ids.extend(base.items.ids)
            self._metadata.extend(base.items.metadata)
            self._texts.extend(base.texts)
            self._latest = {item_id: row for row, item_id in enumerate(self._ids)}
            self._arrays.created[: self._base_rows] = base.seq
            self._applied = base.seq
        self._live = self._base_rows
        self.generation = self._applied
        """The sequence number the segment starts at (its base's, or the one it was made
        empty at): rows keep their numbers while it serves, and a segment replayed from the
        same base and log numbers them alike; a compaction starts a segment of a new
        generation."""

    @property
    def applied_seq(self) -> int:
        """The sequence number of the last operation applied."""
        return self._applied

    @property
    def rows(self) -> int:
        """Rows written, every version counted."""
        return self._rows

    @property
    def live_count(self) -> int:
        """Items alive after the last applied operation."""
        return self._live

    def view(self, seq: int) -> SegmentView:
        """The segment as of ``seq`` (at most :attr:`applied_seq`; a segment that starts from a
        checkpoint has no view before it)."""
        if seq > self._applied:
            raise ValueError(f"sequence {seq} is not applied yet (applied: {self._applied})")
        return SegmentView(
            seq=seq,
            rows=self._rows,
            dim=self.dim,
            fields=self.fields,
            base=self.base,
            _arrays=self._arrays,
            _ids=self._ids,
            _metadata=self._metadata,
            _texts=self._texts,
            _latest=self._latest,
            _owner=self,
        )

    def add_fields(self, fields: Mapping[str, FieldType]) -> None:
        """Declare ``fields`` too (new names only): views made from now on read them, rows
        written before hold no value of them; views made earlier keep the fields they had."""
        self.fields = {**self.fields, **fields}

    def previous_of(self, row: int) -> int:
        """The row of the version before row ``row``'s (-1: none)."""
        return int(self._arrays.previous[row])

    def apply(self, seq: int, operation: Operation) -> int:
        """Apply ``operation`` as sequence ``seq`` (greater than every one applied); returns
        how many items it wrote or deleted (a delete counts only ids that were alive)."""
        if seq <= self._applied:
            raise ValueError(f"sequence {seq} is not after {self._applied}")
        if isinstance(operation, Checkpoint) and self._rows:
            raise ValueError("a checkpoint starts a segment; this one holds rows already")
        if isinstance(operation, Delete):
            done = sum(self._retire(item, seq) for item in dict.fromkeys(operation.ids))
        else:
            done = self._upsert(seq, operation)
        self._applied = seq
        return done

    def _retire(self, item_id: str, seq: int) -> bool:
        row = self._latest.get(item_id, _NO_ROW)
        if row == _NO_ROW or int(self._arrays.deleted[row]) != NEVER:
            return False
        self._arrays.deleted[row] = seq
        self._live -= 1
        return True

    def _upsert(self, seq: int, operation: Upsert) -> int:
        n = len(operation.ids)
        if operation.vectors.shape[1] != self.dim:
            raise ValueError(f"vectors of dimension {operation.vectors.shape[1]}, not {self.dim}")
        if len(set(operation.ids)) != n:
            raise ValueError("an upsert names an id twice")
        self._reserve(self._rows + n)
        arrays, start = self._arrays, self._rows
        own = start - self._base_rows
        arrays.vectors[own : own + n] = operation.vectors
        arrays.created[start : start + n] = seq
        arrays.deleted[start : start + n] = NEVER
        for offset, item_id in enumerate(operation.ids):
            before = self._latest.get(item_id, _NO_ROW)
            arrays.previous[start + offset] = before
            self._retire(item_id, seq)
            self._latest[item_id] = start + offset
        self._ids.extend(operation.ids)
        self._metadata.extend(operation.metadata)
        self._texts.extend(operation.texts)
        # Rows become readable only once every list holds them.
        self._rows = start + n
        self._live += n
        return n

    def _reserve(self, rows: int) -> None:
        current = self._arrays
        if rows <= current.created.shape[0]:
            return
        capacity = max(rows, 2 * current.created.shape[0]) - self._base_rows
        grown = _allocate(self.dim, capacity, self._base_rows)
        used = self._rows
        grown.vectors[: used - self._base_rows] = current.vectors[: used - self._base_rows]
        grown.created[:used] = current.created[:used]
        grown.deleted[:used] = current.deleted[:used]
        grown.previous[:used] = current.previous[:used]
        self._arrays = grown


def _allocate(dim: int, capacity: int, base_rows: int) -> _Arrays:
    """Arrays for ``base_rows`` rows of a base and ``capacity`` rows of the segment's own."""
    rows = base_rows + capacity
    return _Arrays(
        vectors=np.zeros((capacity, dim), dtype=np.float32),
        created=np.zeros(rows, dtype=np.int64),
        deleted=np.full(rows, NEVER, dtype=np.int64),
        previous=np.full(rows, _NO_ROW, dtype=np.int64),
    )


def rows_of(view: SegmentView, ids: Sequence[str]) -> list[int]:
    """The rows of the ``ids`` alive in ``view`` (ids without one are left out)."""
    rows = (view.row_of(item) for item in ids)
    return [row for row in rows if row is not None]

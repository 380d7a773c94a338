"""The ids of a loaded collection: row → id and id → row, in a few flat arrays.

A Python list of a million 11-character id strings and a dict from each to its row take about
100 bytes a row (``sys.getsizeof``), in every worker process that serves the collection. An
:class:`IdTable` keeps the ids' UTF-8 bytes end to end with their 4-byte ends, and for the
reverse lookup each id's 8-byte ``hash()`` sorted beside its 4-byte row: 27 bytes a row for such
ids, found by binary search and confirmed by comparing the id itself, so two ids of one hash are
told apart.

``hash()`` of a string differs between processes (hash randomisation): the table is built in
the process that uses it and never written anywhere.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt


class DuplicateIdError(ValueError):
    """Two rows of one collection carry the same id."""


class IdTable(Sequence[str]):
    """The ids of rows ``0..n-1`` (``table[row]``, ``len``, ``in``) and their rows
    (:attr:`row_of`, a read-only mapping). Raises :class:`DuplicateIdError` on a repeated id."""

    def __init__(self, ids: Iterable[str]) -> None:
        blob = bytearray()
        ends = array("q")
        hashes = array("q")
        for item_id in ids:
            blob += item_id.encode("utf-8")
            ends.append(len(blob))
            hashes.append(hash(item_id))
        self._blob = bytes(blob)
        self._ends = np.frombuffer(ends, dtype=np.int64).astype(
            np.int32 if len(blob) < 2**31 else np.int64
        )
        by_hash = np.frombuffer(hashes, dtype=np.int64)
        order = np.argsort(by_hash, kind="stable")
        self._hashes = by_hash[order]
        self._rows = order.astype(np.int32 if len(order) < 2**31 else np.int64)
        self._check_unique()
        self.row_of: Mapping[str, int] = _RowOf(self)

    def _check_unique(self) -> None:
        """Compare the ids within each run of equal hashes (rare unless ids repeat)."""
        repeated = self._hashes[1:] == self._hashes[:-1]
        starts = np.flatnonzero(repeated & ~np.concatenate(([False], repeated[:-1])))
        for start in starts.tolist():
            end = start + 1
            while end < len(self._hashes) and self._hashes[end] == self._hashes[start]:
                end += 1
            seen: dict[str, int] = {}
            for row in sorted(int(one) for one in self._rows[start:end]):
                item_id = self._id(row)
                if item_id in seen:
                    raise DuplicateIdError(f"id {item_id!r} is on rows {seen[item_id]} and {row}")
                seen[item_id] = row

    def _id(self, row: int) -> str:
        start = int(self._ends[row - 1]) if row > 0 else 0
        return self._blob[start : int(self._ends[row])].decode("utf-8")

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, row: int) -> str: ...

    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self._id(one) for one in range(*row.indices(len(self)))]
        count = len(self)
        if not -count <= row < count:
            raise IndexError(f"row {row} of {count}")
        return self._id(row % count)

    def __iter__(self) -> Iterator[str]:
        return (self._id(row) for row in range(len(self)))

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.row(item_id) is not None

    def __eq__(self, other: object) -> bool:
        """Equal to a table, list or tuple of the same ids in the same order."""
        if not isinstance(other, IdTable | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(
            mine == theirs for mine, theirs in zip(self, other, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    def ids_of(self, rows: npt.ArrayLike) -> list[str]:
        """The ids of ``rows`` (an array of non-negative rows), in their order: one numpy
        gather of the rows' ends, then a slice of the bytes each (a search's hits, a page of a
        million-row collection, at a fraction of ``table[row]`` one by one). Raises
        :class:`IndexError` on a row outside ``0..len-1``."""
        wanted = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(wanted) == 0:
            return []
        if int(wanted.min()) < 0 or int(wanted.max()) >= len(self):
            raise IndexError(f"rows {int(wanted.min())}..{int(wanted.max())} of {len(self)}")
        ends = self._ends[wanted]
        starts = np.where(wanted > 0, self._ends[wanted - 1], 0)
        blob = self._blob
        return [
            blob[start:end].decode("utf-8")
            for start, end in zip(starts.tolist(), ends.tolist(), strict=True)
        ]

    def row(self, item_id: str) -> int | None:
        """The row of ``item_id``, or None when no row has it."""
        key = hash(item_id)
        low = int(np.searchsorted(self._hashes, key, side="left"))
        while low < len(self._hashes) and int(self._hashes[low]) == key:
            row = int(self._rows[low])
            if self._id(row) == item_id:
                return row
            low += 1
        return None

    @property
    def nbytes(self) -> int:
        """Bytes the table holds (ids, offsets, hashes, rows)."""
        return len(self._blob) + self._ends.nbytes + self._hashes.nbytes + self._rows.nbytes


class _RowOf(Mapping[str, int]):
    """An :class:`IdTable` seen as id → row."""

    def __init__(self, table: IdTable) -> None:
        self._table = table

    def __getitem__(self, item_id: str) -> int:
        row = self._table.row(item_id) if isinstance(item_id, str) else None
        if row is None:
            raise KeyError(item_id)
        return row

    def get(self, item_id: str, default: int | None = None) -> int | None:  # type: ignore[override]
        row = self._table.row(item_id) if isinstance(item_id, str) else None
        return default if row is None else row

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._table

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

"""Typed metadata columns: the form a bundle keeps its items' fields in for filtering.

Filters read whole columns with numpy, never the items' JSON row by row. A collection's columns
live in one ``<collection>.columns.npz`` (no pickles) holding, for each field ``f``:

``f.present``            bool ``[n]``: the item has a value (a missing value is not a value).
``f.values``             integer: int64 ``[n]``; float: float64 ``[n]``; boolean: bool ``[n]``;
                         timestamp: int64 microseconds since the Unix epoch (UTC) ``[n]``;
                         string: int32 code into the dictionary ``[n]``; list[string]: int32
                         codes of every element of every row, row after row ``[m]``.
``f.offsets``            list[string] only: int64 ``[n + 1]``, row ``r``'s elements are
                         ``values[offsets[r]:offsets[r + 1]]``.
``f.dictionary``         string and list[string]: the distinct strings, sorted, UTF-8 bytes back
                         to back (uint8), with ``f.dictionary_offsets`` int64 ``[u + 1]``.

Values absent from a row hold 0 (code 0, ``False``, ``0.0``) behind ``present == False``, so
every mask is ``present & test``. A list[string] row matches ``eq``/``in`` when any of its
elements does.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from formats.field_types import (
    FieldType,
    FieldTypeTally,
    FieldValueError,
    field_name_problem,
    timestamp_micros,
    with_article,
)

Mask = npt.NDArray[np.bool_]
"""One boolean per row of a collection."""

Scalar = str | int | float | bool
"""A filter operand once checked against its field's type (timestamps as int microseconds)."""

_NUMERIC: Final = frozenset({FieldType.INTEGER, FieldType.FLOAT, FieldType.TIMESTAMP})


class ColumnError(ValueError):
    """Metadata that cannot be stored as typed columns (mixed types, a bad field name...)."""


@dataclass(frozen=True)
class Column:
    """One field of a collection as arrays (see the module docstring for the layout)."""

    name: str
    type: FieldType
    present: Mask
    values: np.ndarray
    offsets: npt.NDArray[np.int64] | None = None
    dictionary: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """Number of rows."""
        return int(self.present.shape[0])

    @property
    def orderable(self) -> bool:
        """Whether ranges apply (integer, float, timestamp)."""
        return self.type in _NUMERIC

    def exists_mask(self) -> Mask:
        """Rows that have a value."""
        return self.present.copy()

    def member_mask(self, operands: Sequence[Scalar]) -> Mask:
        """Rows whose value (any element, for a list) is one of ``operands``; operands are of
        the column's type (timestamps in microseconds)."""
        if self.type in (FieldType.STRING, FieldType.STRING_LIST):
            codes = np.array(
                [code for code in map(self._code_of, operands) if code is not None], dtype=np.int32
            )
            hits = np.isin(self.values, codes)
            if self.offsets is None:
                return self.present & hits
            return self._any_element(hits)
        return self.present & np.isin(self.values, np.asarray(list(operands), self.values.dtype))

    def range_mask(
        self,
        low: float | None,
        low_inclusive: bool,
        high: float | None,
        high_inclusive: bool,
    ) -> Mask:
        """Rows with a value within the bounds (None: unbounded); orderable columns only."""
        mask = self.present.copy()
        if low is not None:
            mask &= self.values >= low if low_inclusive else self.values > low
        if high is not None:
            mask &= self.values <= high if high_inclusive else self.values < high
        return mask

    def _code_of(self, text: Scalar) -> int | None:
        if not isinstance(text, str):
            return None
        index = bisect.bisect_left(self.dictionary, text)
        if index < len(self.dictionary) and self.dictionary[index] == text:
            return index
        return None

    def _any_element(self, element_hits: Mask) -> Mask:
        assert self.offsets is not None
        counts = np.concatenate(([0], np.cumsum(element_hits, dtype=np.int64)))
        hits_per_row = counts[self.offsets[1:]] - counts[self.offsets[:-1]]
        mask: Mask = hits_per_row > 0
        return mask


def infer_fields(metadata: Sequence[Mapping[str, object]]) -> dict[str, FieldType]:
    """The type of each field found in ``metadata``, sorted by name, as
    :class:`formats.field_types.FieldTypeTally` infers it (integers with floats are floats,
    timestamps with strings are strings). Values that still disagree make :func:`build_columns`
    raise :class:`ColumnError` naming the field and row."""
    tallies: dict[str, FieldTypeTally] = {}
    try:
        for row in metadata:
            for name, value in row.items():
                tallies.setdefault(name, FieldTypeTally()).add(value)
    except FieldValueError as exc:
        raise ColumnError(str(exc)) from None
    inferred = {name: tally.inferred() for name, tally in tallies.items()}
    return {name: kind for name, kind in sorted(inferred.items()) if kind is not None}


def build_columns(
    metadata: Sequence[Mapping[str, object]], fields: Mapping[str, FieldType]
) -> dict[str, Column]:
    """Columns of ``fields`` from one metadata mapping per row; a field not in ``fields`` is not
    filterable (it stays in the items' JSON). Raises :class:`ColumnError` for a bad field name
    or a value that is not of its field's type."""
    columns: dict[str, Column] = {}
    for name, kind in fields.items():
        if (problem := field_name_problem(name)) is not None:
            raise ColumnError(problem)
        columns[name] = _build_column(name, FieldType(kind), [row.get(name) for row in metadata])
    return columns


def _wrong(name: str, kind: FieldType, row: int, value: object) -> ColumnError:
    return ColumnError(f"field {name!r} row {row}: {value!r} is not {with_article(kind)}")


def _build_column(name: str, kind: FieldType, raw: list[object]) -> Column:
    n = len(raw)
    present = np.array([value is not None for value in raw], dtype=np.bool_)
    if kind in (FieldType.STRING, FieldType.STRING_LIST):
        return _text_column(name, kind, raw, present)
    dtype = {
        FieldType.INTEGER: np.int64,
        FieldType.FLOAT: np.float64,
        FieldType.BOOLEAN: np.bool_,
        FieldType.TIMESTAMP: np.int64,
    }[kind]
    values: np.ndarray = np.zeros(n, dtype=dtype)
    for row, value in enumerate(raw):
        if value is None:
            continue
        values[row] = _scalar(name, kind, row, value)
    return Column(name=name, type=kind, present=present, values=values)


def _scalar(name: str, kind: FieldType, row: int, value: object) -> int | float | bool:
    if kind == FieldType.BOOLEAN and isinstance(value, bool):
        return value
    if kind == FieldType.INTEGER and isinstance(value, int) and not isinstance(value, bool):
        return value
    if (
        kind == FieldType.FLOAT
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    ):
        return float(value)
    if kind == FieldType.TIMESTAMP and isinstance(value, str):
        try:
            return timestamp_micros(value)
        except ValueError:
            pass
    raise _wrong(name, kind, row, value)


def _text_column(name: str, kind: FieldType, raw: list[object], present: Mask) -> Column:
    rows: list[list[str]] = []
    for row, value in enumerate(raw):
        if value is None:
            rows.append([])
        elif kind == FieldType.STRING and isinstance(value, str):
            rows.append([value])
        elif (
            kind == FieldType.STRING_LIST
            and isinstance(value, list)
            and all(isinstance(element, str) for element in value)
        ):
            rows.append(list(value))
        else:
            raise _wrong(name, kind, row, value)
    dictionary = tuple(sorted({text for texts in rows for text in texts}))
    code_of = {text: code for code, text in enumerate(dictionary)}
    if kind == FieldType.STRING:
        values = np.array([code_of[texts[0]] if texts else 0 for texts in rows], dtype=np.int32)
        return Column(name=name, type=kind, present=present, values=values, dictionary=dictionary)
    lengths = np.array([len(texts) for texts in rows], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    codes = np.array([code_of[text] for texts in rows for text in texts], dtype=np.int32)
    return Column(
        name=name, type=kind, present=present, values=codes, offsets=offsets, dictionary=dictionary
    )


# -- the file ----------------------------------------------------------------------------------


def save_columns(path: Path, columns: Mapping[str, Column]) -> None:
    """Write ``columns`` to one ``.npz`` file (uncompressed, no pickles)."""
    arrays: dict[str, np.ndarray] = {}
    for name, column in columns.items():
        arrays[f"{name}.present"] = column.present
        arrays[f"{name}.values"] = column.values
        if column.offsets is not None:
            arrays[f"{name}.offsets"] = column.offsets
        if column.type in (FieldType.STRING, FieldType.STRING_LIST):
            encoded = [text.encode("utf-8") for text in column.dictionary]
            lengths = np.array([len(blob) for blob in encoded], dtype=np.int64)
            arrays[f"{name}.dictionary"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
            arrays[f"{name}.dictionary_offsets"] = np.concatenate(([0], np.cumsum(lengths)))
    with path.open("wb") as handle:
        np.savez(handle, **arrays)  # type: ignore[arg-type]


def load_columns(path: Path, fields: Mapping[str, FieldType], count: int) -> dict[str, Column]:
    """Read the columns of ``fields`` written by :func:`save_columns`; raises
    :class:`ColumnError` when an array is missing or its shape disagrees with ``count`` rows."""
    columns: dict[str, Column] = {}
    with np.load(path, allow_pickle=False) as arrays:
        for name, kind in fields.items():
            try:
                columns[name] = _read_column(arrays, name, FieldType(kind))
            except KeyError as exc:
                raise ColumnError(f"{path.name}: field {name!r} lacks {exc}") from None
            column = columns[name]
            if column.count != count or (
                column.offsets is not None and column.offsets.shape != (count + 1,)
            ):
                raise ColumnError(f"{path.name}: field {name!r} does not have {count} rows")
    return columns


def _read_column(arrays: Mapping[str, np.ndarray], name: str, kind: FieldType) -> Column:
    present = np.asarray(arrays[f"{name}.present"], dtype=np.bool_)
    values = np.asarray(arrays[f"{name}.values"])
    offsets = np.asarray(arrays[f"{name}.offsets"]) if kind == FieldType.STRING_LIST else None
    dictionary: tuple[str, ...] = ()
    if kind in (FieldType.STRING, FieldType.STRING_LIST):
        blob = np.asarray(arrays[f"{name}.dictionary"]).tobytes()
        bounds = np.asarray(arrays[f"{name}.dictionary_offsets"]).tolist()
        dictionary = tuple(
            blob[start:end].decode("utf-8") for start, end in itertools.pairwise(bounds)
        )
    return Column(
        name=name, type=kind, present=present, values=values, offsets=offsets, dictionary=dictionary
    )

"""A filter applied to a collection: which rows it keeps, as one boolean per row.

Each field test becomes a vectorised test of the field's column (:mod:`storage.columns`);
``and``/``or``/``not`` combine the masks. Everything is checked before any mask is made: an
unknown field, an operand of the wrong type or a range on a field without an order raise
:class:`FilterNotApplicableError` (the filter does not fit this collection), a range nothing can
satisfy or a number no float holds :class:`InvalidQueryError`, each naming where in the request
it is (``filter.and.1.range``), from :func:`check_filter`, before the search;
:func:`filter_mask` then makes the mask where the search runs. Timestamps compare as
microseconds since the epoch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

import numpy as np

from formats.field_types import INT64_MAX, INT64_MIN, FieldType, timestamp_micros, with_article
from service.engine.query.filter_grammar import (
    AllOf,
    AnyOf,
    Bound,
    FieldTest,
    Filter,
    NoneOf,
    Operand,
)
from service.exceptions import FilterNotApplicableError, InvalidQueryError, quoted
from storage.columns import Column, Mask, Scalar


class Filterable(Protocol):
    """What a filter reads: a name for messages and the typed columns (a bundle collection, or
    a live collection's segment)."""

    @property
    def name(self) -> str: ...

    @property
    def columns(self) -> Mapping[str, Column]: ...


def check_filter(node: Filter, collection: Filterable, where: str = "filter") -> None:
    """Raise :class:`FilterNotApplicableError` when ``node`` does not fit ``collection``'s
    fields (an unknown field, an operand of the wrong type, a range on a field without an
    order), :class:`InvalidQueryError` for a range nothing can satisfy or a number too large
    for a float. Reads the field types only: cheap enough for the event loop."""
    _check(node, collection, where)


def filter_mask(node: Filter, collection: Filterable) -> Mask:
    """The rows of ``collection`` that ``node`` keeps (one numpy pass per field test: run it
    off the event loop). ``node`` must have passed :func:`check_filter`."""
    return _mask(node, collection)


def _check(node: Filter, collection: Filterable, where: str) -> None:
    if isinstance(node, AllOf | AnyOf):
        tag = "and" if isinstance(node, AllOf) else "or"
        members = node.and_ if isinstance(node, AllOf) else node.or_
        for index, child in enumerate(members):
            _check(child, collection, f"{where}.{tag}.{index}")
    elif isinstance(node, NoneOf):
        _check(node.not_, collection, f"{where}.not")
    else:
        _leaf_operands(node, _column(node, collection, where), where)


def _mask(node: Filter, collection: Filterable) -> Mask:
    if isinstance(node, AllOf):
        masks = [_mask(child, collection) for child in node.and_]
        return np.logical_and.reduce(masks) if len(masks) > 1 else masks[0]
    if isinstance(node, AnyOf):
        masks = [_mask(child, collection) for child in node.or_]
        return np.logical_or.reduce(masks) if len(masks) > 1 else masks[0]
    if isinstance(node, NoneOf):
        mask: Mask = ~_mask(node.not_, collection)
        return mask
    column = collection.columns[node.field]
    if node.exists is not None:
        return column.exists_mask() if node.exists else ~column.present
    if node.range is not None:
        low, high = _bounds(node, column, "")
        return column.range_mask(low, node.range.gte is not None, high, node.range.lte is not None)
    return column.member_mask(_members(node, column, ""))


def _column(node: FieldTest, collection: Filterable, where: str) -> Column:
    column = collection.columns.get(node.field)
    if column is None:
        fields = ", ".join(sorted(collection.columns)) or "none"
        raise FilterNotApplicableError(
            f"{where}.field: unknown field {quoted(node.field)} in collection "
            f"{collection.name!r} (its fields: {fields})",
            param=f"{where}.field",
        )
    return column


def _leaf_operands(node: FieldTest, column: Column, where: str) -> None:
    """Check the test's operands against the column (raises :class:`FilterNotApplicableError`
    or :class:`InvalidQueryError`)."""
    if node.range is not None:
        _bounds(node, column, where)
    elif node.exists is None:
        _members(node, column, where)


def _bounds(node: FieldTest, column: Column, where: str) -> tuple[float | None, float | None]:
    """A range test's bounds in the column's representation, checked to be satisfiable."""
    assert node.range is not None
    if not column.orderable:
        raise FilterNotApplicableError(
            f"{where}.range: field {column.name!r} is {with_article(column.type)}, which has no "
            "order; ranges apply to integer, float and timestamp fields",
            param=f"{where}.range",
        )
    low = _bound(node.range.low, column, f"{where}.range")
    high = _bound(node.range.high, column, f"{where}.range")
    closed = node.range.gte is not None and node.range.lte is not None
    if low is not None and high is not None and (low > high or (low == high and not closed)):
        raise InvalidQueryError(
            f"{where}.range: no value of field {column.name!r} can be within these bounds",
            param=f"{where}.range",
        )
    return low, high


def _members(node: FieldTest, column: Column, where: str) -> list[Scalar]:
    """An ``eq`` or ``in`` test's operands in the column's representation."""
    if node.eq is not None:
        return [_operand(node.eq, column, f"{where}.eq")]
    assert node.in_ is not None
    return [_operand(value, column, f"{where}.in.{i}") for i, value in enumerate(node.in_)]


def _operand(value: Operand, column: Column, where: str) -> Scalar:
    kind = column.type
    if kind in (FieldType.STRING, FieldType.STRING_LIST) and isinstance(value, str):
        return value
    if kind == FieldType.BOOLEAN and isinstance(value, bool):
        return value
    if not isinstance(value, bool) and isinstance(value, int | float):
        number = _finite_number(value, where)
        if kind == FieldType.FLOAT:
            return float(number)
        if kind == FieldType.INTEGER and float(number).is_integer():
            # Beyond int64 no stored integer can equal it: clamp to a value none holds.
            return min(max(int(value), INT64_MIN), INT64_MAX)
    if kind == FieldType.TIMESTAMP and isinstance(value, str):
        try:
            return timestamp_micros(value)
        except ValueError:
            raise FilterNotApplicableError(
                f"{where}: {quoted(value)} is not an ISO 8601 timestamp "
                "(e.g. 2024-05-01T12:00:00Z)",
                param=where,
            ) from None
    raise FilterNotApplicableError(
        f"{where}: {quoted(str(value))} does not fit field {column.name!r}, "
        f"{with_article(kind)} field",
        param=where,
    )


def _bound(value: Bound | None, column: Column, where: str) -> float | None:
    if value is None:
        return None
    if column.type == FieldType.TIMESTAMP:
        micros = _operand(value, column, where)
        assert isinstance(micros, int)
        return micros
    if isinstance(value, str):
        raise FilterNotApplicableError(
            f"{where}: {quoted(value)} does not fit field {column.name!r}, "
            f"{with_article(column.type)} field",
            param=where,
        )
    return _finite_number(value, where)


def _finite_number(value: int | float, where: str) -> float:
    """``value`` as a float the columns can compare with; :class:`InvalidQueryError` for a
    number that is not finite or too large for a float."""
    try:
        number = float(value)
    except OverflowError:
        raise InvalidQueryError(f"{where}: the number is too large", param=where) from None
    if not math.isfinite(number):
        raise InvalidQueryError(f"{where}: must be a finite number", param=where)
    return number

"""The metadata fields of one collection: their names, declared or inferred types, and the
typing of each item's values.

Declared types (``--field NAME:TYPE``) win; every other field's type is inferred from all its
values (:class:`formats.field_types.FieldTypeTally`). A value that does not fit its field's type
makes its item a bad item (``wrong_type``); a missing value (``None``, an empty CSV cell) leaves
the field out of that item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from formats.field_types import (
    FieldType,
    FieldTypeTally,
    FieldValue,
    FieldValueError,
    coerce_value,
    field_name_problem,
    infer_field_type,
    parse_text,
)


class CorpusError(ValueError):
    """The inputs cannot be built at all (a bad column name, a missing column, conflicting
    options): no single item is at fault, so no policy skips it."""


@dataclass(frozen=True)
class RawRecord:
    """One record's metadata values before typing, and whether they are CSV cell text."""

    values: Mapping[str, object]
    text_values: bool


def check_field_names(names: Iterable[str], where: str) -> None:
    """:class:`CorpusError` naming every name in ``names`` that cannot be a field name."""
    problems = [problem for name in names if (problem := field_name_problem(name)) is not None]
    if problems:
        raise CorpusError(f"{where}: {'; '.join(problems)}")


@dataclass(frozen=True)
class FieldSchema:
    """Field name → type, in the order: declared fields first, then as first seen."""

    types: dict[str, FieldType]
    declared: frozenset[str]

    def type_values(
        self, values: Mapping[str, object], *, text_values: bool
    ) -> tuple[dict[str, FieldValue], list[str]]:
        """The typed metadata of one record, and a message per value that does not fit."""
        typed: dict[str, FieldValue] = {}
        wrong: list[str] = []
        for name, value in values.items():
            if value is None or (text_values and value == ""):
                continue
            field_type = self.types.get(name)
            if field_type is None:  # no value of this field has a supported type
                wrong.append(f"field {name}: {_unsupported(value)}")
                continue
            try:
                if text_values and isinstance(value, str):
                    typed[name] = parse_text(value, field_type)
                else:
                    typed[name] = coerce_value(value, field_type)
            except FieldValueError as exc:
                how = "declared" if name in self.declared else "inferred"
                wrong.append(f"field {name} ({field_type.value}, {how}): {exc}")
        return typed, wrong


def _unsupported(value: object) -> str:
    try:
        infer_field_type(value)
    except FieldValueError as exc:
        return str(exc)
    return f"{value!r} has no type"  # pragma: no cover - typed values always have a type


def infer_schema(
    records: Iterable[RawRecord], declared: Mapping[str, FieldType] | None = None
) -> FieldSchema:
    """The schema of ``records``' metadata: ``declared`` types, the others inferred.

    A field seen only with missing values gets no type and is left out (no item has it),
    unless declared.
    """
    declared = dict(declared or {})
    tallies: dict[str, FieldTypeTally] = {}
    for record in records:
        for name, value in record.values.items():
            if name in declared:
                continue
            tally = tallies.setdefault(name, FieldTypeTally())
            if record.text_values and isinstance(value, str):
                tally.add_text(value)
            else:
                tally.add(value)
    types = dict(declared)
    for name, tally in tallies.items():
        inferred = tally.inferred()
        if inferred is not None:
            types[name] = inferred
    return FieldSchema(types=types, declared=frozenset(declared))

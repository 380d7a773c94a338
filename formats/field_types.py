"""Metadata field types of a user corpus: the vocabulary, inference from values, coercion.

A metadata value handed to a bundle is JSON-native: ``str``, ``int``, ``float`` (finite),
``bool``, ``list[str]``, or a timestamp as its canonical string (``2024-05-01T12:00:00Z``, with
``.ffffff`` before the ``Z`` when there are fractional seconds). A missing value is no value:
the field is absent from that item.

Values come in two kinds:

- **typed** values (a JSONL line, a Parquet row): the value's own type decides; a ``str`` that
  reads as an ISO-8601 timestamp may be a timestamp, a ``datetime``/``date`` (Parquet) is one;
- **text** values (a CSV cell): every value is a string, read as ``true``/``false``
  (any case), an integer, a float, an ISO-8601 timestamp, a JSON array of strings, or else a
  string. An empty cell is a missing value.

A field's type is declared (``NAME:TYPE``) or inferred from all its values by
:class:`FieldTypeTally`: integers and floats together are floats, timestamps and strings
together are strings; text values never conflict (a string holds any text). Typed values that
still disagree (numbers and strings) get the type most of them have, and the others are values
of the wrong type, which :func:`coerce_value` refuses with :class:`FieldValueError`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from typing import Final

FieldValue = str | int | float | bool | list[str]
"""A metadata value as a bundle stores it (timestamps as canonical strings)."""

FIELD_NAME_PATTERN: Final = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
RESERVED_FIELD_NAMES: Final = frozenset({"id"})
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
# ISO 8601 extended format: a date, optionally a time (minutes at least, any number of
# fractional-second digits, 'T' or a space between) and an offset ('Z', ±HH:MM, ±HHMM, ±HH).
_TIMESTAMP: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|z|[+-]\d{2}(?::?\d{2})?)?)?$"
)
_INTEGER_TEXT: Final = re.compile(r"^[+-]?\d+$")
_FLOAT_TEXT: Final = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
# "02134" is a code, not the number 2134: such cells are never inferred to be numbers.
_LEADING_ZERO: Final = re.compile(r"^[+-]?0\d")
_FRACTION_DIGITS: Final = 6


class FieldType(StrEnum):
    """The type of a metadata field, as the manifest records it."""

    STRING = "string"
    INTEGER = "integer"
    FLOAT = "float"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"
    STRING_LIST = "list[string]"


class FieldValueError(ValueError):
    """A value that its field's type cannot hold (the message says what and why)."""


# Text values: the narrowest type first. A cell is given the first type it reads as.
_TEXT_ORDER: Final = (
    FieldType.BOOLEAN,
    FieldType.INTEGER,
    FieldType.FLOAT,
    FieldType.TIMESTAMP,
    FieldType.STRING_LIST,
    FieldType.STRING,
)


def is_field_name(name: str) -> bool:
    """Whether ``name`` may name a metadata field (a lowercase identifier, not ``id``)."""
    return bool(FIELD_NAME_PATTERN.match(name)) and name not in RESERVED_FIELD_NAMES


def field_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a metadata field, or ``None`` when it can."""
    if name in RESERVED_FIELD_NAMES:
        return f"{name!r} is reserved (every item has an id of its own)"
    if not FIELD_NAME_PATTERN.match(name):
        return (
            f"{name!r} is not a field name: use 1-64 lowercase letters, digits and '_', "
            "not starting with a digit"
        )
    return None


def parse_field_declaration(text: str) -> tuple[str, FieldType]:
    """``"price:float"`` → ``("price", FieldType.FLOAT)``; :class:`ValueError` otherwise."""
    name, colon, type_name = text.partition(":")
    name, type_name = name.strip(), type_name.strip()
    if not colon or not name or not type_name:
        raise ValueError(f"{text!r} is not NAME:TYPE")
    problem = field_name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    try:
        return name, FieldType(type_name)
    except ValueError:
        choices = ", ".join(member.value for member in FieldType)
        raise ValueError(f"unknown field type {type_name!r} (one of {choices})") from None


# --- timestamps --------------------------------------------------------------------------------


def is_timestamp_text(text: str) -> bool:
    """Whether ``text`` has the ISO-8601 form this module accepts as a timestamp."""
    return bool(_TIMESTAMP.match(text))


def _parse_timestamp(text: str) -> datetime:
    if not _TIMESTAMP.match(text):
        raise ValueError(f"{text!r} is not an ISO-8601 timestamp")
    normalised = text.replace(",", ".")
    # fromisoformat keeps at most 6 fractional digits: cut longer fractions (truncation).
    normalised = re.sub(r"(\.\d{6})\d+", r"\1", normalised)
    try:
        moment = datetime.fromisoformat(normalised)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid timestamp: {exc}") from None
    return _as_utc(moment)


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def canonical_timestamp(value: str | datetime | date) -> str:
    """Any accepted ISO-8601 form, ``datetime`` or ``date`` → ``2024-05-01T12:00:00Z``.

    A value without an offset is UTC; one with an offset is converted to UTC. Fractional seconds
    are kept to the microsecond (``…T12:00:00.250000Z``), digits beyond that truncated. Raises
    :class:`ValueError` for a string that is not a timestamp.
    """
    if isinstance(value, str):
        moment = _parse_timestamp(value)
    elif isinstance(value, datetime):
        moment = _as_utc(value)
    elif isinstance(value, date):
        moment = datetime.combine(value, time(), tzinfo=UTC)
    else:
        raise ValueError(f"{value!r} is not a timestamp")
    # Not strftime: its %Y is not zero-padded below the year 1000 on every platform.
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if moment.microsecond:
        text += f".{moment.microsecond:0{_FRACTION_DIGITS}d}"
    return text + "Z"


def timestamp_micros(text: str) -> int:
    """A timestamp string (canonical or any accepted ISO-8601 form) → int64 microseconds since
    the Unix epoch, UTC. Raises :class:`ValueError` for anything else."""
    return (_parse_timestamp(text) - _EPOCH) // _MICROSECOND


# --- inference ---------------------------------------------------------------------------------


def infer_field_type(value: object) -> FieldType | None:
    """The type of one typed value; ``None`` for ``None``.

    ``bool`` is a boolean (checked before ``int``), ``int`` an integer, ``float`` a float, a
    ``str`` a timestamp when it reads as one and a string otherwise, ``datetime``/``date`` a
    timestamp, a list of strings a list of strings. Raises :class:`FieldValueError` for a value
    no field type holds (a mapping, a list with a non-string, a NaN or infinite float, ...).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return FieldType.BOOLEAN
    if isinstance(value, int):
        return FieldType.INTEGER
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FieldValueError(f"{value!r} is not a finite number")
        return FieldType.FLOAT
    if isinstance(value, str):
        return FieldType.TIMESTAMP if is_timestamp_text(value) else FieldType.STRING
    if isinstance(value, datetime | date):
        return FieldType.TIMESTAMP
    if isinstance(value, list | tuple):
        if all(isinstance(element, str) for element in value):
            return FieldType.STRING_LIST
        raise FieldValueError("a list may hold strings only")
    raise FieldValueError(f"{with_article(type(value).__name__)} is not a supported field value")


def infer_text_field_type(text: str) -> FieldType | None:
    """The narrowest type a text cell reads as; ``None`` for an empty cell.

    A number written with a leading zero (``02134``) reads as a string: it is a code.
    """
    if text == "":
        return None
    numeric_ok = not _LEADING_ZERO.match(text)
    for field_type in _TEXT_ORDER:
        if not numeric_ok and field_type in (FieldType.INTEGER, FieldType.FLOAT):
            continue
        try:
            parse_text(text, field_type)
        except FieldValueError:
            continue
        return field_type
    return FieldType.STRING  # pragma: no cover - a string reads any text


_WIDENINGS: Final = (
    (FieldType.INTEGER, FieldType.FLOAT),
    (FieldType.TIMESTAMP, FieldType.STRING),
)


def _unify(types: Iterable[FieldType]) -> FieldType | None:
    """The one type that holds values of all ``types``, if there is one."""
    kinds = set(types)
    if not kinds:
        return None
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {FieldType.INTEGER, FieldType.FLOAT}:
        return FieldType.FLOAT
    if kinds == {FieldType.TIMESTAMP, FieldType.STRING}:
        return FieldType.STRING
    return None


class FieldTypeTally:
    """Counts the types of one field's values and names the field's inferred type.

    ``add`` a typed value or ``add_text`` a text cell (one field's values are all of one kind
    or the other). Values of no supported type are left out of the tally (coercion refuses
    them later).
    """

    def __init__(self) -> None:
        self.counts: Counter[FieldType] = Counter()
        self.text = False

    def add(self, value: object) -> None:
        """Count one typed value (``None`` counts nothing)."""
        try:
            field_type = infer_field_type(value)
        except FieldValueError:
            return
        if field_type is not None:
            self.counts[field_type] += 1

    def add_text(self, text: str) -> None:
        """Count one text cell (an empty cell counts nothing)."""
        self.text = True
        field_type = infer_text_field_type(text)
        if field_type is not None:
            self.counts[field_type] += 1

    def inferred(self) -> FieldType | None:
        """The field's type: the one that holds every value, else (typed values that disagree)
        the most common type once integers count as floats and timestamps as strings where
        both are present, ties broken by the order of :class:`FieldType`; ``None`` when the
        field had no value."""
        unified = _unify(self.counts)
        if unified is not None or not self.counts:
            return unified
        if self.text:
            return FieldType.STRING
        # Fold the types that unify (integers into floats, timestamps into strings) first, so
        # that 3, 2.5 and "n/a" make a float field with one value of the wrong type.
        counts = Counter(self.counts)
        for narrow, wide in _WIDENINGS:
            if narrow in counts and wide in counts:
                counts[wide] += counts.pop(narrow)
        order = list(FieldType)
        return min(counts, key=lambda kind: (-counts[kind], order.index(kind)))


# --- coercion ----------------------------------------------------------------------------------


def coerce_value(value: object, field_type: FieldType) -> FieldValue:
    """A typed value as ``field_type`` holds it; :class:`FieldValueError` when it does not fit.

    An integer fits a float field (stored as a float); a timestamp field takes ISO-8601
    strings, ``datetime`` and ``date`` (stored canonical). Nothing else is converted: the
    string ``"42"`` does not fit an integer field.
    """
    if field_type is FieldType.STRING:
        if isinstance(value, str):
            return value
    elif field_type is FieldType.BOOLEAN:
        if isinstance(value, bool):
            return value
    elif field_type is FieldType.INTEGER:
        if isinstance(value, int) and not isinstance(value, bool):
            return _int64(value)
    elif field_type is FieldType.FLOAT:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _finite(float(value))
    elif field_type is FieldType.TIMESTAMP:
        if isinstance(value, str | datetime | date):
            try:
                return canonical_timestamp(value)
            except ValueError as exc:
                raise FieldValueError(str(exc)) from None
    elif field_type is FieldType.STRING_LIST and isinstance(value, list | tuple):
        if all(isinstance(element, str) for element in value):
            return [str(element) for element in value]
        raise FieldValueError(f"{_show(value)} is not a list of strings")
    raise FieldValueError(f"{_show(value)} is not {_article(field_type)}")


def parse_text(text: str, field_type: FieldType) -> FieldValue:
    """A text cell read as ``field_type``; :class:`FieldValueError` when it does not read so."""
    if field_type is FieldType.STRING:
        return text
    if field_type is FieldType.BOOLEAN:
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    elif field_type is FieldType.INTEGER:
        if _INTEGER_TEXT.match(text):
            return _int64(int(text))
    elif field_type is FieldType.FLOAT:
        if _FLOAT_TEXT.match(text):
            return _finite(float(text))
    elif field_type is FieldType.TIMESTAMP:
        try:
            return canonical_timestamp(text)
        except ValueError as exc:
            raise FieldValueError(str(exc)) from None
    elif field_type is FieldType.STRING_LIST:
        return _string_list_text(text)
    raise FieldValueError(f"{_show(text)} is not {_article(field_type)}")


def _string_list_text(text: str) -> list[str]:
    if not text.startswith("["):
        raise FieldValueError(f"{_show(text)} is not a JSON array of strings")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise FieldValueError(f"{_show(text)} is not a JSON array of strings") from None
    if not isinstance(value, list) or not all(isinstance(element, str) for element in value):
        raise FieldValueError(f"{_show(text)} is not a JSON array of strings")
    return value


def _int64(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise FieldValueError(f"{value} does not fit a 64-bit integer")
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise FieldValueError(f"{value!r} is not a finite number")
    return value


def with_article(word: str) -> str:
    """``word`` after its indefinite article, for messages: ``an integer``, ``a string``."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _article(field_type: FieldType) -> str:
    return {
        FieldType.STRING: "a string",
        FieldType.INTEGER: "an integer",
        FieldType.FLOAT: "a float",
        FieldType.BOOLEAN: "a boolean",
        FieldType.TIMESTAMP: "a timestamp",
        FieldType.STRING_LIST: "a list of strings",
    }[field_type]


_SHOWN_CHARACTERS: Final = 60


def _show(value: object) -> str:
    text = repr(value)
    if len(text) > _SHOWN_CHARACTERS:
        text = text[: _SHOWN_CHARACTERS - 3] + "..."
    return text

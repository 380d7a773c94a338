"""The wire models' bases, and what many bodies share: queries, filters, the error answer.

Re-exported by :mod:`crisscross_client.models` (import them from there)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

JsonObject = dict[str, Any]

SHOWN_NUMBERS = 4
"""Values a repr shows of a long list of numbers (a vector) before it says how many there are."""
SHOWN_VECTORS = 3
"""Vectors a repr shows of a list of them before it says how many there are."""
SHOWN_CHARS = 80
"""Characters a repr shows of a long string (base64 images and vectors) before its length."""


class _Shown:
    """A value's short form in a repr (its ``repr`` is the text)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _is_vector(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
    )


def _short(value: object) -> object:
    """``value``, or its short form when it is a long vector, a long list of vectors or a
    long string: a model's repr stays readable whatever it carries."""
    if _is_vector(value):
        assert isinstance(value, list)
        if len(value) <= 2 * SHOWN_NUMBERS:
            return value
        head = ", ".join(repr(x) for x in value[:SHOWN_NUMBERS])
        return _Shown(f"[{head}, ... {len(value)} numbers]")
    if isinstance(value, list) and value and all(_is_vector(row) for row in value):
        rows = [repr(_short(row)) for row in value[:SHOWN_VECTORS]]
        more = f", ... {len(value)} vectors" if len(value) > SHOWN_VECTORS else ""
        return _Shown(f"[{', '.join(rows)}{more}]")
    if isinstance(value, str) and len(value) > 2 * SHOWN_CHARS:
        return _Shown(f"{value[:SHOWN_CHARS]!r}... ({len(value)} chars)")
    return value


class _Readable(BaseModel):
    """A model whose repr shortens vectors, lists of vectors and long strings."""

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, _short(value)


class RequestModel(_Readable):
    """A request body: unknown fields refused, names as the service spells them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        # Unset optional fields are not sent (body()), so not shown either.
        return [(name, value) for name, value in super().__repr_args__() if value is not None]

    def body(self) -> JsonObject:
        """The JSON body: fields by their wire names, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResponseModel(_Readable):
    """An answer: fields the client does not know are kept, not refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- queries -------------------------------------------------------------------------------


class ItemRef(RequestModel):
    """A stored item, named by its collection and id."""

    collection: str
    id: str


class TextQuery(RequestModel):
    """A text, embedded by the variant's text tower."""

    text: str


class ImageQuery(RequestModel):
    """An image file's bytes in standard base64 (see :mod:`crisscross_client.images`)."""

    image: str


class ItemQuery(RequestModel):
    """A stored item's own vector ("more like this")."""

    item: ItemRef


class VectorQuery(RequestModel):
    """Your own embedding in the variant's space (its dimension, non-zero)."""

    vector: list[float]


Query = TextQuery | ImageQuery | ItemQuery | VectorQuery
"""One side of a search or a score pair."""


# --- filters -------------------------------------------------------------------------------

Scalar = str | int | float | bool


class Range(RequestModel):
    """Bounds of a range test; give at least one."""

    gt: str | int | float | None = None
    gte: str | int | float | None = None
    lt: str | int | float | None = None
    lte: str | int | float | None = None


class FieldTest(RequestModel):
    """A test of one metadata field: ``eq``, ``in``, ``range`` or ``exists``."""

    field: str
    eq: Scalar | None = None
    in_: list[Scalar] | None = Field(
        default=None, serialization_alias="in", validation_alias=AliasChoices("in", "in_")
    )
    range: Range | None = None
    exists: bool | None = None


class AllOf(RequestModel):
    """Every filter holds."""

    and_: list[Filter] = Field(
        serialization_alias="and", validation_alias=AliasChoices("and", "and_")
    )


class AnyOf(RequestModel):
    """At least one filter holds."""

    or_: list[Filter] = Field(serialization_alias="or", validation_alias=AliasChoices("or", "or_"))


class NoneOf(RequestModel):
    """The filter does not hold."""

    not_: Filter = Field(serialization_alias="not", validation_alias=AliasChoices("not", "not_"))


Filter = FieldTest | AllOf | AnyOf | NoneOf
"""A metadata filter; plain dicts in the same shape are accepted wherever one is."""

FilterInput = Filter | JsonObject


# --- errors ----------------------------------------------------------------------------------


class ErrorDetail(ResponseModel):
    """The service's error: its code, message and request id, OpenAI's error ``type`` and
    the request field at fault (``param``), where one is."""

    code: str
    message: str
    request_id: str
    type: str
    param: str | None


class ErrorResponse(ResponseModel):
    """Every error answer: ``{"error": {...}}``."""

    error: ErrorDetail


for _model in (AllOf, AnyOf, NoneOf):
    _model.model_rebuild()

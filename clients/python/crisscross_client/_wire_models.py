"""The wire models' bases, and what many bodies share: queries, filters, the error answer.

Re-exported by :mod:`crisscross_client.models` (import them from there)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

JsonObject = dict[str, Any]


class RequestModel(BaseModel):
    """A request body: unknown fields refused, names as the service spells them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def body(self) -> JsonObject:
        """The JSON body: fields by their wire names, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResponseModel(BaseModel):
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

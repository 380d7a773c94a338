"""The wire form of a metadata filter (``"filter"`` in ``/v1/search`` and its bulk form).

A filter is a tree. A leaf names a field and one test of it::

    {"field": "brand", "eq": "acme"}
    {"field": "tags", "in": ["red", "blue"]}          # a list field: any element
    {"field": "price", "range": {"gte": 10, "lt": 50}}
    {"field": "published", "range": {"gte": "2024-01-01T00:00:00Z"}}
    {"field": "discount", "exists": true}

and inner nodes combine filters: ``{"and": [...]}``, ``{"or": [...]}``, ``{"not": {...}}``. Each
node is a tagged union on the wire (the OpenAPI document says ``oneOf``). The shape is checked here;
whether the fields exist and the operands fit their types is checked against the collection by
:mod:`service.engine.query.filtering`, before the search; sizes against settings by
:func:`check_filter_limits`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic.json_schema import SkipJsonSchema

from service.exceptions import InvalidQueryError
from service.settings import Settings

Operand = str | int | float | bool
"""A value a leaf compares with: a string (timestamps in ISO 8601), a number or a boolean."""

Bound = str | int | float
"""A range bound: a number, or an ISO 8601 timestamp for a timestamp field."""


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        # An operand or bound that is not used is left out; the document allows no null.
        if isinstance(data, dict) and (nulls := sorted(k for k, v in data.items() if v is None)):
            raise ValueError(f"leave {', '.join(map(repr, nulls))} out rather than null")
        return data


class Range(_Node):
    """Bounds of a range test; at least one, at most one lower and one upper."""

    model_config = ConfigDict(
        json_schema_extra={
            "minProperties": 1,
            "not": {"anyOf": [{"required": ["gt", "gte"]}, {"required": ["lt", "lte"]}]},
        }
    )

    gt: Bound | SkipJsonSchema[None] = None
    gte: Bound | SkipJsonSchema[None] = None
    lt: Bound | SkipJsonSchema[None] = None
    lte: Bound | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _bounds_make_sense(self) -> Range:
        if self.gt is not None and self.gte is not None:
            raise ValueError("give at most one of 'gt' and 'gte'")
        if self.lt is not None and self.lte is not None:
            raise ValueError("give at most one of 'lt' and 'lte'")
        if self.low is None and self.high is None:
            raise ValueError("give at least one bound: 'gt', 'gte', 'lt' or 'lte'")
        return self

    @property
    def low(self) -> Bound | None:
        """The lower bound, if any."""
        return self.gte if self.gte is not None else self.gt

    @property
    def high(self) -> Bound | None:
        """The upper bound, if any."""
        return self.lte if self.lte is not None else self.lt


class FieldTest(_Node):
    """A leaf: one test of one field."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": [test]} for test in ("eq", "in", "range", "exists")]
        }
    )

    field: str = Field(min_length=1, max_length=64, description="A field of the collection.")
    eq: Operand | SkipJsonSchema[None] = Field(
        default=None, description="Equal to (any element, for a list)."
    )
    in_: list[Operand] | SkipJsonSchema[None] = Field(
        default=None,
        alias="in",
        min_length=1,
        description="Equal to one of these (any element, for a list).",
    )
    range: Range | SkipJsonSchema[None] = Field(
        default=None, description="Within bounds (numbers, timestamps)."
    )
    exists: bool | SkipJsonSchema[None] = Field(
        default=None, description="true: the item has a value; false: it has none."
    )

    @model_validator(mode="after")
    def _one_test(self) -> FieldTest:
        given = [self.eq, self.in_, self.range, self.exists]
        if sum(test is not None for test in given) != 1:
            raise ValueError("give exactly one of 'eq', 'in', 'range' or 'exists'")
        return self


class AllOf(_Node):
    """Items every child filter keeps."""

    and_: list[Filter] = Field(alias="and", min_length=1)


class AnyOf(_Node):
    """Items some child filter keeps."""

    or_: list[Filter] = Field(alias="or", min_length=1)


class NoneOf(_Node):
    """Items the child filter does not keep."""

    not_: Filter = Field(alias="not")


_NODE_TAGS = {"and": AllOf, "or": AnyOf, "not": NoneOf}


def _node_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        if "field" in value:
            return "field"
        tags = [key for key in value if key in _NODE_TAGS]
        return tags[0] if len(tags) == 1 else None
    if isinstance(value, FieldTest):
        return "field"
    return next((tag for tag, cls in _NODE_TAGS.items() if isinstance(value, cls)), None)


Filter = Annotated[
    Annotated[FieldTest, Tag("field")]
    | Annotated[AllOf, Tag("and")]
    | Annotated[AnyOf, Tag("or")]
    | Annotated[NoneOf, Tag("not")],
    Discriminator(
        _node_kind,
        custom_error_type="filter_kind",
        custom_error_message="give a field test ('field' with one of 'eq', 'in', 'range', "
        "'exists') or exactly one of 'and', 'or', 'not'",
    ),
]
"""A filter node, a tagged union on the wire."""

for _model in (AllOf, AnyOf, NoneOf):
    _model.model_rebuild()


def children(node: Filter) -> list[Filter]:
    """The filters directly under ``node`` (none for a field test)."""
    if isinstance(node, AllOf):
        return list(node.and_)
    if isinstance(node, AnyOf):
        return list(node.or_)
    if isinstance(node, NoneOf):
        return [node.not_]
    return []


def check_filter_limits(where: str, node: Filter, settings: Settings) -> None:
    """Raise :class:`InvalidQueryError` when ``node`` holds more nodes than
    ``max_filter_conditions`` or more ``in`` values than ``max_filter_values``."""
    nodes, values = 0, 0
    pending = [node]
    while pending:
        current = pending.pop()
        nodes += 1
        if isinstance(current, FieldTest) and current.in_ is not None:
            values += len(current.in_)
        pending.extend(children(current))
    if nodes > settings.max_filter_conditions:
        raise InvalidQueryError(
            f"{where}: {nodes} conditions, more than "
            f"max_filter_conditions={settings.max_filter_conditions}",
            param=where,
        )
    if values > settings.max_filter_values:
        raise InvalidQueryError(
            f"{where}: {values} values in 'in' lists, more than "
            f"max_filter_values={settings.max_filter_values}",
            param=where,
        )

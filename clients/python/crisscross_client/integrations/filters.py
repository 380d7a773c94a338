"""Framework filters mapped to Crisscross filters (``{"field", "eq" | "in" | "range" |
"exists"}``, ``{"and": [...]}``, ``{"or": [...]}``, ``{"not": ...}``).

LangChain's dict filters (the convention of its vector stores): ``{"topic": "pets"}`` (equality),
``{"stars": {"$gte": 4}}`` with ``$eq $ne $gt $gte $lt $lte $in $nin $exists``, several keys (all
must hold), ``{"$and": [...]}``, ``{"$or": [...]}``, ``{"$not": {...}}``.

LlamaIndex's ``MetadataFilters``: ``EQ NE GT GTE LT LTE IN NIN`` (``==``, ``!=``, ``>``, ``>=``,
``<``, ``<=``, ``in``, ``nin``) and nested filters joined by ``and``, ``or`` or ``not``; read by
their attributes (``key``, ``value``, ``operator``, ``filters``, ``condition``), so this module
needs neither framework.

Anything else raises :class:`FilterNotSupportedError` naming it, before any request is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Filter = dict[str, Any]

_RANGE = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_LLAMA_OPERATORS = {
    "==": "$eq",
    "!=": "$ne",
    ">": "$gt",
    ">=": "$gte",
    "<": "$lt",
    "<=": "$lte",
    "in": "$in",
    "nin": "$nin",
}


class FilterNotSupportedError(ValueError):
    """A framework filter that Crisscross's filters cannot state."""


def _test(field: str, operator: str, value: Any) -> Filter:
    """One field test as a Crisscross filter."""
    if operator == "$eq":
        return {"field": field, "eq": value}
    if operator == "$ne":
        return {"not": {"field": field, "eq": value}}
    if operator in _RANGE:
        return {"field": field, "range": {_RANGE[operator]: value}}
    if operator in {"$in", "$nin"}:
        if not isinstance(value, Sequence) or isinstance(value, str) or not value:
            raise FilterNotSupportedError(f"{operator} on {field!r} needs a non-empty list")
        test = {"field": field, "in": list(value)}
        return test if operator == "$in" else {"not": test}
    if operator == "$exists":
        return {"field": field, "exists": bool(value)}
    raise FilterNotSupportedError(f"operator {operator!r} on {field!r} is not supported")


def _all(filters: list[Filter]) -> Filter:
    return filters[0] if len(filters) == 1 else {"and": filters}


def from_langchain(spec: Mapping[str, Any]) -> Filter:
    """A LangChain dict filter as a Crisscross filter."""
    if not spec:
        raise FilterNotSupportedError("an empty filter")
    parts: list[Filter] = []
    for key, value in spec.items():
        if key in {"$and", "$or"}:
            if not isinstance(value, Sequence) or isinstance(value, str) or not value:
                raise FilterNotSupportedError(f"{key} needs a non-empty list of filters")
            members = [from_langchain(member) for member in value]
            parts.append({"and" if key == "$and" else "or": members})
        elif key == "$not":
            parts.append({"not": from_langchain(value)})
        elif key.startswith("$"):
            raise FilterNotSupportedError(f"operator {key!r} is not supported")
        elif isinstance(value, Mapping):
            if not value:
                raise FilterNotSupportedError(f"an empty test of {key!r}")
            parts.extend(_test(key, operator, operand) for operator, operand in value.items())
        else:
            parts.append(_test(key, "$eq", value))
    return _all(parts)


def _name(value: Any) -> str:
    """An enum's value (LlamaIndex's operators and conditions are string enums) or the string."""
    return str(getattr(value, "value", value))


def from_llamaindex(filters: Any) -> Filter:
    """A LlamaIndex ``MetadataFilters`` (or one ``MetadataFilter``) as a Crisscross filter."""
    members = getattr(filters, "filters", None)
    if members is None:
        operator = _name(getattr(filters, "operator", "=="))
        if operator not in _LLAMA_OPERATORS:
            raise FilterNotSupportedError(f"LlamaIndex operator {operator!r} is not supported")
        return _test(str(filters.key), _LLAMA_OPERATORS[operator], filters.value)
    if not members:
        raise FilterNotSupportedError("an empty MetadataFilters")
    parts = [from_llamaindex(member) for member in members]
    condition = _name(getattr(filters, "condition", "and") or "and")
    if condition == "and":
        return _all(parts)
    if condition == "or":
        return parts[0] if len(parts) == 1 else {"or": parts}
    if condition == "not":
        return {"not": _all(parts)}
    raise FilterNotSupportedError(f"LlamaIndex condition {condition!r} is not supported")

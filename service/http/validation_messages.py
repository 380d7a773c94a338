"""What a validation error says: pydantic's errors as one message and the ``param`` of the
request field at fault, in the request's own words.

pydantic puts its own parts in an error's location — a union branch (``function-after[...]``),
a tagged union's tag, the ``none`` branch of an optional field — which name no field of the
request. :func:`clean_errors` walks each location through the route's body schema
(:class:`BodySchema`) and keeps the request's fields only; without a schema it drops what can
only be pydantic's. The rejected input is never echoed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any

from pydantic import TypeAdapter

_LOCATION_KINDS = frozenset({"body", "query", "path", "header", "cookie"})
_NOT_JSON = "body is not valid JSON"

_VALIDATOR_NAME = re.compile(r"^[a-z][a-z-]*\[.*\]$", re.DOTALL)
"""A pydantic-core validator's name (``function-after[_check(), Range]``, ``list[int]``): the
label pydantic puts in a location for a branch of a union, never a request field."""

_SCALAR_BRANCH_OF_TYPE: Mapping[str, str] = {
    "none_required": "none",
    "string_type": "str",
    "int_type": "int",
    "float_type": "float",
    "bool_type": "bool",
    "list_type": "list",
    "dict_type": "dict",
}
"""The label of the union branch an error of each type comes from (``("eq", "int")``)."""


def _location(loc: Sequence[Any]) -> str:
    """``("body", "query", "text")`` → ``query.text``; the leading ``body`` says nothing new."""
    parts = [str(part) for part in loc]
    if parts and parts[0] in _LOCATION_KINDS and len(parts) > 1:
        parts = parts[1:]
    # A tagged union puts its tag before the member's own field, and each tag is the name of
    # that field (``query.text.text``, ``texts.texts.0``): say it once.
    parts = [part for index, part in enumerate(parts) if index == 0 or part != parts[index - 1]]
    return ".".join(parts) or "body"


Schema = Mapping[str, Any]
"""A pydantic-core schema (``TypeAdapter(...).core_schema``), read as plain data."""

_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "json-or-python": ("json_schema", "python_schema"),
    "lax-or-strict": ("strict_schema", "lax_schema"),
}
_SEQUENCES = frozenset({"list", "set", "frozenset", "generator", "tuple"})
_MAX_WALKED_PARTS = 200


def _references(schema: Schema) -> dict[str, Schema]:
    """Every schema of ``schema``'s tree that carries a ``ref``, by that ref (what a
    ``definition-ref`` names)."""
    found: dict[str, Schema] = {}
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            ref = node.get("ref")
            if isinstance(ref, str) and isinstance(node.get("type"), str):
                found.setdefault(ref, node)
            pending.extend(node.values())
        elif isinstance(node, list | tuple):
            pending.extend(node)
    return found


def _walk(schema: Schema, loc: Sequence[Any], refs: Mapping[str, Schema]) -> list[Any] | None:
    """``loc`` (a location pydantic reported under ``schema``) with pydantic's own parts left
    out: a tagged union's tag, a union branch's label (``function-after[...]``, ``none``);
    request fields, list indexes and dict keys stay. None when ``loc`` cannot lie under
    ``schema`` (the caller then tries another branch)."""
    if not loc:
        return []
    kind = schema.get("type")
    part, rest = loc[0], loc[1:]
    if kind == "definition-ref":
        target = refs.get(str(schema.get("schema_ref")))
        return list(loc) if target is None else _walk(target, loc, refs)
    if kind in _ALTERNATIVES or kind == "chain":
        keys = _ALTERNATIVES.get(str(kind), ())
        options = [schema[key] for key in keys if key in schema] or list(schema.get("steps", ()))
        return next(
            (found for option in options if (found := _walk(option, loc, refs)) is not None), None
        )
    if kind in ("model-fields", "typed-dict", "dataclass-args"):
        fields = schema.get("fields", {})
        named = fields.values() if isinstance(fields, Mapping) else fields
        names = fields.keys() if isinstance(fields, Mapping) else [f.get("name") for f in fields]
        for name, field in zip(names, named, strict=True):
            alias = field.get("validation_alias")
            if part == (alias if isinstance(alias, str) else name):
                below = _walk(field["schema"], rest, refs)
                return None if below is None else [part, *below]
        # A field the model does not declare (``extra_forbidden``): nothing lies below it.
        return [part] if not rest else None
    if kind == "tagged-union":
        choices = schema.get("choices", {})
        choice = choices.get(part)
        while isinstance(choice, str | int):  # a tag standing for another tag's choice
            choice = choices.get(choice)
        return None if choice is None else _walk(choice, rest, refs)
    if kind == "union":
        for choice in schema.get("choices", ()):
            if isinstance(choice, tuple):
                choice_schema, label = choice
                if label != part:
                    continue
            else:
                choice_schema = choice
            found = _walk(choice_schema, rest, refs)
            if found is not None:
                return found
        return None
    if kind in _SEQUENCES:
        items = schema.get("items_schema")
        if not isinstance(part, int):
            return None
        if isinstance(items, list):  # a tuple's positions
            items = items[min(part, len(items) - 1)] if items else None
        below = [] if items is None else _walk(items, rest, refs)
        return None if below is None else [part, *below]
    if kind == "dict":
        if rest and rest[0] == "[key]":
            return [part]
        values = schema.get("values_schema")
        below = list(rest) if values is None else _walk(values, rest, refs)
        return None if below is None else [part, *below]
    if kind == "any":
        return list(loc)
    inner = schema.get("schema")
    if isinstance(inner, Mapping):
        # models, fields, defaults, nullables, validator functions, definitions
        return _walk(inner, loc, refs)
    return None


@dataclass(frozen=True)
class BodySchema:
    """A request body type's pydantic-core schema and the schemas its references name: what
    :func:`clean_errors` reads to tell the request's fields from pydantic's own location parts."""

    schema: Schema
    refs: Mapping[str, Schema]


@lru_cache(maxsize=64)
def _cached_body_schema(annotation: Any) -> BodySchema | None:
    return _made_body_schema(annotation)


def _made_body_schema(annotation: Any) -> BodySchema | None:
    try:
        schema: Schema = TypeAdapter(annotation).core_schema
    except Exception:  # a type FastAPI took that pydantic will not adapt: no schema to read
        return None
    return BodySchema(schema, _references(schema))


def body_schema(annotation: Any) -> BodySchema | None:
    """The :class:`BodySchema` of a body type (made once per type); None where pydantic makes
    none."""
    try:
        return _cached_body_schema(annotation)
    except TypeError:  # an unhashable annotation
        return _made_body_schema(annotation)


_ANNOTATED: Any = Annotated  # subscripted with a type and metadata known only at run time


def body_schema_of(route: object) -> BodySchema | None:
    """The :class:`BodySchema` of a FastAPI route's JSON body (its ``body_field``), or None."""
    field_info = getattr(getattr(route, "body_field", None), "field_info", None)
    annotation = getattr(field_info, "annotation", None)
    if annotation is None:
        return None
    metadata = tuple(getattr(field_info, "metadata", ()))  # a discriminator, constraints
    return body_schema(_ANNOTATED[(annotation, *metadata)] if metadata else annotation)


def _pydantic_parts_dropped(loc: Sequence[Any], error_type: str) -> list[Any]:
    """Without a schema to read: drop what can only be pydantic's (a validator's name, the
    scalar branch an error's type names at the end)."""
    parts = [part for part in loc if not (isinstance(part, str) and _VALIDATOR_NAME.match(part))]
    if parts and parts[-1] == _SCALAR_BRANCH_OF_TYPE.get(error_type):
        parts = parts[:-1]
    return parts


def _clean_location(loc: Sequence[Any], error_type: str, body: BodySchema | None) -> str:
    """Where an error is, in the request's own words (``filter.and.0.range``)."""
    parts = list(loc)
    kind = parts[0] if parts and parts[0] in _LOCATION_KINDS else None
    below = parts[1:] if kind is not None else parts
    cleaned: list[Any] | None = None
    if body is not None and kind in (None, "body") and len(below) <= _MAX_WALKED_PARTS:
        try:
            cleaned = _walk(body.schema, below, body.refs)
        except RecursionError:
            cleaned = None
    if cleaned is None:
        cleaned = _pydantic_parts_dropped(below, error_type)
    head = [] if kind is None else [kind]
    return _location([*head, *cleaned])


def clean_errors(
    errors: Sequence[Mapping[str, Any]], body: BodySchema | None = None
) -> list[tuple[str, str]]:
    """Each error's location and text, as a client reads them: locations without pydantic's own
    parts (see :func:`_walk`; ``body`` is the body's schema, where known), pydantic's
    ``Value error, `` left off a validator's own message, an error repeated at one location
    said once, and the ``Input should be None`` of an optional union's ``None`` branch dropped
    where another branch failed at or below that location (it says nothing the client can act
    on: the document never offers null there)."""
    located: list[tuple[str, str, str]] = []
    for error in errors:
        error_type = str(error.get("type", ""))
        if error_type == "json_invalid":
            located.append(("body", error_type, _NOT_JSON))
            continue
        message = str(error.get("msg", "invalid"))
        if error_type == "value_error":
            message = message.removeprefix("Value error, ")
        located.append(
            (_clean_location(error.get("loc", ()), error_type, body), error_type, message)
        )

    def below(location: str, other: str) -> bool:
        return other == location or other.startswith(location + ".") or location == "body"

    kept: list[tuple[str, str]] = []
    for index, (location, error_type, message) in enumerate(located):
        if error_type == "none_required" and any(
            below(location, other)
            for n, (other, other_type, _) in enumerate(located)
            if n != index and other_type != "none_required"
        ):
            continue
        if (location, message) not in kept:
            kept.append((location, message))
    return kept


def validation_message(errors: Sequence[Mapping[str, Any]], body: BodySchema | None = None) -> str:
    """A message built from each error's location and text only (see :func:`clean_errors`).

    The rejected input is never echoed: it may hold NaN, bytes or a client's private text, and
    FastAPI's own handler crashes serialising the first two.
    """
    cleaned = clean_errors(errors, body)
    if not cleaned:
        return "invalid request"
    parts = [
        message if message == _NOT_JSON else f"{location}: {message}"
        for location, message in cleaned[:5]
    ]
    if len(cleaned) > 5:
        parts.append(f"and {len(cleaned) - 5} more")
    return "; ".join(parts)


def validation_param(
    errors: Sequence[Mapping[str, Any]], body: BodySchema | None = None
) -> str | None:
    """The request field a validation error names first (the body's ``param``); None where it
    names the whole body."""
    cleaned = clean_errors(errors, body)
    location = cleaned[0][0] if cleaned else "body"
    return None if location == "body" else location

"""Query sides from what a caller has at hand: a text, an image, a stored item, a vector.

A bare ``str`` is a text; an image is a path *object* (``pathlib.Path``), bytes or a PIL image
(a path given as ``str`` goes through the ``image=`` argument of a call instead); a stored item
is an :class:`~crisscross_client.models.ItemRef` or a ``(collection, id)`` pair; a vector is a
sequence of numbers (or a numpy array); a dict in the wire shape (``{"text": ...}``) or a
query model is taken as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

from crisscross_client.images import ImageInput, image_base64, is_image_input
from crisscross_client.models import (
    ImageQuery,
    ItemQuery,
    ItemRef,
    Query,
    TextQuery,
    VectorQuery,
)

QueryInput = Union[
    str, Query, ItemRef, "tuple[str, str]", Sequence[float], Mapping[str, Any], ImageInput
]
"""Anything :func:`to_query` turns into a query side."""

ItemInput = Union[ItemRef, "tuple[str, str]", Mapping[str, Any], str]
"""A stored item: a reference, a ``(collection, id)`` pair, or (where a collection is implied)
its id alone."""

_QUERY_TYPES = (TextQuery, ImageQuery, ItemQuery, VectorQuery)


def item_ref(item: ItemInput, collection: str | None = None) -> ItemRef:
    """``item`` as a reference; a bare id is taken from ``collection``."""
    if isinstance(item, ItemRef):
        return item
    if isinstance(item, str):
        if collection is None:
            raise ValueError(f"item {item!r} needs its collection: pass (collection, id)")
        return ItemRef(collection=collection, id=item)
    if isinstance(item, tuple):
        return ItemRef(collection=item[0], id=item[1])
    return ItemRef.model_validate(item)


def to_query(value: Any) -> Query:
    """One query side from ``value`` (see the module).

    Raises:
        TypeError: ``value`` is none of the accepted kinds.
    """
    if isinstance(value, _QUERY_TYPES):
        return value
    if isinstance(value, str):
        return TextQuery(text=value)
    if isinstance(value, ItemRef):
        return ItemQuery(item=value)
    if is_image_input(value):
        return ImageQuery(image=image_base64(value))
    if isinstance(value, Mapping):
        return _query_of_mapping(value)
    if not isinstance(value, Sequence) and callable(getattr(value, "tolist", None)):
        value = value.tolist()  # a numpy vector
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return ItemQuery(item=item_ref(value))
    if (
        isinstance(value, Sequence)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return VectorQuery(vector=[float(v) for v in value])
    raise TypeError(f"cannot make a query of {type(value).__name__}")


def _query_of_mapping(value: Mapping[str, Any]) -> Query:
    for model in _QUERY_TYPES:
        if set(value) == set(model.model_fields):
            return model.model_validate(dict(value))
    raise TypeError(f"a query holds one of text, image, item or vector, not {sorted(value)}")


def one_query(
    *,
    collection: str,
    text: str | None = None,
    image: ImageInput | None = None,
    item: ItemInput | None = None,
    vector: Sequence[float] | None = None,
    query: Any = None,
) -> Query:
    """The one query side a call names by keyword (exactly one of them).

    Raises:
        ValueError: none, or more than one.
    """
    given = [
        name
        for name, value in (
            ("text", text),
            ("image", image),
            ("item", item),
            ("vector", vector),
            ("query", query),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise ValueError(f"give exactly one of text, image, item, vector or query (got {given})")
    if text is not None:
        return TextQuery(text=text)
    if image is not None:
        return ImageQuery(image=image_base64(image))
    if item is not None:
        return ItemQuery(item=item_ref(item, collection))
    if vector is not None:
        return VectorQuery(vector=[float(v) for v in vector])
    return to_query(query)


def image_count(query: Query) -> int:
    """Images a query side holds (0 or 1)."""
    return 1 if isinstance(query, ImageQuery) else 0

"""A write request made into the operation a live collection logs: every item checked (its
metadata against the declared fields, its vector against the dimension, its id unique in the
batch), texts and images embedded by the collection's variant — all before anything is logged,
so a bad item refuses the whole request, naming its position and why.

A delete by filter and a metadata patch are *plans*
(:data:`service.engine.collection.write_path.Plan`): they read the collection at their own place in
the order of writes, inside the writer.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from formats.field_types import FieldType, FieldValueError, coerce_value
from service.engine.collection.catalog import Catalog
from service.engine.collection.live_collections import LiveEntry
from service.engine.collection.live_view import kept_mask
from service.engine.collection.write_path import Plan
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import check_filter
from service.engine.query.images import ImagePayload
from service.engine.search.planner import live_variant
from service.engine.search.searcher import Searcher
from service.exceptions import (
    DimensionMismatchError,
    FieldMismatchError,
    InvalidQueryError,
    NotFoundError,
    quoted,
)
from service.request_context import RequestContext
from storage.live.operations import Delete, Operation, Upsert
from storage.live.segment import SegmentView


@dataclass(frozen=True)
class NewItem:
    """One item of an upsert: its id, exactly one input (a text, an image or a vector) and its
    metadata; ``where`` locates it in the request (``items.3``)."""

    item_id: str
    text: str | None
    image: str | None
    vector: Sequence[float] | None
    metadata: Mapping[str, Any]
    where: str
    vector_base64: str | None = None
    """The vector as base64 of little-endian float32 (instead of ``vector``)."""


def coerced_metadata(
    fields: Mapping[str, FieldType], metadata: Mapping[str, Any], where: str
) -> dict[str, Any]:
    """``metadata`` as the collection stores it (values of declared fields, typed; nulls left
    out); :class:`FieldMismatchError` naming the field for an undeclared field or a value of
    another type."""
    stored: dict[str, Any] = {}
    for name, value in metadata.items():
        kind = fields.get(name)
        if kind is None:
            declared = ", ".join(sorted(fields)) or "none"
            raise FieldMismatchError(
                f"{where}.{name}: the collection declares no field {quoted(name)} (its fields: "
                f"{declared})",
                param=f"{where}.{name}",
            )
        if value is None:
            continue
        try:
            stored[name] = coerce_value(value, kind)
        except FieldValueError as exc:
            raise FieldMismatchError(f"{where}.{name}: {exc}", param=f"{where}.{name}") from None
    return stored


async def upsert_of(
    searcher: Searcher,
    context: RequestContext,
    catalog: Catalog,
    entry: LiveEntry,
    items: Sequence[NewItem],
) -> Upsert:
    """The upsert of ``items``: checked, then embedded (texts together, images in order)."""
    spec = entry.collection.spec
    seen: dict[str, int] = {}
    metadata: list[dict[str, Any]] = []
    given_rows: dict[int, np.ndarray] = {}
    for position, item in enumerate(items):
        first = seen.setdefault(item.item_id, position)
        if first != position:
            raise InvalidQueryError(
                f"{item.where}.id: {quoted(item.item_id)} is also items.{first}'s id; an upsert "
                "names each id once",
                param=f"{item.where}.id",
            )
        metadata.append(coerced_metadata(spec.fields, item.metadata, f"{item.where}.metadata"))
        if item.vector is not None and len(item.vector) != spec.dim:
            raise DimensionMismatchError(
                f"{item.where}.vector: {len(item.vector)} numbers, but collection "
                f"{quoted(spec.name)} has dimension {spec.dim}",
                param=f"{item.where}.vector",
            )
        if item.vector_base64 is not None:
            given_rows[position] = _decoded_vector(item, spec.dim, spec.name)
    vectors = np.empty((len(items), spec.dim), dtype=np.float32)
    texts = [(p, item) for p, item in enumerate(items) if item.text is not None]
    images = [(p, item) for p, item in enumerate(items) if item.image is not None]
    if texts:
        variant = live_variant(catalog, entry, "text", f"{texts[0][1].where}.text")
        rows = await searcher.embed_texts(context, variant, [item.text or "" for _, item in texts])
        for (position, item), row in zip(texts, rows, strict=True):
            if not np.isfinite(row).all():
                raise InvalidQueryError(
                    f"{item.where}.text: the text has no finite embedding",
                    param=f"{item.where}.text",
                )
            vectors[position] = row
    if images:
        variant = live_variant(catalog, entry, "image", f"{images[0][1].where}.image")
        payloads = [ImagePayload(f"{item.where}.image", item.image or "") for _, item in images]
        rows = await searcher.embed_images(context, variant, payloads)
        for (position, _), row in zip(images, rows, strict=True):
            vectors[position] = row
    for position, item in enumerate(items):
        if item.vector is not None:
            given_rows[position] = np.asarray(item.vector, dtype=np.float64)
    if given_rows:
        positions = sorted(given_rows)
        wheres = [
            f"{items[p].where}.{'vector' if items[p].vector is not None else 'vector_base64'}"
            for p in positions
        ]
        vectors[positions] = _unit_rows([given_rows[p] for p in positions], wheres)
    return Upsert(
        ids=tuple(item.item_id for item in items),
        vectors=vectors,
        metadata=tuple(metadata),
        texts=tuple(item.text for item in items),
    )


def _decoded_vector(item: NewItem, dim: int, name: str) -> np.ndarray:
    """An item's ``vector_base64`` as float64 ``[dim]``; :class:`DimensionMismatchError` for
    another length, :class:`InvalidQueryError` for bad base64 or a number that is not finite."""
    where = f"{item.where}.vector_base64"
    try:
        raw = base64.b64decode(item.vector_base64 or "", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidQueryError(f"{where}: not standard, padded base64", param=where) from None
    if len(raw) != dim * 4:
        raise DimensionMismatchError(
            f"{where}: {len(raw)} bytes, but collection {quoted(name)} takes {dim} float32 "
            f"numbers ({dim * 4} bytes)",
            param=where,
        )
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    if not np.isfinite(vector).all():
        raise InvalidQueryError(f"{where}: every number must be finite", param=where)
    return vector


def _unit_rows(rows: Sequence[np.ndarray], wheres: Sequence[str]) -> np.ndarray:
    """The clients' vectors (finite), each scaled by its largest magnitude, then to unit
    length, in float64 (neither 1e300 nor 1e-320 overflows or underflows), as float32;
    :class:`InvalidQueryError` naming the first of zero norm."""
    matrix = np.stack(rows)
    scale = np.abs(matrix).max(axis=1)
    zero = np.flatnonzero(scale == 0.0)
    if len(zero):
        where = wheres[int(zero[0])]
        raise InvalidQueryError(
            f"{where}: the vector has zero norm; it has no direction", param=where
        )
    scaled = matrix / scale[:, None]
    unit: np.ndarray = (scaled / np.linalg.norm(scaled, axis=1, keepdims=True)).astype(np.float32)
    return unit


def delete_ids_plan(ids: Sequence[str]) -> Plan:
    """The plan of a delete by ids."""
    operation = Delete(tuple(dict.fromkeys(ids)))

    def plan(_: SegmentView) -> Operation:
        return operation

    return plan


def delete_filter_plan(entry: LiveEntry, node: Filter) -> Plan:
    """The plan of a delete by filter (checked here against the declared fields): the ids the
    filter keeps among the items written before it."""
    check_filter(node, entry.fields, "filter")
    name = entry.collection.name

    def plan(view: SegmentView) -> Operation:
        keep = kept_mask(view, name, node)
        return Delete(tuple(view.item_id(int(row)) for row in np.flatnonzero(keep)))

    return plan


def patch_plan(entry: LiveEntry, item_id: str, metadata: Mapping[str, Any], merge: bool) -> Plan:
    """The plan of a metadata patch: the stored item (as it stands before the patch) with new
    metadata, its vector and text unchanged. The fields are checked here."""
    fields = entry.collection.spec.fields
    for name, value in metadata.items():
        coerced_metadata(fields, {name: value}, "metadata")
    collection_name = entry.collection.name

    def plan(view: SegmentView) -> Operation:
        row = view.row_of(item_id)
        if row is None:
            raise NotFoundError(
                f"unknown item {quoted(item_id)} in collection {quoted(collection_name)}"
            )
        merged: dict[str, Any] = dict(view.metadata(row)) if merge else {}
        for name, value in metadata.items():
            if value is None:
                merged.pop(name, None)
        merged.update(coerced_metadata(fields, metadata, "metadata"))
        return Upsert(
            ids=(item_id,),
            vectors=view.vectors_of(np.array([row], dtype=np.int64)),
            metadata=(merged,),
            texts=(view.text(row),),
        )

    return plan

"""The OpenAPI document as this server is configured: it allows exactly what the server accepts.

FastAPI builds the document from the request models, which hold the rules that never change
(types, the tagged query union, no unknown fields, ``exact`` alone in ``search_params``). The
limits that are settings (``max_k``, ``max_text_chars``, ``max_image_bytes``, ``max_nprobe``,
...) and the key checks that depend on the configured keys are added here, so a client
generating requests from the document (or a fuzzer such as schemathesis) sends nothing the
server then refuses for a reason the document did not state. A vector's length is stated once
the catalog is loaded and every served variant has the same dimension. What no JSON Schema can
say stays in the descriptions and in the 4xx answers: whether a base64 string is an image (named
by the format ``crisscross-image-base64``), a body's total size (``max_body_bytes``), the count
of image sides in one score request (``max_images_per_request``), and what depends on what is
served — a name that is not served (404), a variant without the tower a side needs, a vector's
dimension where variants differ, a filter's fields, an index's parameters (409).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.engine.images import max_base64_chars
from service.http.auth import KeyRing, document_security
from service.settings import UPLOAD_ROUTE, Settings


def configured_document(
    schema: dict[str, Any], settings: Settings, keys: KeyRing, dims: Sequence[int] = ()
) -> dict[str, Any]:
    """``schema`` (FastAPI's document) with the settings' limits and the configured key checks
    declared, and the length of a ``vector`` side when every served variant embeds in the same
    dimension (``dims``: the served variants' dimensions, empty before loading); changed in
    place and returned."""
    document_limits(schema, settings)
    _array_bounds(schema)
    if len(set(dims)) == 1:
        vector = schema.get("components", {}).get("schemas", {}).get("VectorQuery", {})
        if "vector" in vector.get("properties", {}):
            vector["properties"]["vector"].update({"minItems": dims[0], "maxItems": dims[0]})
    return document_security(schema, keys)


_ARRAY_BOUNDS = {"minLength": "minItems", "maxLength": "maxItems"}


def _array_bounds(node: Any) -> None:
    """Spell a list's length bounds as JSON Schema does, everywhere in ``node`` (in place).

    pydantic writes ``min_length`` of an optional list (``list[X] | None`` with the None left
    out of the document, as the filter's ``in`` is) as ``minLength``, a string keyword that
    JSON Schema ignores on an array; the validator still refuses an empty list."""
    if isinstance(node, dict):
        if node.get("type") == "array":
            for wrong, right in _ARRAY_BOUNDS.items():
                if wrong in node:
                    node.setdefault(right, node.pop(wrong))
        for value in node.values():
            _array_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _array_bounds(value)


def document_limits(schema: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Write the settings' limits into the request schemas of ``schema`` (in place)."""
    components: dict[str, Any] = schema.get("components", {}).get("schemas", {})
    text = {"maxLength": settings.max_text_chars}
    image = {"maxLength": max_base64_chars(settings.max_image_bytes)}

    def constrain(component: str, field: str, limits: dict[str, Any]) -> None:
        properties = components.get(component, {}).get("properties", {})
        if field in properties:
            properties[field].update(limits)

    constrain("TextQuery", "text", text)
    constrain("ImageQuery", "image", image)
    constrain("SearchRequest", "k", {"maximum": settings.max_k})
    constrain("SearchRequest", "exclude", {"maxItems": settings.max_exclude})
    constrain("SearchRequest", "offset", {"maximum": settings.max_offset})
    constrain("BulkSearchRequest", "searches", {"maxItems": settings.max_bulk_searches})
    constrain("ScoreRequest", "pairs", {"maxItems": settings.max_score_pairs})
    constrain("EmbedTexts", "texts", {"maxItems": settings.max_embed_inputs})
    constrain("EmbedImages", "images", {"maxItems": settings.max_images_per_request})
    write_ids = {"maxItems": settings.max_write_items}
    constrain("UpsertRequest", "items", write_ids)
    constrain("GetRequest", "ids", write_ids)
    constrain("WriteItem", "id", {"maxLength": settings.max_id_chars})
    constrain("WriteItem", "text", text)
    constrain("WriteItem", "image", image)
    constrain(
        "CreateCollectionRequest", "fields", {"maxProperties": settings.max_collection_fields}
    )
    for component, field in (("DeleteRequest", "ids"), ("GetRequest", "ids")):
        ids = components.get(component, {}).get("properties", {}).get(field, {})
        ids.update(write_ids)
        if "items" in ids:
            ids["items"]["maxLength"] = settings.max_id_chars
    for field, maximum in (("nprobe", settings.max_nprobe), ("ef_search", settings.max_ef_search)):
        # Optional integers: the bound goes on the integer member of the field's anyOf.
        param = components.get("SearchParams", {}).get("properties", {}).get(field, {})
        for member in param.get("anyOf", [param]):
            if member.get("type") == "integer":
                member["maximum"] = maximum
    for component, field, limits in (
        ("EmbedTexts", "texts", text),
        ("EmbedImages", "images", image),
    ):
        items = components.get(component, {}).get("properties", {}).get(field, {}).get("items")
        if items is not None:
            items.update(limits)

    form: dict[str, Any] | None = (
        schema.get("paths", {})
        .get(UPLOAD_ROUTE, {})
        .get("post", {})
        .get("requestBody", {})
        .get("content", {})
        .get("multipart/form-data", {})
        .get("schema")
    )
    if form is not None:
        form["additionalProperties"] = False
        fields = form.get("properties", {})
        if "k" in fields:
            fields["k"]["maximum"] = settings.max_k
        if "exclude" in fields:
            fields["exclude"]["maxItems"] = settings.max_exclude
        if "offset" in fields:
            fields["offset"]["maximum"] = settings.max_offset
        if "collection" in fields:
            # An empty form field counts as not given, and the collection is required.
            fields["collection"]["minLength"] = 1
    return schema

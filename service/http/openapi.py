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

The document also declares the response headers the middleware adds (``x-request-id`` on every
answer, ``x-timing-total-ms`` and the stage times of the routes that time stages, ``Retry-After``
on a 503) and the ways a key is sent (:func:`service.http.auth.document_security`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Final

from service.engine.query.images import max_base64_chars
from service.http.auth import KeyRing, document_security, required_role
from service.settings import UPLOAD_ROUTE, Settings


def configured_document(
    schema: dict[str, Any],
    settings: Settings,
    keys: KeyRing,
    dims: Sequence[int] = (),
    work_routes: Collection[str] = (),
) -> dict[str, Any]:
    """``schema`` (FastAPI's document) with the settings' limits, the response headers
    (``work_routes``: the paths that encode or search, :func:`document_headers`) and the
    configured key checks declared, and the length of a ``vector`` side when every served
    variant embeds in the same dimension (``dims``: the served variants' dimensions, empty
    before loading); changed in place and returned."""
    document_limits(schema, settings)
    document_headers(schema, work_routes)
    _array_bounds(schema)
    if len(set(dims)) == 1:
        vector = schema.get("components", {}).get("schemas", {}).get("VectorQuery", {})
        if "vector" in vector.get("properties", {}):
            vector["properties"]["vector"].update({"minItems": dims[0], "maxItems": dims[0]})
    return document_security(schema, keys)


_MS: Final = {"type": "string", "pattern": r"^[0-9]+\.[0-9]{3}$"}
HEADERS: Final[dict[str, dict[str, Any]]] = {
    "RequestId": {
        "description": (
            "The request's id: the client's x-request-id when it is sane (at most "
            "max_request_id_chars of [A-Za-z0-9._-]), else one the server made. Quote it when "
            "reporting a problem; the access log and a trace's server span carry it."
        ),
        "required": True,
        "schema": {"type": "string", "pattern": r"^[A-Za-z0-9._-]+$"},
    },
    "TimingTotal": {
        "description": "Milliseconds from the request's arrival to this answer's head.",
        "schema": _MS,
    },
    "TimingDecode": {
        "description": "Milliseconds spent decoding image payloads (sent when there were any).",
        "schema": _MS,
    },
    "TimingQueue": {
        "description": "Milliseconds queued for the encoder (sent when something was encoded).",
        "schema": _MS,
    },
    "TimingEncode": {
        "description": "Milliseconds in the encoder (sent when something was encoded).",
        "schema": _MS,
    },
    "TimingSearch": {
        "description": "Milliseconds in the index and vector lookups (sent when it searched).",
        "schema": _MS,
    },
    "TimingWrite": {
        "description": (
            "Milliseconds from handing the write to the collection's writer until it was "
            "durable and visible."
        ),
        "schema": _MS,
    },
    "TimingFsync": {
        "description": "Milliseconds the write's group took to append to the log and fsync it.",
        "schema": _MS,
    },
    "RetryAfter": {
        "description": (
            "Seconds to wait before retrying (overload_retry_after_s), with a refusal that "
            "passes: overloaded, shutting down, a write that could not be logged."
        ),
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    },
}
"""The response headers of the document, as ``components.headers`` entries."""
_SEARCH_STAGES: Final = {
    "x-timing-decode-ms": "TimingDecode",
    "x-timing-queue-ms": "TimingQueue",
    "x-timing-encode-ms": "TimingEncode",
    "x-timing-search-ms": "TimingSearch",
}
_WRITE_STAGES: Final = {
    "x-timing-decode-ms": "TimingDecode",
    "x-timing-queue-ms": "TimingQueue",
    "x-timing-encode-ms": "TimingEncode",
    "x-timing-write-ms": "TimingWrite",
    "x-timing-fsync-ms": "TimingFsync",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


def document_headers(schema: dict[str, Any], work_routes: Collection[str]) -> dict[str, Any]:
    """Declare the response headers (in place): ``x-request-id`` (always sent) and
    ``x-timing-total-ms`` on every response; the stage times on the 2xx answers of
    ``work_routes`` (decode, queue, encode, search) and of a live collection's writes (decode,
    queue, encode of an upsert's inputs; write, fsync); ``Retry-After`` on every 503 and 429.
    Only ``x-request-id`` is required: the others are sent when what they time happened."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if path in work_routes:
                stages: dict[str, str] = _SEARCH_STAGES
            elif required_role(path, method) == "write":
                stages = _WRITE_STAGES
            else:
                stages = {}
            for status, response in operation.get("responses", {}).items():
                headers = response.setdefault("headers", {})
                headers["x-request-id"] = _ref("RequestId")
                headers["x-timing-total-ms"] = _ref("TimingTotal")
                if status.startswith("2"):
                    headers.update({name: _ref(ref) for name, ref in stages.items()})
                if status in ("429", "503"):
                    headers["Retry-After"] = _ref("RetryAfter")
    schema.setdefault("components", {})["headers"] = HEADERS
    return schema


DATA_URI_PREFIX_CHARS = 64
"""Room for an image input's ``data:<media type>;base64,`` prefix in /v1/embeddings."""

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
    constrain("LexicalOptions", "text", text)
    window = components.get("SearchRequest", {}).get("properties", {}).get("window", {})
    for member in window.get("anyOf", [window]):
        if member.get("type") == "integer":
            member["maximum"] = settings.max_window
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
    constrain("AddFieldsRequest", "fields", {"maxProperties": settings.max_collection_fields})
    constrain("ScrollRequest", "limit", {"maximum": settings.max_scroll_limit})
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

    # /v1/embeddings: one string or a list; texts or (modality "image") image files, so each
    # bound is the larger of the two kinds' (the route holds each kind to its own).
    embeddings_input = components.get("EmbeddingsRequest", {}).get("properties", {}).get("input")
    longest = max(settings.max_text_chars, image["maxLength"] + DATA_URI_PREFIX_CHARS)
    for member in (embeddings_input or {}).get("anyOf", []):
        if member.get("type") == "array":
            member["maxItems"] = max(settings.max_embed_inputs, settings.max_images_per_request)
            member.get("items", {})["maxLength"] = longest
        else:
            member["maxLength"] = longest

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

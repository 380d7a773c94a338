"""How a framework's document is kept in a live collection, read back by every integration.

A live collection holds typed metadata fields only, while LangChain's and LlamaIndex's
documents carry a text and arbitrary JSON metadata. Each item stores:

- ``page_content`` (string): the document's text, exactly;
- ``metadata_json`` (string): the document's whole metadata as JSON, so any JSON value (nested,
  ``None``, an ``id`` key) round-trips unchanged;
- every *declared* field (the store's ``fields``: name → Crisscross type) copied from the
  metadata where present, so filters can test it.

Only declared fields can be filtered on; their names follow Crisscross's field names (1-64
lowercase letters, digits and ``_``, not ``id``) and their values must fit their type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from crisscross_client.models import FieldType

TEXT_FIELD = "page_content"
METADATA_FIELD = "metadata_json"
RESERVED_FIELDS = frozenset({TEXT_FIELD, METADATA_FIELD})


def collection_fields(declared: Mapping[str, FieldType]) -> dict[str, FieldType]:
    """The fields of a collection holding documents with the ``declared`` filterable fields;
    ValueError for a declared name the integration keeps for itself."""
    clash = sorted(RESERVED_FIELDS & set(declared))
    if clash:
        raise ValueError(f"fields {clash} are kept by the integration for the text and metadata")
    return {TEXT_FIELD: "string", METADATA_FIELD: "string", **declared}


def stored_metadata(
    text: str, metadata: Mapping[str, Any], declared: Mapping[str, FieldType]
) -> dict[str, Any]:
    """The item metadata that stores a document of ``text`` and ``metadata``."""
    stored: dict[str, Any] = {
        TEXT_FIELD: text,
        METADATA_FIELD: json.dumps(dict(metadata), sort_keys=True, ensure_ascii=False),
    }
    for name in declared:
        value = metadata.get(name)
        if value is not None:
            stored[name] = value
    return stored


def restored(stored: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The ``(text, metadata)`` of a document from its item's metadata; an item written by
    something else gives its ``text`` (if any) and its metadata as they are."""
    stored = dict(stored or {})
    if METADATA_FIELD not in stored:
        text = stored.pop("text", stored.pop(TEXT_FIELD, ""))
        return str(text), stored
    metadata = json.loads(str(stored[METADATA_FIELD]))
    return str(stored.get(TEXT_FIELD, "")), dict(metadata)

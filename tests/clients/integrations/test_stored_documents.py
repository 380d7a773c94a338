"""A framework's document kept in a live collection's typed fields, and read back exactly."""

from __future__ import annotations

import pytest

from crisscross_client.integrations.stored_documents import (
    collection_fields,
    restored,
    stored_metadata,
)


def test_any_json_metadata_round_trips_and_declared_fields_are_copied() -> None:
    metadata = {"id": 1, "nested": {"a": [1, None]}, "topic": "pets", "missing": None}
    stored = stored_metadata("a dog", metadata, {"topic": "string", "stars": "integer"})
    assert stored["topic"] == "pets"
    assert "stars" not in stored
    assert restored(stored) == ("a dog", metadata)


def test_items_written_by_something_else_read_as_they_are() -> None:
    assert restored({"text": "a cat", "image_id": 7}) == ("a cat", {"image_id": 7})
    assert restored(None) == ("", {})


def test_the_integrations_own_field_names_cannot_be_declared() -> None:
    assert collection_fields({"topic": "string"}) == {
        "page_content": "string",
        "metadata_json": "string",
        "topic": "string",
    }
    with pytest.raises(ValueError, match="page_content"):
        collection_fields({"page_content": "string"})

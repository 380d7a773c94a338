"""A store's collection checked when it opens: every difference of variant, dimension and
fields named at once; ``fields=None`` takes the collection's; a store of both frameworks."""

from __future__ import annotations

from typing import Any

import pytest

from crisscross_client import Client, NotFoundError
from crisscross_client.integrations import langchain as lc
from crisscross_client.integrations import llamaindex as li
from crisscross_client.integrations.collection_schema import (
    CollectionMismatchError,
    StoreSchema,
    differences,
)
from crisscross_client.models import LiveCollectionInfo
from tests.clients.integrations.conftest import VARIANT

OWN: dict[str, Any] = {"page_content": "string", "metadata_json": "string"}


def info(variant: str | None = "v", dim: int = 8, **fields: str) -> LiveCollectionInfo:
    return LiveCollectionInfo.model_validate(
        {
            "name": "c",
            "dim": dim,
            "variant": variant,
            "fields": {**OWN, **fields},
            "count": 0,
            "seq": 0,
            "rows": 0,
            "base_count": 0,
            "base_version": None,
            "index": "Flat",
            "log_bytes": 0,
            "created": "2026-11-29T00:00:00Z",
        }
    )


def schema(
    variant: str | None = "v",
    *,
    client_vectors: bool = False,
    dim: int | None = None,
    fields: dict[str, Any] | None = None,
) -> StoreSchema:
    return StoreSchema(variant, client_vectors, dim, fields, OWN)


def test_the_same_schema_has_no_difference_and_none_fields_take_any() -> None:
    assert differences(info(topic="string"), schema(fields={"topic": "string"})) == []
    assert differences(info(topic="string"), schema(fields=None)) == []
    assert differences(info(None), schema(None, client_vectors=True)) == []
    assert differences(info("w"), schema(None)) == []


def test_every_difference_is_named() -> None:
    found = differences(
        info("w", topic="integer", extra="string"),
        schema("v", fields={"topic": "string", "stars": "integer"}),
    )
    assert found == [
        "the collection is embedded by variant 'w'; the store was opened with variant 'v'",
        "the store declares field 'stars' (integer), the collection has no such field",
        "the collection has field 'extra' (string), the store does not declare it",
        "field 'topic' is of type integer in the collection, string in the store",
    ]


def test_vectors_and_variants_do_not_mix() -> None:
    (own_vectors,) = differences(info("w"), schema(None, client_vectors=True))
    assert "sends its own vectors" in own_vectors
    assert "variant='w'" in own_vectors
    (nothing_embeds,) = differences(info(None, dim=6), schema(None))
    assert "client vectors of dimension 6" in nothing_embeds
    assert differences(info(None, dim=6), schema(None, client_vectors=True, dim=4)) == [
        "the collection's dimension is 6; the store's 4"
    ]


def test_an_own_field_missing_or_of_another_type() -> None:
    missing = info()
    missing.fields.pop("metadata_json")
    assert differences(missing, schema()) == [
        "the collection lacks the store's own field 'metadata_json' (string)"
    ]
    optional = StoreSchema("v", False, None, None, OWN, optional_own=("metadata_json",))
    assert differences(missing, optional) == []


def test_a_langchain_store_reopened_with_other_fields_or_variant_fails_when_it_opens(
    service_url: str, collection_name: str
) -> None:
    store = lc.CrisscrossVectorStore(
        collection_name, variant=VARIANT, fields={"topic": "string"}, base_url=service_url
    )
    try:
        reopened = lc.CrisscrossVectorStore(collection_name, base_url=service_url)
        assert reopened.fields == {"topic": "string"}
        assert reopened.variant == VARIANT
        reopened.close()
        with pytest.raises(
            CollectionMismatchError,
            match=r"'stars' \(integer\).*add_fields\('t-\w+', \{'stars': 'integer'\}\)",
        ):
            lc.CrisscrossVectorStore(
                collection_name,
                variant=VARIANT,
                fields={"topic": "string", "stars": "integer"},
                base_url=service_url,
            )
        with pytest.raises(CollectionMismatchError, match="variant 'other'"):
            lc.CrisscrossVectorStore(collection_name, variant="other", base_url=service_url)
        with pytest.raises(CollectionMismatchError, match="sends its own vectors"):
            lc.CrisscrossVectorStore(
                collection_name, lc.CrisscrossEmbeddings(VARIANT), base_url=service_url
            )
        with pytest.raises(NotFoundError):
            lc.CrisscrossVectorStore(f"{collection_name}-x", base_url=service_url, create=False)
    finally:
        store.drop()
        store.close()


def test_a_llamaindex_store_reopened_with_another_dimension_fails_when_it_opens(
    service_url: str, collection_name: str
) -> None:
    store = li.CrisscrossVectorStore(
        collection=collection_name, dim=4, fields={"topic": "string"}, base_url=service_url
    )
    try:
        reopened = li.CrisscrossVectorStore(collection=collection_name, dim=4, base_url=service_url)
        assert reopened.fields == {"topic": "string"}
        reopened.close()
        with pytest.raises(CollectionMismatchError, match="dimension is 4; the store's 5"):
            li.CrisscrossVectorStore(collection=collection_name, dim=5, base_url=service_url)
        with pytest.raises(CollectionMismatchError, match="client vectors of dimension 4"):
            li.CrisscrossVectorStore(
                collection=collection_name, variant=VARIANT, base_url=service_url
            )
        with pytest.raises(CollectionMismatchError, match="'topic' is of type string"):
            li.CrisscrossVectorStore(
                collection=collection_name, dim=4, fields={"topic": "integer"}, base_url=service_url
            )
    finally:
        store.client.delete_collection(collection_name)
        store.close()


def test_a_llamaindex_collection_made_before_the_text_field_still_opens(
    service_url: str, collection_name: str
) -> None:
    with Client(service_url) as client:
        client.create_collection(
            collection_name,
            dim=2,
            fields={"node_json": "string", "node_type": "string", "ref_doc_id": "string"},
        )
        try:
            store = li.CrisscrossVectorStore(
                collection=collection_name, dim=2, base_url=service_url
            )
            assert store.fields == {}
            store.close()
        finally:
            client.delete_collection(collection_name)

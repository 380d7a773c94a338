"""The LlamaIndex vector store (llama-index-core 0.14.25) against a real service: the same ids as
``POST /v1/search`` for the same query and filter, nodes read back whole, deletes by document."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from crisscross_client.integrations.llamaindex import CrisscrossVectorStore
from tests.e2e.conftest import LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MINILM = "minilm-l6-v2"
NOTES = [
    ("n1", "doc-a", "a dog asleep on the sofa", "pets", 5),
    ("n2", "doc-a", "a red double decker bus in London", "travel", 4),
    ("n3", "doc-b", "a cat chasing a mouse", "pets", 3),
    ("n4", "doc-b", "a puppy playing with a ball in the park", "pets", 2),
    ("n5", "doc-c", "a train crossing a bridge at dusk", "travel", 5),
]


def node(node_id: str, doc: str, text: str, topic: str, stars: int) -> TextNode:
    return TextNode(
        id_=node_id,
        text=text,
        metadata={"topic": topic, "stars": stars, "source": {"page": 1}},
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)},
    )


@pytest.fixture(scope="module")
def service(
    served_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveService]:
    variants_root, bundles_root = served_roots
    root = tmp_path_factory.mktemp("llamaindex")
    env = {
        "CRISSCROSS_DEFAULT_VARIANT": MINILM,
        "CRISSCROSS_COLLECTIONS_DIR": str(root / "collections"),
    }
    live = start_service(variants_root, bundles_root, root / "service.log", env)
    yield live
    assert stop_service(live) == 0, live.log()


@pytest.fixture
def store(service: LiveService) -> Iterator[CrisscrossVectorStore]:
    created = CrisscrossVectorStore(
        collection=f"li-{uuid.uuid4().hex[:12]}",
        variant=MINILM,
        fields={"topic": "string", "stars": "integer"},
        base_url=service.url,
    )
    created.add([node(*note) for note in NOTES])
    try:
        yield created
    finally:
        created.client.delete_collection(created.collection)
        created.close()


def service_ids(service: LiveService, collection: str, text: str, k: int, filter: object) -> list:
    answer = httpx.post(
        f"{service.url}/v1/search",
        json={"query": {"text": text}, "collection": collection, "k": k, "filter": filter},
        timeout=30.0,
    )
    assert answer.status_code == 200, answer.text
    return [hit["id"] for hit in answer.json()["results"]]


@pytest.mark.parametrize(
    ("filters", "crisscross"),
    [
        (
            MetadataFilters(filters=[MetadataFilter(key="topic", value="pets")]),
            {"field": "topic", "eq": "pets"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="topic", value="travel"),
                    MetadataFilter(key="stars", value=4, operator=FilterOperator.GTE),
                ],
                condition=FilterCondition.OR,
            ),
            {"or": [{"field": "topic", "eq": "travel"}, {"field": "stars", "range": {"gte": 4}}]},
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="stars", value=[2, 3], operator=FilterOperator.NIN)]
            ),
            {"not": {"field": "stars", "in": [2, 3]}},
        ),
    ],
    ids=["eq", "or with a range", "nin"],
)
def test_the_same_ids_as_the_services_search(
    service: LiveService,
    store: CrisscrossVectorStore,
    filters: MetadataFilters,
    crisscross: dict[str, object],
) -> None:
    query = VectorStoreQuery(query_str="a sleeping puppy", similarity_top_k=3, filters=filters)
    result = store.query(query)
    expected = service_ids(service, store.collection, "a sleeping puppy", 3, crisscross)
    assert result.ids == expected
    assert expected
    assert [found.node_id for found in result.nodes or []] == expected
    similarities = result.similarities or []
    assert similarities == sorted(similarities, reverse=True)


def test_nodes_come_back_whole(store: CrisscrossVectorStore) -> None:
    result = store.query(VectorStoreQuery(query_str="a cat chasing a mouse", similarity_top_k=1))
    (found,) = result.nodes or []
    assert found.node_id == "n3"
    assert found.get_content() == "a cat chasing a mouse"
    assert found.metadata == {"topic": "pets", "stars": 3, "source": {"page": 1}}
    assert found.ref_doc_id == "doc-b"


def test_delete_removes_every_node_of_a_document(store: CrisscrossVectorStore) -> None:
    store.delete("doc-a")
    result = store.query(VectorStoreQuery(query_str="a dog", similarity_top_k=5))
    assert set(result.ids or []) == {"n3", "n4", "n5"}


def test_a_store_of_client_embeddings_queries_by_vector(service: LiveService) -> None:
    vectors = np.eye(4, dtype=np.float32)
    store = CrisscrossVectorStore(
        collection=f"li-{uuid.uuid4().hex[:12]}", dim=4, base_url=service.url
    )
    try:
        assert store.is_embedding_query
        store.add(
            [
                TextNode(id_=f"v{row}", text=f"row {row}", embedding=vectors[row].tolist())
                for row in range(4)
            ]
        )
        query = VectorStoreQuery(query_embedding=[0.1, 0.9, 0.0, 0.2], similarity_top_k=2)
        assert store.query(query).ids == ["v1", "v3"]
    finally:
        store.client.delete_collection(store.collection)
        store.close()

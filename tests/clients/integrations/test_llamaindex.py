"""The LlamaIndex integration against the real app (fake bag-of-words variant): an index built
from documents through LlamaIndex's own path with the service's embeddings (no OpenAI package,
no mock embeddings, each node embedded once), queried with filters, by a query engine, in every
mode the store takes (the same ids as ``POST /v1/search``, MMR as LlamaIndex's own), the rest
refused by name; coroutines that never touch the sync client; nodes read and deleted."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from crisscross_client import AsyncClient, Client
from crisscross_client.integrations.llamaindex import CrisscrossEmbedding, CrisscrossVectorStore
from tests.clients.integrations.conftest import VARIANT, Served

DOCUMENTS = [
    ("doc-dog", "a dog asleep on the red sofa", {"topic": "pets", "stars": 5}),
    ("doc-puppy", "a dog asleep on the red sofa at night", {"topic": "pets", "stars": 4}),
    ("doc-bus", "a red bus in London", {"topic": "travel", "stars": 4}),
    ("doc-cat", "a cat chasing a mouse", {"topic": "pets", "stars": 3}),
    ("doc-train", "a train crossing a bridge at dusk", {"topic": "travel", "stars": 2}),
]
FIELDS: dict[str, Any] = {"topic": "string", "stars": "integer"}
PETS = MetadataFilters(filters=[MetadataFilter(key="topic", value="pets")])


def documents() -> list[Document]:
    return [Document(id_=doc_id, text=text, metadata=meta) for doc_id, text, meta in DOCUMENTS]


def search_ids(url: str, body: dict[str, Any]) -> list[str]:
    answer = httpx.post(f"{url}/v1/search", json=body, timeout=30.0)
    assert answer.status_code == 200, answer.text
    return [hit["id"] for hit in answer.json()["results"]]


@pytest.fixture
def built(
    served: Served, collection_name: str
) -> Iterator[tuple[VectorStoreIndex, CrisscrossVectorStore]]:
    """An index built from :data:`DOCUMENTS` on a store the variant embeds."""
    store = CrisscrossVectorStore(
        collection=collection_name, variant=VARIANT, fields=FIELDS, base_url=served.url
    )
    embed_model = CrisscrossEmbedding(VARIANT, base_url=served.url)
    index = VectorStoreIndex.from_documents(
        documents(),
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=embed_model,
    )
    try:
        yield index, store
    finally:
        store.client.delete_collection(collection_name)
        store.close()
        embed_model.close()


def test_from_documents_embeds_each_node_once_with_the_services_variant(
    served: Served, collection_name: str
) -> None:
    assert importlib.util.find_spec("llama_index.embeddings") is None  # no OpenAI package
    store = CrisscrossVectorStore(
        collection=collection_name, variant=VARIANT, fields=FIELDS, base_url=served.url
    )
    try:
        served.encoder.calls.clear()
        index = VectorStoreIndex.from_documents(
            documents(),
            storage_context=StorageContext.from_defaults(vector_store=store),
            embed_model=CrisscrossEmbedding(VARIANT, base_url=served.url),
        )
        embedded = [text for call in served.encoder.calls for text in call]
        # one /v1/embed of every node's text as LlamaIndex embeds it (its metadata, then
        # its text); the upsert sent those vectors, embedding nothing again
        assert len(embedded) == len(DOCUMENTS)
        originals = [text for _, text, _ in DOCUMENTS]
        assert all(
            text.endswith(original) for text, original in zip(embedded, originals, strict=True)
        )
        served.encoder.calls.clear()
        nodes = index.as_retriever(similarity_top_k=2, filters=PETS).retrieve("a red dog")
        # the query text was embedded once, by the search itself
        assert served.encoder.calls == [["a red dog"]]
        assert {node.node.metadata["topic"] for node in nodes} == {"pets"}
        # the item holds the vector /v1/embed gave, and the node's text for keyword search
        (item,) = store.client.get_items(
            collection_name, [nodes[0].node.node_id], include_vectors=True
        ).items
        assert item.text is None
        assert item.metadata["text"] == nodes[0].node.get_content()
        (expected,) = store.client.embed_texts(
            [embedded[originals.index(item.metadata["text"])]], VARIANT
        ).embeddings
        assert item.vector == pytest.approx(expected, abs=1e-6)
    finally:
        store.client.delete_collection(collection_name)
        store.close()


@pytest.mark.parametrize(
    ("filters", "crisscross"),
    [
        (PETS, {"field": "topic", "eq": "pets"}),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="stars", value=4, operator=FilterOperator.GTE)]
            ),
            {"field": "stars", "range": {"gte": 4}},
        ),
    ],
)
def test_a_retriever_with_filters_answers_as_the_service(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore],
    filters: MetadataFilters,
    crisscross: dict[str, Any],
) -> None:
    index, store = built
    nodes = index.as_retriever(similarity_top_k=3, filters=filters).retrieve("a red dog asleep")
    expected = search_ids(
        store.client.base_url,
        {
            "collection": store.collection,
            "query": {"text": "a red dog asleep"},
            "k": 3,
            "filter": crisscross,
        },
    )
    assert [node.node.node_id for node in nodes] == expected
    scores = [node.score or 0.0 for node in nodes]
    assert all(isinstance(score, float) for score in scores)
    assert scores == sorted(scores, reverse=True)
    assert {node.node.ref_doc_id for node in nodes} <= {doc_id for doc_id, _, _ in DOCUMENTS}


def test_from_vector_store_and_a_query_engine(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore], served: Served
) -> None:
    _, store = built
    index = VectorStoreIndex.from_vector_store(
        store, embed_model=CrisscrossEmbedding(VARIANT, base_url=served.url)
    )
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=2, filters=PETS)
    response = engine.query("a red dog asleep")
    assert [node.node.metadata["topic"] for node in response.source_nodes] == ["pets", "pets"]
    assert "a dog asleep on the red sofa" in str(response)


@pytest.mark.parametrize(
    ("mode", "kwargs", "body"),
    [
        ("hybrid", {}, {"mode": "hybrid"}),
        (
            "hybrid",
            {"fusion": {"method": "rrf", "k": 5}, "window": 4},
            {"mode": "hybrid", "fusion": {"method": "rrf", "k": 5}, "window": 4},
        ),
        ("text_search", {}, {"mode": "lexical"}),
        ("default", {"rerank": {"by": "exact"}}, {"rerank": {"by": "exact"}}),
        ("default", {"offset": 1, "exclude": ["x"]}, {"offset": 1, "exclude": ["x"]}),
    ],
)
def test_each_mode_and_lever_answers_as_the_service(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore],
    mode: str,
    kwargs: dict[str, Any],
    body: dict[str, Any],
) -> None:
    index, store = built
    retriever = index.as_retriever(
        similarity_top_k=3, vector_store_query_mode=mode, vector_store_kwargs=kwargs
    )
    nodes = retriever.retrieve("red dog")
    expected = search_ids(
        store.client.base_url,
        {"collection": store.collection, "query": {"text": "red dog"}, "k": 3, **body},
    )
    assert [node.node.node_id for node in nodes] == expected
    assert expected


def test_hybrid_alpha_weighs_the_dense_leg(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore],
) -> None:
    index, store = built
    nodes = index.as_retriever(
        similarity_top_k=3, vector_store_query_mode="hybrid", alpha=0.9
    ).retrieve("red dog")
    expected = search_ids(
        store.client.base_url,
        {
            "collection": store.collection,
            "query": {"text": "red dog"},
            "k": 3,
            "mode": "hybrid",
            "fusion": {"method": "weighted", "alpha": 0.9},
        },
    )
    assert [node.node.node_id for node in nodes] == expected


@pytest.mark.parametrize("threshold", [None, 0.1, 0.5, 1.0])
def test_mmr_is_llamaindexs_own_over_the_candidates_stored_vectors(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore], threshold: float | None
) -> None:
    index, store = built
    kwargs: dict[str, Any] = {"mmr_prefetch_k": 5}
    if threshold is not None:
        kwargs["mmr_threshold"] = threshold
    retriever = index.as_retriever(
        similarity_top_k=3, vector_store_query_mode="mmr", vector_store_kwargs=kwargs
    )
    nodes = retriever.retrieve("a red dog asleep")
    with Client(store.client.base_url) as client:
        vector = client.embed_texts(["a red dog asleep"], variant=VARIANT).embeddings[0]
        ids = [hit.id for hit in client.search(store.collection, vector=vector, k=5).results]
        stored = client.get_items(store.collection, ids, include_vectors=True).items
    scores, expected = get_top_k_mmr_embeddings(
        vector,
        [item.vector or [] for item in stored],
        similarity_top_k=3,
        embedding_ids=ids,
        mmr_threshold=threshold,
    )
    assert [node.node.node_id for node in nodes] == expected
    assert [node.score for node in nodes] == pytest.approx(scores)


def test_what_the_store_cannot_honour_is_refused_by_name(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore],
) -> None:
    index, store = built
    with pytest.raises(NotImplementedError, match="'svm'"):
        index.as_retriever(vector_store_query_mode="svm").retrieve("a dog")
    with pytest.raises(TypeError, match="'bogus'"):
        index.as_retriever(vector_store_kwargs={"bogus": 1}).retrieve("a dog")
    with pytest.raises(ValueError, match="MMR"):
        index.as_retriever(vector_store_kwargs={"mmr_threshold": 0.2}).retrieve("a dog")
    with pytest.raises(TypeError, match="'bogus'"):
        store.add([TextNode(text="x")], bogus=1)


def test_a_store_of_client_vectors_searches_every_mode(
    served: Served, collection_name: str
) -> None:
    embed_model = CrisscrossEmbedding(VARIANT, base_url=served.url)
    store = CrisscrossVectorStore(
        collection=collection_name, dim=64, fields=FIELDS, base_url=served.url
    )
    try:
        assert store.is_embedding_query
        index = VectorStoreIndex.from_documents(
            documents(),
            storage_context=StorageContext.from_defaults(vector_store=store),
            embed_model=embed_model,
        )
        for mode in ("default", "hybrid", "text_search", "mmr"):
            nodes = index.as_retriever(similarity_top_k=2, vector_store_query_mode=mode).retrieve(
                "red bus"
            )
            assert len(nodes) == 2, mode
        lexical = index.as_retriever(similarity_top_k=5, vector_store_query_mode="text_search")
        assert {node.node.get_content() for node in lexical.retrieve("london")} == {
            "a red bus in London"
        }
    finally:
        store.client.delete_collection(collection_name)
        store.close()


@pytest.mark.asyncio
async def test_the_coroutines_await_the_async_client_never_the_sync_one(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore], served: Served
) -> None:
    _, built_store = built
    sync = Client(served.url)
    async with AsyncClient(served.url) as shared:
        store = CrisscrossVectorStore(
            collection=built_store.collection,
            variant=VARIANT,
            base_url=served.url,
            client=sync,
            async_client=shared,
        )
        embed_model = CrisscrossEmbedding(VARIANT, client=sync, async_client=shared)
        sync.close()  # any call of the sync client now fails
        with pytest.raises(RuntimeError):
            store.query(VectorStoreQuery(query_str="a dog"))
        index = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
        nodes = await index.as_retriever(similarity_top_k=2, filters=PETS).aretrieve("a red dog")
        assert {node.node.metadata["topic"] for node in nodes} == {"pets"}
        engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1)
        assert "sofa" in str(await engine.aquery("a red dog asleep on the sofa"))
        node = TextNode(
            id_="hamster",
            text="a hamster in a wheel",
            metadata={"topic": "pets"},
            embedding=await embed_model.aget_text_embedding("a hamster in a wheel"),
        )
        assert await store.async_add([node]) == ["hamster"]
        mmr = await index.as_retriever(similarity_top_k=2, vector_store_query_mode="mmr").aretrieve(
            "a hamster"
        )
        assert mmr[0].node.node_id == "hamster"
        assert [n.node_id for n in await store.aget_nodes(["hamster"])] == ["hamster"]
        await store.adelete_nodes(["hamster"])
        assert await store.aget_nodes(["hamster"]) == []
        await store.adelete("doc-dog")
        await store.aclear()
        assert (await store.aquery(VectorStoreQuery(query_str="a dog"))).ids == []


def test_nodes_are_read_deleted_and_cleared(
    built: tuple[VectorStoreIndex, CrisscrossVectorStore],
) -> None:
    index, store = built
    (node,) = index.as_retriever(similarity_top_k=1).retrieve("a cat chasing a mouse")
    assert [found.node_id for found in store.get_nodes([node.node.node_id, "missing"])] == [
        node.node.node_id
    ]
    pets = store.get_nodes(filters=PETS)
    assert pets
    assert {found.metadata["topic"] for found in pets} == {"pets"}
    everything = store.query(VectorStoreQuery(query_str="a", similarity_top_k=10))
    assert {found.node_id for found in pets} == {
        found.node_id for found in everything.nodes or [] if found.metadata["topic"] == "pets"
    }
    first = pets[0].node_id
    assert [found.node_id for found in store.get_nodes([first, "missing"], PETS)] == [first]
    store.delete_nodes(filters=PETS)
    left = store.query(VectorStoreQuery(query_str="a", similarity_top_k=10))
    assert {found.metadata["topic"] for found in left.nodes or []} == {"travel"}
    store.delete("doc-bus")
    assert len(store.query(VectorStoreQuery(query_str="a", similarity_top_k=10)).ids or []) == 1
    store.clear()
    assert store.query(VectorStoreQuery(query_str="a", similarity_top_k=10)).ids == []


def test_reprs_hide_the_key(served: Served, collection_name: str) -> None:
    store = CrisscrossVectorStore(
        collection=collection_name, variant=VARIANT, api_key="secret-key", base_url=served.url
    )
    try:
        shown = repr(store)
        assert "secret-key" not in shown
        assert f"collection={collection_name!r}" in shown
        assert f"variant={VARIANT!r}" in shown
        embedding = CrisscrossEmbedding(VARIANT, api_key="secret-key", base_url=served.url)
        assert "secret-key" not in repr(embedding)
        assert f"variant={VARIANT!r}" in repr(embedding)
    finally:
        store.client.delete_collection(collection_name)
        store.close()


def test_an_index_built_with_use_async_awaits_the_store_and_the_embeddings(
    served: Served, collection_name: str
) -> None:
    store = CrisscrossVectorStore(
        collection=collection_name, variant=VARIANT, fields=FIELDS, base_url=served.url
    )
    try:
        index = VectorStoreIndex.from_documents(
            documents(),
            storage_context=StorageContext.from_defaults(vector_store=store),
            embed_model=CrisscrossEmbedding(VARIANT, base_url=served.url),
            use_async=True,
        )
        nodes = index.as_retriever(similarity_top_k=5).retrieve("a red dog asleep")
        assert {node.node.ref_doc_id for node in nodes} == {doc_id for doc_id, _, _ in DOCUMENTS}
    finally:
        store.client.delete_collection(collection_name)
        store.close()

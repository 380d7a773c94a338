"""The LangChain integration against the real app (fake bag-of-words variant): LangChain's
standard suites, then what they do not cover — the service's levers honoured (the same ids as
``POST /v1/search`` with the same body) or refused by name, MMR against LangChain's reference,
scores on a retriever's documents, coroutines that never touch the sync client, reprs."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any, TypeVar

import httpx
import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance
from langchain_tests.integration_tests import (
    EmbeddingsIntegrationTests,
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from crisscross_client import AsyncClient, Client
from crisscross_client.integrations.langchain import (
    CrisscrossEmbeddings,
    CrisscrossRetriever,
    CrisscrossVectorStore,
    CrisscrossVectorStoreRetriever,
)
from tests.clients.integrations.conftest import VARIANT

T = TypeVar("T")

NOTES = [
    ("dog", "a dog asleep on the red sofa", {"topic": "pets", "stars": 5}),
    ("puppy", "a dog asleep on the red sofa at night", {"topic": "pets", "stars": 4}),
    ("bus", "a red bus in London", {"topic": "travel", "stars": 4}),
    ("cat", "a cat chasing a mouse", {"topic": "pets", "stars": 3}),
    ("train", "a train crossing a bridge at dusk", {"topic": "travel", "stars": 2}),
    ("kite", "a child flying a kite on the beach", {"topic": "travel", "stars": 1}),
]
FIELDS: dict[str, Any] = {"topic": "string", "stars": "integer"}


def run_async_tests(cls: type[T]) -> type[T]:
    """Mark the suite's coroutine tests for pytest-asyncio (strict mode runs only marked ones;
    langchain-tests leaves them unmarked, for its own auto mode)."""
    for name in dir(cls):
        test = getattr(cls, name)
        if name.startswith("test_") and inspect.iscoroutinefunction(test):
            pytest.mark.asyncio(test)
    return cls


@run_async_tests
class TestStandardEmbeddings(EmbeddingsIntegrationTests):
    url = ""

    @pytest.fixture(autouse=True)
    def _url(self, service_url: str) -> None:
        type(self).url = service_url

    @property
    def embeddings_class(self) -> type[Embeddings]:
        return CrisscrossEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"variant": VARIANT, "base_url": self.url}


@run_async_tests
class TestStandardVectorStore(VectorStoreIntegrationTests):
    """An empty live collection per test (the suite's fake 6-dimensional embeddings, vectors
    sent by the client), dropped afterwards."""

    @pytest.fixture
    def vectorstore(self, service_url: str, collection_name: str) -> Iterator[VectorStore]:
        store = CrisscrossVectorStore(collection_name, self.get_embeddings(), base_url=service_url)
        try:
            yield store
        finally:
            store.drop()
            store.close()


@run_async_tests
class TestStandardRetriever(RetrieversIntegrationTests):
    """The retriever over the served fake captions bundle (text embedded by the service)."""

    url = ""

    @pytest.fixture(autouse=True)
    def _url(self, service_url: str) -> None:
        type(self).url = service_url

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return CrisscrossRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"collection": "captions", "base_url": self.url}

    @property
    def retriever_query_example(self) -> str:
        return "a dog on a couch"


@pytest.fixture
def notes(service_url: str, collection_name: str) -> Iterator[CrisscrossVectorStore]:
    """A store embedded by the service, holding :data:`NOTES`."""
    store = CrisscrossVectorStore(
        collection_name, variant=VARIANT, fields=FIELDS, base_url=service_url
    )
    store.add_texts(
        [text for _, text, _ in NOTES],
        [metadata for _, _, metadata in NOTES],
        ids=[note_id for note_id, _, _ in NOTES],
    )
    try:
        yield store
    finally:
        store.drop()
        store.close()


def service_search(url: str, body: dict[str, Any]) -> list[tuple[str, float]]:
    answer = httpx.post(f"{url}/v1/search", json=body, timeout=30.0)
    assert answer.status_code == 200, answer.text
    return [(hit["id"], hit["score"]) for hit in answer.json()["results"]]


@pytest.mark.parametrize(
    ("levers", "body"),
    [
        ({"mode": "lexical"}, {"mode": "lexical", "lexical": {"field": "page_content"}}),
        ({"mode": "hybrid"}, {"mode": "hybrid", "lexical": {"field": "page_content"}}),
        (
            {"mode": "hybrid", "fusion": {"method": "rrf", "k": 5}, "window": 4},
            {
                "mode": "hybrid",
                "lexical": {"field": "page_content"},
                "fusion": {"method": "rrf", "k": 5},
                "window": 4,
            },
        ),
        ({"rerank": {"by": "exact"}}, {"rerank": {"by": "exact"}}),
        ({"search_params": {"exact": True}}, {"search_params": {"exact": True}}),
        ({"offset": 1}, {"offset": 1}),
        ({"exclude": ["dog"]}, {"exclude": ["dog"]}),
    ],
    ids=["lexical", "hybrid", "rrf-window", "rerank", "search_params", "offset", "exclude"],
)
def test_each_lever_gives_the_services_answer(
    notes: CrisscrossVectorStore, levers: dict[str, Any], body: dict[str, Any]
) -> None:
    query = "a red dog asleep"
    found = notes.similarity_search_with_score(query, k=3, filter={"stars": {"$gte": 2}}, **levers)
    expected = service_search(
        notes.client.base_url,
        {
            "collection": notes.collection,
            "query": {"text": query},
            "k": 3,
            "filter": {"field": "stars", "range": {"gte": 2}},
            **body,
        },
    )
    assert [(document.id, score) for document, score in found] == expected
    assert expected
    retriever = notes.as_retriever(
        search_kwargs={"k": 3, "filter": {"stars": {"$gte": 2}}, **levers}
    )
    documents = retriever.invoke(query)
    assert [(document.id, document.metadata["score"]) for document in documents] == expected


def test_a_keyword_search_finds_only_the_documents_holding_the_word(
    notes: CrisscrossVectorStore,
) -> None:
    dense = notes.similarity_search_with_score("red", k=6)
    lexical = notes.similarity_search_with_score("red", k=6, mode="lexical")
    assert {document.id for document, _ in lexical} == {"dog", "puppy", "bus"}
    assert len(dense) == 6
    assert notes.similarity_search("red", k=6, mode="dense") == [document for document, _ in dense]


def test_score_threshold_keeps_the_scores_at_least_it(notes: CrisscrossVectorStore) -> None:
    every = notes.similarity_search_with_score("a dog asleep on the red sofa", k=6)
    threshold = every[1][1]
    kept = notes.similarity_search_with_score(
        "a dog asleep on the red sofa", k=6, score_threshold=threshold
    )
    assert kept == [pair for pair in every if pair[1] >= threshold]
    assert len(kept) == 2
    assert notes.similarity_search("a bowl of soup", k=6, score_threshold=0.99) == []
    relevant = notes.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.75, "k": 6}
    ).invoke("a dog asleep on the red sofa")
    assert relevant
    assert all(document.metadata["score"] >= 0.75 for document in relevant)


def test_unknown_or_ignored_options_are_refused_by_name(notes: CrisscrossVectorStore) -> None:
    with pytest.raises(TypeError, match="'bogus_kwarg'"):
        notes.similarity_search("a dog", bogus_kwarg=1)
    with pytest.raises(TypeError, match="'bogus_kwarg'"):
        notes.as_retriever(search_kwargs={"bogus_kwarg": 1})
    with pytest.raises(TypeError, match="'fetch_k'"):
        notes.as_retriever(search_kwargs={"fetch_k": 10})
    with pytest.raises(TypeError, match="'bogus'"):
        notes.add_texts(["x"], bogus=1)
    with pytest.raises(TypeError, match="'bogus'"):
        notes.delete(["x"], bogus=1)
    with pytest.raises(ValueError, match="mode 'sparse'"):
        notes.similarity_search("a dog", mode="sparse")
    with pytest.raises(ValueError, match="fusion"):
        notes.similarity_search("a dog", fusion={"method": "rrf"})
    with pytest.raises(ValueError, match="mode='lexical'"):
        notes.similarity_search_with_relevance_scores("a dog", mode="lexical")


def reference_mmr(
    store: CrisscrossVectorStore, query: str, k: int, fetch_k: int, lambda_mult: float, **kw: Any
) -> list[str]:
    """LangChain's own MMR over the same candidates' stored vectors, fetched here."""
    with Client(store.client.base_url) as client:
        vector = client.embed_texts([query], variant=VARIANT).embeddings[0]
        hits = client.search(store.collection, vector=vector, k=fetch_k, **kw).results
        ids = [hit.id for hit in hits]
        stored = client.get_items(store.collection, ids, include_vectors=True).items
    vectors = [item.vector or [] for item in stored]
    chosen = maximal_marginal_relevance(np.array(vector), vectors, lambda_mult, k)
    return [ids[i] for i in chosen]


@pytest.mark.parametrize("lambda_mult", [0.0, 0.3, 0.5, 1.0])
def test_mmr_chooses_what_langchains_reference_chooses(
    notes: CrisscrossVectorStore, lambda_mult: float
) -> None:
    query = "a red dog asleep on the sofa"
    chosen = notes.max_marginal_relevance_search(query, k=3, fetch_k=5, lambda_mult=lambda_mult)
    assert [document.id for document in chosen] == reference_mmr(notes, query, 3, 5, lambda_mult)
    assert chosen[0].page_content
    by_vector = notes.max_marginal_relevance_search_by_vector(
        notes.client.embed_texts([query], variant=VARIANT).embeddings[0],
        k=3,
        fetch_k=5,
        lambda_mult=lambda_mult,
    )
    assert by_vector == chosen


def test_mmr_diversifies_and_takes_filters_and_levers(notes: CrisscrossVectorStore) -> None:
    query = "a dog asleep on the red sofa"
    relevant = [d.id for d in notes.max_marginal_relevance_search(query, k=2, lambda_mult=1.0)]
    assert relevant == ["dog", "puppy"]
    diverse = [d.id for d in notes.max_marginal_relevance_search(query, k=2, lambda_mult=0.1)]
    assert diverse[0] == "dog"
    assert diverse[1] != "puppy"
    travel = notes.max_marginal_relevance_search(query, k=2, filter={"topic": "travel"})
    assert {document.metadata["topic"] for document in travel} == {"travel"}
    lexical = notes.max_marginal_relevance_search("red", k=3, fetch_k=6, mode="lexical")
    assert {document.id for document in lexical} == {"dog", "puppy", "bus"}
    retriever = notes.as_retriever(
        search_type="mmr", search_kwargs={"k": 2, "fetch_k": 6, "lambda_mult": 0.1}
    )
    documents = retriever.invoke(query)
    assert [document.id for document in documents] == diverse
    assert all(isinstance(document.metadata["score"], float) for document in documents)
    with pytest.raises(ValueError, match="fetch_k"):
        notes.max_marginal_relevance_search(query, k=5, fetch_k=2)


def test_mmr_with_client_embeddings(service_url: str, collection_name: str) -> None:
    embeddings = CrisscrossEmbeddings(VARIANT, base_url=service_url)
    store = CrisscrossVectorStore(collection_name, embeddings, base_url=service_url)
    try:
        store.add_texts([text for _, text, _ in NOTES], ids=[note_id for note_id, _, _ in NOTES])
        query = "a red dog asleep on the sofa"
        chosen = store.max_marginal_relevance_search(query, k=3, fetch_k=6, lambda_mult=0.3)
        assert [d.id for d in chosen] == reference_mmr(store, query, 3, 6, 0.3)
        hybrid = store.similarity_search("red", k=3, mode="hybrid")
        assert {document.id for document in hybrid} >= {"dog", "bus"}
    finally:
        store.drop()
        store.close()


@pytest.mark.asyncio
async def test_the_coroutines_await_the_async_client_never_the_sync_one(
    notes: CrisscrossVectorStore, collection_name: str
) -> None:
    url = notes.client.base_url
    sync = Client(url)
    async with AsyncClient(url) as shared:
        store = CrisscrossVectorStore(
            notes.collection, base_url=url, client=sync, async_client=shared
        )
        sync.close()  # any call of the sync client now fails
        with pytest.raises(RuntimeError):
            store.similarity_search("a dog")
        ids = await store.aadd_texts(["a hamster in a wheel"], [{"topic": "pets"}], ids=["ham"])
        assert ids == ["ham"]
        found = await store.asimilarity_search_with_score("a hamster", k=1)
        assert found[0][0].id == "ham"
        assert (await store.aget_by_ids(["ham"]))[0].page_content == "a hamster in a wheel"
        mmr = await store.amax_marginal_relevance_search("a red dog", k=2, fetch_k=6)
        assert len(mmr) == 2
        scored = await store.as_retriever(search_kwargs={"k": 2}).ainvoke("a red dog")
        assert [d.metadata["score"] > 0 for d in scored] == [True, True]
        relevant = await store.asimilarity_search_with_relevance_scores("a red dog", k=2)
        assert all(0 <= score <= 1 for _, score in relevant)
        assert await store.adelete(["ham"])
        assert await store.aget_by_ids(["ham"]) == []
    # without a shared async client each call opens (and closes) its own
    own = CrisscrossVectorStore(f"{collection_name}-own", variant=VARIANT, base_url=url)
    try:
        assert await own.aadd_texts(["a cat"], ids=["c"]) == ["c"]
        assert [d.id for d in await own.asimilarity_search("a cat", k=1)] == ["c"]
        embeddings = CrisscrossEmbeddings(VARIANT, base_url=url)
        assert await embeddings.aembed_query("a cat") == embeddings.embed_query("a cat")
    finally:
        own.drop()
        own.close()


@pytest.mark.asyncio
async def test_a_write_through_a_coroutine_is_read_back_by_the_sync_methods(
    service_url: str, collection_name: str
) -> None:
    """Each coroutine runs on an AsyncClient of the store's sync client's settings, which
    shares what it wrote: the sync search after it asks for that write (X-Min-Seq)."""
    store = CrisscrossVectorStore(collection_name, variant=VARIANT, base_url=service_url)
    try:
        await store.aadd_texts(["a hamster in a wheel"], ids=["ham"])
        seq = store.client.written_seqs[collection_name]
        assert [d.id for d in store.similarity_search("a hamster", k=1)] == ["ham"]
        last = store.client.last_response
        assert last is not None
        assert last.response is not None
        assert last.response.request.headers["x-min-seq"] == f"{collection_name}={seq}"
    finally:
        store.drop()
        store.close()


@pytest.mark.asyncio
async def test_afrom_texts_and_the_retrievers_coroutine(
    service_url: str, collection_name: str
) -> None:
    store = await CrisscrossVectorStore.afrom_texts(
        ["a dog", "a cat"], collection=collection_name, variant=VARIANT, base_url=service_url
    )
    try:
        assert [d.page_content for d in await store.asimilarity_search("a dog", k=1)] == ["a dog"]
    finally:
        store.drop()
        store.close()
    retriever = CrisscrossRetriever(collection="captions", base_url=service_url, k=2, mode="hybrid")
    documents = await retriever.ainvoke("a dog on a couch")
    assert len(documents) == 2
    assert all(isinstance(document.metadata["score"], float) for document in documents)


def test_the_retriever_takes_levers_as_fields_and_per_call(service_url: str) -> None:
    retriever = CrisscrossRetriever(collection="captions", base_url=service_url, k=3)
    dense = retriever.invoke("a dog sleeping")
    assert all("score" in document.metadata for document in dense)
    lexical = retriever.invoke("surfboard", mode="lexical")
    assert lexical
    assert all("surfboard" in document.page_content for document in lexical)
    assert retriever.invoke("surfboard", mode="lexical", offset=1)[0].id == lexical[1].id
    unscored = CrisscrossRetriever(collection="captions", base_url=service_url, score_key=None)
    assert "score" not in unscored.invoke("a dog")[0].metadata
    with pytest.raises(TypeError, match="'bogus'"):
        retriever.invoke("a dog", bogus=1)
    with pytest.raises(ValueError, match="fusion"):
        CrisscrossRetriever(collection="captions", fusion={"method": "rrf"})


def test_reprs_say_what_a_store_is_without_its_key(
    notes: CrisscrossVectorStore, service_url: str
) -> None:
    assert repr(notes) == (
        f"CrisscrossVectorStore(collection={notes.collection!r}, variant={VARIANT!r}, "
        f"embedding=None, fields={FIELDS!r}, base_url={service_url!r})"
    )
    assert repr(CrisscrossEmbeddings(VARIANT, base_url=service_url)) == (
        f"CrisscrossEmbeddings(variant={VARIANT!r}, base_url={service_url!r})"
    )
    retriever = CrisscrossRetriever(collection="captions", api_key="secret-key")
    assert "secret-key" not in repr(retriever)
    assert isinstance(notes.as_retriever(), CrisscrossVectorStoreRetriever)


def test_documents_round_trip_with_falsy_metadata(notes: CrisscrossVectorStore) -> None:
    notes.add_documents([Document(id="zero", page_content="zero stars", metadata={"stars": 0})])
    (found,) = notes.similarity_search("zero stars", k=1, filter={"stars": 0})
    assert found.id == "zero"
    assert found.metadata == {"stars": 0}

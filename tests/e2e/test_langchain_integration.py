"""LangChain's own standard tests (langchain-tests 1.1.9, langchain-core 1.8.3) against a real
service: uvicorn, the exported MiniLM, its captions bundle, live collections on. Every standard
test runs (the async ones under pytest-asyncio), none is marked as an expected failure; then
what the standard suites do not cover: server-side embedding, filters, the retriever."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    EmbeddingsIntegrationTests,
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from crisscross_client.integrations.langchain import (
    CrisscrossEmbeddings,
    CrisscrossRetriever,
    CrisscrossVectorStore,
)
from tests.e2e.conftest import LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MINILM = "minilm-l6-v2"
T = TypeVar("T")


def run_async_tests(cls: type[T]) -> type[T]:
    """Mark the suite's coroutine tests for pytest-asyncio (strict mode runs only marked ones;
    langchain-tests leaves them unmarked, for its own auto mode)."""
    for name in dir(cls):
        test = getattr(cls, name)
        if name.startswith("test_") and inspect.iscoroutinefunction(test):
            pytest.mark.asyncio(test)
    return cls


@pytest.fixture(scope="module")
def service(
    served_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveService]:
    variants_root, bundles_root = served_roots
    root = tmp_path_factory.mktemp("langchain")
    env = {
        "CRISSCROSS_DEFAULT_VARIANT": MINILM,
        "CRISSCROSS_COLLECTIONS_DIR": str(root / "collections"),
    }
    live = start_service(variants_root, bundles_root, root / "service.log", env)
    yield live
    assert stop_service(live) == 0, live.log()


def fresh_name() -> str:
    return f"lc-{uuid.uuid4().hex[:12]}"


@run_async_tests
class TestCrisscrossEmbeddings(EmbeddingsIntegrationTests):
    url = ""

    @pytest.fixture(autouse=True)
    def _url(self, service: LiveService) -> None:
        type(self).url = service.url

    @property
    def embeddings_class(self) -> type[Embeddings]:
        return CrisscrossEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"variant": MINILM, "base_url": self.url}


@run_async_tests
class TestCrisscrossVectorStore(VectorStoreIntegrationTests):
    """An empty live collection per test (the suite's fake 6-dimensional embeddings, vectors
    sent by the client), dropped afterwards."""

    @pytest.fixture
    def vectorstore(self, service: LiveService) -> Iterator[VectorStore]:  # type: ignore[override]
        store = CrisscrossVectorStore(fresh_name(), self.get_embeddings(), base_url=service.url)
        try:
            yield store
        finally:
            store.drop()
            store.close()


@run_async_tests
class TestCrisscrossRetriever(RetrieversIntegrationTests):
    """The retriever over the served captions bundle (text embedded by the service)."""

    url = ""

    @pytest.fixture(autouse=True)
    def _url(self, service: LiveService) -> None:
        type(self).url = service.url

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return CrisscrossRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"collection": "captions", "base_url": self.url}

    @property
    def retriever_query_example(self) -> str:
        return "a dog on a couch"


def test_the_service_embeds_where_no_embeddings_are_given(service: LiveService) -> None:
    store = CrisscrossVectorStore(
        fresh_name(), variant=MINILM, fields={"topic": "string"}, base_url=service.url
    )
    try:
        ids = store.add_texts(
            ["a dog asleep on the sofa", "a red bus in London", "a cat chasing a mouse"],
            [{"topic": "pets"}, {"topic": "travel", "stars": 4}, {"topic": "pets"}],
            ids=["dog", "bus", "cat"],
        )
        assert ids == ["dog", "bus", "cat"]
        best = store.similarity_search("a sleeping puppy", k=1)
        assert best == [
            Document(id="dog", page_content="a dog asleep on the sofa", metadata={"topic": "pets"})
        ]
        scored = store.similarity_search_with_score("a double decker", k=3)
        assert scored[0][0].id == "bus"
        assert scored[0][1] > scored[1][1]
        pets = store.similarity_search("a double decker", k=3, filter={"topic": "pets"})
        assert {document.id for document in pets} == {"dog", "cat"}
        not_pets = store.similarity_search("x", k=3, filter={"topic": {"$ne": "pets"}})
        assert [document.id for document in not_pets] == ["bus"]
        retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"topic": "pets"}})
        assert {document.id for document in retriever.invoke("a kitten")} == {"dog", "cat"}
        # The same ids as the service's own search with the mapped filter.
        answer = httpx.post(
            f"{service.url}/v1/search",
            json={
                "query": {"text": "a kitten"},
                "collection": store.collection,
                "k": 2,
                "filter": {"field": "topic", "eq": "pets"},
            },
            timeout=30.0,
        ).json()
        assert [hit["id"] for hit in answer["results"]] == [
            document.id for document in retriever.invoke("a kitten")
        ]
    finally:
        store.drop()
        store.close()


def test_a_filter_on_an_undeclared_field_is_the_services_409(service: LiveService) -> None:
    from crisscross_client import ConflictError

    store = CrisscrossVectorStore(fresh_name(), variant=MINILM, base_url=service.url)
    try:
        store.add_texts(["a dog"], [{"topic": "pets"}])
        with pytest.raises(ConflictError, match="topic"):
            store.similarity_search("a dog", k=1, filter={"topic": "pets"})
    finally:
        store.drop()
        store.close()


def test_the_retriever_takes_filters_on_bundle_metadata(service: LiveService) -> None:
    retriever = CrisscrossRetriever(collection="captions", base_url=service.url, k=5)
    documents = retriever.invoke("a dog on a couch")
    assert len(documents) == 5
    assert all(document.page_content for document in documents)
    image_id = documents[0].metadata["image_id"]
    same_image = retriever.invoke("a dog on a couch", filter={"image_id": image_id})
    assert {document.metadata["image_id"] for document in same_image} == {image_id}

"""LangChain: :class:`CrisscrossEmbeddings`, :class:`CrisscrossVectorStore` (its
``as_retriever()`` is a :class:`CrisscrossVectorStoreRetriever`) and
:class:`CrisscrossRetriever` over any served collection.

Needs ``crisscross-client[langchain]`` (langchain-core). Each passes LangChain's standard tests
(langchain-tests 1.1.9: ``EmbeddingsIntegrationTests``, ``VectorStoreIntegrationTests``,
``RetrieversIntegrationTests``) against a live service: tests/clients/integrations/ and
tests/e2e/test_langchain_integration.py.

Searches take the service's levers as keyword arguments (``mode="dense"|"lexical"|"hybrid"``,
``lexical``, ``fusion``, ``window``, ``rerank``, ``search_params``, ``offset``, ``exclude``,
``score_threshold``: :mod:`crisscross_client.integrations.search_options`), also through
``as_retriever(search_kwargs=...)``; an unknown one is a :class:`TypeError` naming it. Maximal
marginal relevance (``max_marginal_relevance_search``, ``k``, ``fetch_k``, ``lambda_mult``)
re-ranks a search's ``fetch_k`` candidates by their stored vectors
(:mod:`crisscross_client.integrations.mmr`, LangChain's own selection). The coroutine methods
await an :class:`~crisscross_client.AsyncClient` (``async_client=``, else one per call), never
the sync client. A retriever's documents carry their score in ``metadata["score"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, model_validator

from crisscross_client.async_client import AsyncClient
from crisscross_client.client import Client
from crisscross_client.integrations._connection import (
    async_twin,
    new_async_client,
    new_client,
)
from crisscross_client.integrations.filters import from_langchain
from crisscross_client.integrations.langchain_retriever import CrisscrossVectorStoreRetriever
from crisscross_client.integrations.langchain_store import CrisscrossVectorStore, document_of
from crisscross_client.integrations.search_options import (
    LEVERS,
    SearchOptions,
    refuse_unknown,
    search_options,
)
from crisscross_client.models import SearchResult


class CrisscrossEmbeddings(Embeddings):
    """Embeddings from a served variant's text tower (``POST /v1/embed``)."""

    def __init__(
        self,
        variant: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
    ) -> None:
        """``variant``: the served variant (the service's default when None); ``client``: a
        client to share (else one of ``base_url`` and ``api_key``); ``async_client``: one to
        share for the coroutine methods (else one per call)."""
        self.variant = variant
        self._shared = client
        self._shared_async = async_client
        self._base_url, self._api_key = base_url, api_key

    def __repr__(self) -> str:
        return f"CrisscrossEmbeddings(variant={self.variant!r}, base_url={self._url()!r})"

    def _url(self) -> str | None:
        return self._shared.base_url if self._shared is not None else self._base_url

    def _with_client(self) -> AbstractContextManager[Client]:
        """The shared client (left open), else a client of this call (closed after it)."""
        if self._shared is not None:
            return nullcontext(self._shared)
        return new_client(self._base_url, self._api_key)

    def _with_async_client(self) -> AbstractAsyncContextManager[AsyncClient]:
        """The shared async client, else one of this call (closed after it)."""
        if self._shared_async is not None:
            return nullcontext(self._shared_async)
        if self._shared is not None:
            return async_twin(self._shared)
        return new_async_client(self._base_url, self._api_key)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One embedding per text, in order (long lists cut by the service's limits)."""
        if not texts:
            return []
        with self._with_client() as client:
            return client.embed_texts(texts, variant=self.variant).embeddings

    def embed_query(self, text: str) -> list[float]:
        """The embedding of one query text."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents`, awaited (an ``AsyncClient``)."""
        if not texts:
            return []
        async with self._with_async_client() as client:
            return (await client.embed_texts(texts, variant=self.variant)).embeddings

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query`, awaited."""
        return (await self.aembed_documents([text]))[0]


class CrisscrossRetriever(BaseRetriever):
    """A retriever over any served collection (a bundle's or a live one): the ``k`` nearest
    items to the query text, embedded by the service; ``filter`` in LangChain's dict form or
    Crisscross's own. A document's text is its item's stored text (``text_field`` of the
    metadata for bundle items, the stored document for the vector store's items), its score
    in ``metadata[score_key]`` (None: none).

    The service's levers are fields (``mode``, ``lexical``, ``fusion``, ``window``,
    ``rerank``, ``search_params``, ``offset``, ``exclude``, ``score_threshold``:
    :mod:`crisscross_client.integrations.search_options`), and ``invoke(query, ...)`` takes
    ``k``, ``filter`` and any of them for one call; another name is a :class:`TypeError`.
    ``ainvoke`` awaits an :class:`~crisscross_client.AsyncClient` (one per call)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    collection: str
    k: int = 4
    filter: dict[str, Any] | None = None
    variant: str | None = None
    text_field: str = "text"
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    score_key: str | None = "score"
    mode: str = "dense"
    lexical: dict[str, Any] | None = None
    fusion: dict[str, Any] | None = None
    window: int | None = None
    rerank: dict[str, Any] | None = None
    search_params: dict[str, Any] | None = None
    offset: int | None = None
    exclude: list[str] | None = None
    score_threshold: float | None = None

    @model_validator(mode="after")
    def _valid_levers(self) -> CrisscrossRetriever:
        self._options({})
        return self

    def _options(self, kwargs: Mapping[str, Any]) -> SearchOptions:
        """This call's levers: ``kwargs`` over the fields."""
        fields = {name: getattr(self, name) for name in LEVERS}
        levers = {name: value for name, value in kwargs.items() if name not in ("k", "filter")}
        refuse_unknown(kwargs, ("k", "filter", *LEVERS), "CrisscrossRetriever.invoke")
        return search_options({**fields, **levers}, "CrisscrossRetriever")

    def _filter(self, given: dict[str, Any] | None) -> dict[str, Any] | None:
        if not given:
            return None
        if "field" in given or {"and", "or", "not"} & set(given):
            return given
        return from_langchain(given)

    def _search_arguments(self, query: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        options = self._options(kwargs)
        return {
            "collection": self.collection,
            "k": int(kwargs.get("k", self.k)),
            "filter": self._filter(kwargs.get("filter", self.filter)),
            "variant": self.variant,
            **options.search_arguments(query, None),
        }

    def _documents(self, hits: list[SearchResult], kwargs: Mapping[str, Any]) -> list[Document]:
        documents = []
        for hit, score in self._options(kwargs).kept([(hit, hit.score) for hit in hits]):
            metadata = dict(hit.metadata or {})
            if "metadata_json" in metadata:
                document = document_of(hit, hit.id)
            else:
                text = metadata.pop(self.text_field, "")
                document = Document(page_content=str(text), metadata=metadata, id=hit.id)
            if self.score_key is not None:
                document.metadata[self.score_key] = score
            documents.append(document)
        return documents

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002
        **kwargs: Any,
    ) -> list[Document]:
        arguments = self._search_arguments(query, kwargs)
        with new_client(self.base_url, self.api_key) as client:
            answer = client.search(**arguments)
        return self._documents(answer.results, kwargs)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002
        **kwargs: Any,
    ) -> list[Document]:
        arguments = self._search_arguments(query, kwargs)
        async with new_async_client(self.base_url, self.api_key) as client:
            answer = await client.search(**arguments)
        return self._documents(answer.results, kwargs)


__all__ = [
    "CrisscrossEmbeddings",
    "CrisscrossRetriever",
    "CrisscrossVectorStore",
    "CrisscrossVectorStoreRetriever",
]

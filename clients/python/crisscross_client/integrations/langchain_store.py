"""LangChain's vector store over a live collection of the service, and its retriever
(re-exported by :mod:`crisscross_client.integrations.langchain`, which documents both)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import VectorStore

from crisscross_client.async_client import AsyncClient
from crisscross_client.client import Client
from crisscross_client.integrations._connection import (
    async_client_for,
)
from crisscross_client.integrations.collection_schema import (
    StoreSchema,
    declared_fields,
    open_collection,
)
from crisscross_client.integrations.filters import from_langchain
from crisscross_client.integrations.langchain_retriever import CrisscrossVectorStoreRetriever
from crisscross_client.integrations.mmr import maximal_marginal_relevance
from crisscross_client.integrations.search_options import (
    SearchOptions,
    refuse_unknown,
    relevance_function,
    search_options,
)
from crisscross_client.integrations.stored_documents import (
    RESERVED_FIELDS,
    TEXT_FIELD,
    collection_fields,
    restored,
    stored_metadata,
)
from crisscross_client.models import FieldType, SearchResult, StoredItem


def document_of(result: SearchResult | Any, item_id: str) -> Document:
    text, metadata = restored(getattr(result, "metadata", None))
    return Document(page_content=text, metadata=metadata, id=item_id)


class CrisscrossVectorStore(VectorStore):
    """A LangChain vector store over a live Crisscross collection.

    With ``embedding`` (any LangChain ``Embeddings``) the store embeds on the client and keeps
    vectors of that dimension (a ``dim`` collection, or ``variant``'s collection where one is
    named: then the embedding must be that variant's, e.g. ``CrisscrossEmbeddings(variant)``);
    without one, the collection's ``variant`` embeds texts and queries on the service.
    Documents keep their text and metadata exactly
    (:mod:`crisscross_client.integrations.stored_documents`); ``fields`` (name → Crisscross
    type) declares the metadata keys filters may test (None: the existing collection's).
    Adding by an existing id replaces the document; deleting ids that do not exist is not an
    error. Every write is durable when it returns (the service fsyncs before it answers).
    """

    def __init__(
        self,
        collection: str,
        embedding: Embeddings | None = None,
        *,
        variant: str | None = None,
        fields: Mapping[str, FieldType] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Client | None = None,
        create: bool = True,
        async_client: AsyncClient | None = None,
    ) -> None:
        """Open ``collection``: create it when missing and ``create`` (needs an admin key
        where keys are on; embedded by ``variant``, else of the ``embedding``'s dimension,
        measured on one text), else check it
        (:class:`~crisscross_client.integrations.collection_schema.CollectionMismatchError`
        naming each difference of variant or fields; a missing collection without ``create``
        is :class:`~crisscross_client.NotFoundError`). ``async_client``: shared by the
        coroutine methods (else one per call)."""
        self.collection = collection
        self._embedding = embedding
        self.variant = variant
        self._owns_client = client is None
        self._client = client or Client(base_url, api_key=api_key)
        self._async_client = async_client
        self.fields: dict[str, FieldType] = dict(fields or {})
        self._open(None if fields is None else self.fields, create)

    def _open(self, fields: Mapping[str, FieldType] | None, create: bool) -> None:
        embedding = self._embedding

        def dim() -> int | None:
            return None if embedding is None else len(embedding.embed_query("dimension probe"))

        collection_fields(fields or {})  # refuses the integration's own names
        schema = StoreSchema(
            variant=self.variant,
            client_vectors=self.variant is None and embedding is not None,
            dim=None,
            fields=fields,
            own_fields=dict.fromkeys(sorted(RESERVED_FIELDS), "string"),
        )
        info = open_collection(self._client, self.collection, schema, dim, create=create)
        self.fields = declared_fields(info, schema) if fields is None else dict(fields)
        if embedding is None:
            self.variant = info.variant

    def __repr__(self) -> str:
        embedding = None if self._embedding is None else type(self._embedding).__name__
        return (
            f"CrisscrossVectorStore(collection={self.collection!r}, variant={self.variant!r}, "
            f"embedding={embedding}, fields={self.fields!r}, base_url={self._client.base_url!r})"
        )

    def _aclient(self) -> AbstractAsyncContextManager[AsyncClient]:
        return async_client_for(self._client, self._async_client)

    @property
    def embeddings(self) -> Embeddings | None:
        """The client-side embeddings, or None where the service embeds."""
        return self._embedding

    @property
    def client(self) -> Client:
        """The Crisscross client the store calls."""
        return self._client

    def drop(self) -> None:
        """Drop the collection and every document in it (admin key)."""
        self._client.delete_collection(self.collection)

    def close(self) -> None:
        """Close the store's connections (a client it was given is left to its owner)."""
        if self._owns_client:
            self._client.close()

    # -- writes ------------------------------------------------------------------------------

    def _items(
        self,
        texts: list[str],
        metadatas: list[dict[Any, Any]] | None,
        ids: list[str] | None,
        kwargs: Mapping[str, Any],
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """The ids (new ones random UUIDs) and the items, without vectors yet."""
        refuse_unknown(kwargs, (), "CrisscrossVectorStore.add_texts")
        metadatas = metadatas or [{} for _ in texts]
        given = list(ids) if ids is not None else [None] * len(texts)
        if not (len(metadatas) == len(given) == len(texts)):
            raise ValueError("texts, metadatas and ids must have the same length")
        item_ids = [item_id or str(uuid.uuid4()) for item_id in given]
        items = [
            {"id": item_id, "metadata": stored_metadata(text, metadata, self.fields)}
            for text, metadata, item_id in zip(texts, metadatas, item_ids, strict=True)
        ]
        return item_ids, items

    @staticmethod
    def _with_inputs(
        items: list[dict[str, Any]], texts: list[str], vectors: list[list[float]] | None
    ) -> list[dict[str, Any]]:
        """The items with their vectors (client embeddings), else their texts."""
        for index, item in enumerate(items):
            if vectors is not None:
                item["vector"] = vectors[index]
            else:
                item["text"] = texts[index]
        return items

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Add or replace documents by id (new ids are random UUIDs); returns the ids."""
        texts = list(texts)
        item_ids, items = self._items(texts, metadatas, ids, kwargs)
        if not texts:
            return []
        vectors = self._embedding.embed_documents(texts) if self._embedding is not None else None
        self._client.upsert(self.collection, self._with_inputs(items, texts, vectors))
        return item_ids

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """:meth:`add_texts`, awaited (the embedding's ``aembed_documents``, an
        ``AsyncClient``)."""
        texts = list(texts)
        item_ids, items = self._items(texts, metadatas, ids, kwargs)
        if not texts:
            return []
        vectors = None
        if self._embedding is not None:
            vectors = await self._embedding.aembed_documents(texts)
        async with self._aclient() as client:
            await client.upsert(self.collection, self._with_inputs(items, texts, vectors))
        return item_ids

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add or replace ``documents`` (their ``id``, or ``ids=``, else a random UUID)."""
        ids = kwargs.pop("ids", None)
        if ids is None:
            ids = [document.id for document in documents]
        return self.add_texts(
            [document.page_content for document in documents],
            [dict(document.metadata) for document in documents],
            ids=list(ids),
            **kwargs,
        )

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete documents by id (missing ids are no error); without ids, nothing."""
        refuse_unknown(kwargs, (), "CrisscrossVectorStore.delete")
        if not ids:
            return None
        self._client.delete_items(self.collection, ids=list(ids))
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """:meth:`delete`, awaited."""
        refuse_unknown(kwargs, (), "CrisscrossVectorStore.adelete")
        if not ids:
            return None
        async with self._aclient() as client:
            await client.delete_items(self.collection, ids=list(ids))
        return True

    # -- reads -------------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents of ``ids`` that exist, in the order asked."""
        if not ids:
            return []
        found = self._client.get_items(self.collection, list(ids)).items
        return [document_of(item, item.id) for item in found]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """:meth:`get_by_ids`, awaited."""
        if not ids:
            return []
        async with self._aclient() as client:
            found = (await client.get_items(self.collection, list(ids))).items
        return [document_of(item, item.id) for item in found]

    def _search_arguments(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        filter: Mapping[str, Any] | None,
        options: SearchOptions,
    ) -> dict[str, Any]:
        """``Client.search``'s arguments: a vector where there is one, else the text (the
        keyword leg reads the stored ``page_content``)."""
        return {
            "collection": self.collection,
            "k": k,
            "filter": from_langchain(filter) if filter else None,
            **options.search_arguments(query, vector, text_field=TEXT_FIELD),
        }

    def _client_embedding(
        self, query: str | None, vector: Sequence[float] | None, options: SearchOptions
    ) -> Embeddings | None:
        """The embedding that embeds ``query`` here: the client's, unless a vector is given,
        there is no query text or a keyword search needs no vector."""
        if vector is not None or query is None or options.mode == "lexical":
            return None
        return self._embedding

    def _search(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        filter: Mapping[str, Any] | None,
        options: SearchOptions,
    ) -> list[tuple[Document, float]]:
        embedding = self._client_embedding(query, vector, options)
        if embedding is not None and query is not None:
            vector = embedding.embed_query(query)
        answer = self._client.search(**self._search_arguments(query, vector, k, filter, options))
        return options.kept([(document_of(hit, hit.id), hit.score) for hit in answer.results])

    async def _asearch(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        filter: Mapping[str, Any] | None,
        options: SearchOptions,
    ) -> list[tuple[Document, float]]:
        embedding = self._client_embedding(query, vector, options)
        if embedding is not None and query is not None:
            vector = await embedding.aembed_query(query)
        arguments = self._search_arguments(query, vector, k, filter, options)
        async with self._aclient() as client:
            answer = await client.search(**arguments)
        return options.kept([(document_of(hit, hit.id), hit.score) for hit in answer.results])

    def similarity_search(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The ``k`` documents nearest ``query``, best first (``filter``: a LangChain dict
        filter over the declared fields; ``kwargs``: the service's levers, see the module)."""
        options = search_options(kwargs, "CrisscrossVectorStore.similarity_search")
        return [document for document, _ in self._search(query, None, k, filter, options)]

    async def asimilarity_search(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`similarity_search`, awaited."""
        options = search_options(kwargs, "CrisscrossVectorStore.asimilarity_search")
        return [document for document, _ in await self._asearch(query, None, k, filter, options)]

    def similarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """As :meth:`similarity_search`, each with the service's score (a cosine similarity
        in dense mode)."""
        options = search_options(kwargs, "CrisscrossVectorStore.similarity_search_with_score")
        return self._search(query, None, k, filter, options)

    async def asimilarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """:meth:`similarity_search_with_score`, awaited."""
        options = search_options(kwargs, "CrisscrossVectorStore.asimilarity_search_with_score")
        return await self._asearch(query, None, k, filter, options)

    def similarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The ``k`` documents nearest a vector of the collection's dimension."""
        options = search_options(kwargs, "CrisscrossVectorStore.similarity_search_by_vector")
        return [document for document, _ in self._search(None, embedding, k, filter, options)]

    async def asimilarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`similarity_search_by_vector`, awaited."""
        options = search_options(kwargs, "CrisscrossVectorStore.asimilarity_search_by_vector")
        found = await self._asearch(None, embedding, k, filter, options)
        return [document for document, _ in found]

    # -- relevance scores: LangChain's similarity_search_with_relevance_scores and the
    # "similarity_score_threshold" retriever (which apply score_threshold to them) -------------

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # A dense search's cosine similarity in [-1, 1] → relevance in [0, 1].
        return relevance_function(SearchOptions())

    @staticmethod
    def _relevance(kwargs: Mapping[str, Any], where: str) -> Callable[[float], float]:
        levers = {name: value for name, value in kwargs.items() if name != "filter"}
        return relevance_function(search_options(levers, where))

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        relevance = self._relevance(kwargs, "similarity_search_with_relevance_scores")
        found = self.similarity_search_with_score(query, k, **kwargs)
        return [(document, relevance(score)) for document, score in found]

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        relevance = self._relevance(kwargs, "asimilarity_search_with_relevance_scores")
        found = await self.asimilarity_search_with_score(query, k, **kwargs)
        return [(document, relevance(score)) for document, score in found]

    # -- maximal marginal relevance ----------------------------------------------------------

    def _query_vector(self, query: str) -> list[float]:
        """``query`` embedded as the collection's vectors are: by the client's embedding, else
        by the collection's variant (``POST /v1/embed``)."""
        if self._embedding is not None:
            return self._embedding.embed_query(query)
        return self._client.embed_texts([query], variant=self.variant).embeddings[0]

    async def _aquery_vector(self, query: str, client: AsyncClient) -> list[float]:
        if self._embedding is not None:
            return await self._embedding.aembed_query(query)
        return (await client.embed_texts([query], variant=self.variant)).embeddings[0]

    def _mmr(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        fetch_k: int,
        lambda_mult: float,
        filter: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> list[tuple[Document, float]]:
        """The MMR choice of ``k`` among the best ``fetch_k`` candidates, each with its
        search score."""
        options = _mmr_options(k, fetch_k, lambda_mult, kwargs)
        if vector is None:
            vector = self._query_vector(query or "")
        arguments = self._search_arguments(query, vector, fetch_k, filter, options)
        hits = options.kept([(hit, hit.score) for hit in self._client.search(**arguments).results])
        if not hits:
            return []
        ids = [hit.id for hit, _ in hits]
        stored = self._client.get_items(self.collection, ids, include_vectors=True).items
        return _mmr_choice(vector, hits, stored, k, lambda_mult)

    async def _ammr(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        fetch_k: int,
        lambda_mult: float,
        filter: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> list[tuple[Document, float]]:
        options = _mmr_options(k, fetch_k, lambda_mult, kwargs)
        async with self._aclient() as client:
            if vector is None:
                vector = await self._aquery_vector(query or "", client)
            arguments = self._search_arguments(query, vector, fetch_k, filter, options)
            answer = await client.search(**arguments)
            hits = options.kept([(hit, hit.score) for hit in answer.results])
            if not hits:
                return []
            ids = [hit.id for hit, _ in hits]
            stored = (await client.get_items(self.collection, ids, include_vectors=True)).items
        return _mmr_choice(vector, hits, stored, k, lambda_mult)

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents chosen by maximal marginal relevance among the ``fetch_k`` nearest
        ``query`` (``lambda_mult``: 1 relevance alone, 0 diversity alone), by their stored
        vectors; ``filter`` and the levers shape the candidates' search."""
        found = self._mmr(query, None, k, fetch_k, lambda_mult, filter, kwargs)
        return [document for document, _ in found]

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`max_marginal_relevance_search`, awaited."""
        found = await self._ammr(query, None, k, fetch_k, lambda_mult, filter, kwargs)
        return [document for document, _ in found]

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """As :meth:`max_marginal_relevance_search`, for a query vector."""
        found = self._mmr(None, embedding, k, fetch_k, lambda_mult, filter, kwargs)
        return [document for document, _ in found]

    async def amax_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`max_marginal_relevance_search_by_vector`, awaited."""
        found = await self._ammr(None, embedding, k, fetch_k, lambda_mult, filter, kwargs)
        return [document for document, _ in found]

    # -- constructors and retrievers ---------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        collection: str = "langchain",
        **kwargs: Any,
    ) -> CrisscrossVectorStore:
        """A store over ``collection`` (created when missing) holding ``texts``."""
        store = cls(collection, embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        collection: str = "langchain",
        **kwargs: Any,
    ) -> CrisscrossVectorStore:
        """:meth:`from_texts`, awaited: the store opened in a worker thread (it checks or
        creates the collection with its sync client), the texts added with ``aadd_texts``."""
        store: CrisscrossVectorStore = await run_in_executor(
            None, lambda: cls(collection, embedding, **kwargs)
        )
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store

    def as_retriever(self, **kwargs: Any) -> CrisscrossVectorStoreRetriever:
        """A retriever over the store (``search_type``: ``similarity``, ``mmr`` or
        ``similarity_score_threshold``; ``search_kwargs``: ``k``, ``filter``, the levers, and
        ``fetch_k``/``lambda_mult`` for MMR, checked now); each document's score in
        ``metadata[score_key]`` (``"score"``; None: no score)."""
        tags = kwargs.pop("tags", None) or [*self._get_retriever_tags()]
        return CrisscrossVectorStoreRetriever(vectorstore=self, tags=tags, **kwargs)


def _mmr_options(
    k: int, fetch_k: int, lambda_mult: float, kwargs: Mapping[str, Any]
) -> SearchOptions:
    if fetch_k < k:
        raise ValueError(f"fetch_k {fetch_k} is below k {k}")
    if not 0.0 <= lambda_mult <= 1.0:
        raise ValueError(f"lambda_mult {lambda_mult!r} is not in [0, 1]")
    return search_options(kwargs, "CrisscrossVectorStore.max_marginal_relevance_search")


def _mmr_choice(
    vector: Sequence[float],
    hits: Sequence[tuple[SearchResult, float]],
    stored: Sequence[StoredItem],
    k: int,
    lambda_mult: float,
) -> list[tuple[Document, float]]:
    """The MMR choice among ``hits`` by their ``stored`` vectors (a hit deleted since the
    search drops out), each document with its search score."""
    vectors = {item.id: item.vector for item in stored if item.vector is not None}
    candidates = [(hit, score) for hit, score in hits if hit.id in vectors]
    chosen = maximal_marginal_relevance(
        vector, [vectors[hit.id] or [] for hit, _ in candidates], lambda_mult, k
    )
    return [(document_of(candidates[i][0], candidates[i][0].id), candidates[i][1]) for i in chosen]

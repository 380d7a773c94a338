"""LangChain: :class:`CrisscrossEmbeddings`, :class:`CrisscrossVectorStore` (its
``as_retriever()`` is a retriever) and :class:`CrisscrossRetriever` over any served collection.

Needs ``crisscross-client[langchain]`` (langchain-core). Each passes LangChain's standard tests
(langchain-tests 1.1.9: ``EmbeddingsIntegrationTests``, ``VectorStoreIntegrationTests``,
``RetrieversIntegrationTests``) against a live service: tests/clients/integrations/.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict

from crisscross_client.client import Client
from crisscross_client.integrations.filters import from_langchain
from crisscross_client.integrations.stored_documents import (
    collection_fields,
    ensure_collection,
    restored,
    stored_metadata,
)
from crisscross_client.models import FieldType, SearchResult

DEFAULT_URL = "http://127.0.0.1:8000"


class CrisscrossEmbeddings(Embeddings):
    """Embeddings from a served variant's text tower (``POST /v1/embed``)."""

    def __init__(
        self,
        variant: str | None = None,
        *,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        client: Client | None = None,
    ) -> None:
        """``variant``: the served variant (the service's default when None); ``client``: a
        client to share (else one of ``base_url`` and ``api_key``)."""
        self.variant = variant
        self._shared = client
        self._base_url, self._api_key = base_url, api_key

    def _with_client(self) -> AbstractContextManager[Client]:
        """The shared client (left open), else a client of this call (closed after it)."""
        if self._shared is not None:
            return nullcontext(self._shared)
        return Client(self._base_url, api_key=self._api_key)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One embedding per text, in order (long lists cut by the service's limits)."""
        if not texts:
            return []
        with self._with_client() as client:
            return client.embed_texts(texts, variant=self.variant).embeddings

    def embed_query(self, text: str) -> list[float]:
        """The embedding of one query text."""
        return self.embed_documents([text])[0]


def _document(result: SearchResult | Any, item_id: str) -> Document:
    text, metadata = restored(getattr(result, "metadata", None))
    return Document(page_content=text, metadata=metadata, id=item_id)


class CrisscrossVectorStore(VectorStore):
    """A LangChain vector store over a live Crisscross collection.

    With ``embedding`` (any LangChain ``Embeddings``) the store embeds on the client and keeps
    vectors of that dimension (a ``dim`` collection); without one, the collection's ``variant``
    embeds texts and queries on the service. Documents keep their text and metadata exactly
    (:mod:`crisscross_client.integrations.stored_documents`); ``fields`` (name → Crisscross
    type) declares the metadata keys filters may test. Adding by an existing id replaces the
    document; deleting ids that do not exist is not an error. Every write is durable when it
    returns (the service fsyncs before it answers).
    """

    def __init__(
        self,
        collection: str,
        embedding: Embeddings | None = None,
        *,
        variant: str | None = None,
        fields: Mapping[str, FieldType] | None = None,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        client: Client | None = None,
        create: bool = True,
    ) -> None:
        """Open ``collection``, creating it when missing and ``create`` (needs an admin key
        where keys are on; with ``embedding`` its dimension is the embedding's, measured on one
        text, else ``variant`` embeds)."""
        self.collection = collection
        self._embedding = embedding
        self.variant = variant
        self.fields = dict(fields or {})
        self._owns_client = client is None
        self._client = client or Client(base_url, api_key=api_key)
        if create:
            self._create_if_missing()

    def _create_if_missing(self) -> None:
        embedding = self._embedding

        def dim() -> int | None:
            return None if embedding is None else len(embedding.embed_query("dimension probe"))

        ensure_collection(
            self._client, self.collection, self.variant, dim, collection_fields(self.fields)
        )

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

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,  # noqa: ARG002
    ) -> list[str]:
        """Add or replace documents by id (new ids are random UUIDs); returns the ids."""
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        given = list(ids) if ids is not None else [None] * len(texts)
        if not (len(metadatas) == len(given) == len(texts)):
            raise ValueError("texts, metadatas and ids must have the same length")
        item_ids = [item_id or str(uuid.uuid4()) for item_id in given]
        if not texts:
            return []
        vectors = self._embedding.embed_documents(texts) if self._embedding is not None else None
        items: list[dict[str, Any]] = []
        for index, (text, metadata, item_id) in enumerate(
            zip(texts, metadatas, item_ids, strict=True)
        ):
            item: dict[str, Any] = {
                "id": item_id,
                "metadata": stored_metadata(text, metadata, self.fields),
            }
            if vectors is not None:
                item["vector"] = vectors[index]
            else:
                item["text"] = text
            items.append(item)
        self._client.upsert(self.collection, items)
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

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:  # noqa: ARG002
        """Delete documents by id (missing ids are no error); without ids, nothing."""
        if not ids:
            return None
        self._client.delete_items(self.collection, ids=list(ids))
        return True

    # -- reads -------------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents of ``ids`` that exist, in the order asked."""
        if not ids:
            return []
        found = self._client.get_items(self.collection, list(ids)).items
        return [_document(item, item.id) for item in found]

    def _search(
        self, query: str | None, vector: Sequence[float] | None, k: int, filter: Any
    ) -> list[tuple[Document, float]]:
        crisscross_filter = from_langchain(filter) if filter else None
        if query is not None and self._embedding is not None:
            vector, query = self._embedding.embed_query(query), None
        answer = self._client.search(
            collection=self.collection,
            text=query,
            vector=list(vector) if vector is not None else None,
            k=k,
            filter=crisscross_filter,
        )
        return [(_document(hit, hit.id), hit.score) for hit in answer.results]

    def similarity_search(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,  # noqa: ARG002
    ) -> list[Document]:
        """The ``k`` documents nearest ``query``, best first (``filter``: a LangChain dict
        filter over the declared fields)."""
        return [document for document, _ in self._search(query, None, k, filter)]

    def similarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,  # noqa: ARG002
    ) -> list[tuple[Document, float]]:
        """As :meth:`similarity_search`, each with its cosine similarity."""
        return self._search(query, None, k, filter)

    def similarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,  # noqa: ARG002
    ) -> list[Document]:
        """The ``k`` documents nearest a vector of the collection's dimension."""
        return [document for document, _ in self._search(None, embedding, k, filter)]

    def _select_relevance_score_fn(self) -> Any:
        # Cosine similarity in [-1, 1] → relevance in [0, 1].
        return lambda score: (score + 1.0) / 2.0

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


class CrisscrossRetriever(BaseRetriever):
    """A retriever over any served collection (a bundle's or a live one): the ``k`` nearest
    items to the query text, embedded by the service; ``filter`` in LangChain's dict form or
    Crisscross's own. A document's text is its item's stored text (``text_field`` of the
    metadata for bundle items, the stored document for the vector store's items)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    collection: str
    k: int = 4
    filter: dict[str, Any] | None = None
    variant: str | None = None
    text_field: str = "text"
    base_url: str = DEFAULT_URL
    api_key: str | None = None

    def _filter(self, given: dict[str, Any] | None) -> dict[str, Any] | None:
        if not given:
            return None
        if "field" in given or {"and", "or", "not"} & set(given):
            return given
        return from_langchain(given)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002
        **kwargs: Any,
    ) -> list[Document]:
        k = int(kwargs.get("k", self.k))
        with Client(self.base_url, api_key=self.api_key) as client:
            answer = client.search(
                collection=self.collection,
                text=query,
                k=k,
                filter=self._filter(kwargs.get("filter", self.filter)),
                variant=self.variant,
            )
        documents = []
        for hit in answer.results:
            metadata = dict(hit.metadata or {})
            if "metadata_json" in metadata:
                documents.append(_document(hit, hit.id))
                continue
            text = metadata.pop(self.text_field, "")
            documents.append(Document(page_content=str(text), metadata=metadata, id=hit.id))
        return documents

"""LlamaIndex: :class:`CrisscrossVectorStore` over a live Crisscross collection, and
:class:`~crisscross_client.integrations.llamaindex_embeddings.CrisscrossEmbedding` (a served
variant as LlamaIndex's ``embed_model``).

Needs ``crisscross-client[llamaindex]`` (llama-index-core 0.14). A store of ``dim`` keeps the
nodes' own embeddings, of any embed model of that dimension (LlamaIndex embeds nodes and
queries). A store of ``variant`` is over a collection that variant embeds:

- ``VectorStoreIndex`` embeds every node with its ``embed_model`` before it reaches a store (it
  has no path that skips it, and its default model is OpenAI's), so pass
  ``CrisscrossEmbedding(variant=<the store's variant>)``: one ``/v1/embed`` request per batch,
  the very vectors the variant gives the collection's items, and the store keeps them as they
  are. A node that comes without an embedding (``store.add`` called directly) is sent as text
  and embedded by the service as it is written. Each node is embedded once either way.
- ``is_embedding_query`` is False: a retriever sends the query text, embedded by the service
  in the search request itself (one request, no ``/v1/embed`` call).

Each node's text is kept for keyword search (the item's text, or a ``text`` field beside a
vector), so ``TEXT_SEARCH`` and ``HYBRID`` work on both kinds. Query modes, levers and MMR:
:mod:`crisscross_client.integrations.llamaindex_queries`. ``MetadataFilters`` become Crisscross
filters (:mod:`crisscross_client.integrations.filters`) over the declared ``fields``. The
collection is checked when the store opens
(:mod:`crisscross_client.integrations.collection_schema`). The coroutine methods
(``async_add``, ``aquery``, ``adelete``, ...) await an :class:`~crisscross_client.AsyncClient`
(``async_client=``, else one per call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
from pydantic import Field, PrivateAttr

from crisscross_client.async_client import AsyncClient
from crisscross_client.client import Client
from crisscross_client.integrations._connection import async_client_for
from crisscross_client.integrations.collection_schema import (
    StoreSchema,
    declared_fields,
    open_collection,
)
from crisscross_client.integrations.filters import from_llamaindex
from crisscross_client.integrations.llamaindex_embeddings import CrisscrossEmbedding
from crisscross_client.integrations.llamaindex_queries import QueryPlan, mmr_selection, plan_query
from crisscross_client.integrations.search_options import refuse_unknown
from crisscross_client.models import FieldType, SearchResult, StoredItem

__all__ = ["CrisscrossEmbedding", "CrisscrossVectorStore"]

NODE_FIELD = "node_json"
NODE_TYPE_FIELD = "node_type"
REF_DOC_FIELD = "ref_doc_id"
TEXT_FIELD = "text"
"""A node's text beside its vector (a keyword search's default field of a live collection);
an item written as text keeps it as the item's own text instead."""
_OWN_FIELDS: dict[str, FieldType] = {
    NODE_FIELD: "string",
    NODE_TYPE_FIELD: "string",
    REF_DOC_FIELD: "string",
    TEXT_FIELD: "string",
}


class CrisscrossVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over the live collection ``collection`` (created when
    missing and ``create``, else checked: a collection of another variant, dimension or fields
    raises :class:`~crisscross_client.integrations.collection_schema.CollectionMismatchError`):
    nodes are items (id = node id), their whole content kept as JSON, ``ref_doc_id``
    filterable (``delete(ref_doc_id)`` deletes by it), ``fields`` (name → Crisscross type) the
    metadata keys filters may test (None: the existing collection's). ``client`` and
    ``async_client`` (keywords) share clients; the store closes only what it made."""

    stores_text: bool = True
    flat_metadata: bool = False
    collection: str
    variant: str | None = None
    dim: int | None = None
    fields: dict[str, FieldType] | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    create: bool = True
    _client: Client = PrivateAttr()
    _owns_client: bool = PrivateAttr(default=True)
    _async_client: AsyncClient | None = PrivateAttr(default=None)
    _keeps_text_field: bool = PrivateAttr(default=True)

    def __init__(self, **data: Any) -> None:
        client = data.pop("client", None)
        async_client = data.pop("async_client", None)
        super().__init__(**data)
        if (self.variant is None) == (self.dim is None):
            raise ValueError("give exactly one of variant (the service embeds) or dim")
        clash = sorted(set(self.fields or {}) & set(_OWN_FIELDS))
        if clash:
            raise ValueError(f"fields {clash} are kept by the store")
        self.is_embedding_query = self.dim is not None
        self._owns_client = client is None
        self._client = client or Client(self.base_url, api_key=self.api_key)
        self._async_client = async_client
        self._open()

    def _open(self) -> None:
        schema = StoreSchema(
            variant=self.variant,
            client_vectors=self.dim is not None,
            dim=self.dim,
            fields=self.fields,
            own_fields=_OWN_FIELDS,
            optional_own=(TEXT_FIELD,),
        )
        fixed_dim = self.dim
        info = open_collection(
            self._client, self.collection, schema, lambda: fixed_dim, create=self.create
        )
        if self.fields is None:
            self.fields = declared_fields(info, schema)
        self._keeps_text_field = TEXT_FIELD in info.fields

    @classmethod
    def class_name(cls) -> str:
        return "CrisscrossVectorStore"

    @property
    def client(self) -> Client:
        """The Crisscross client the store calls."""
        return self._client

    def close(self) -> None:
        """Close the store's connections (a client it was given is left to its owner)."""
        if self._owns_client:
            self._client.close()

    # -- writes ------------------------------------------------------------------------------

    def _items(self, nodes: Sequence[BaseNode], add_kwargs: Mapping[str, Any]) -> list[Any]:
        refuse_unknown(add_kwargs, (), "CrisscrossVectorStore.add")
        return [self._item(node) for node in nodes]

    def _item(self, node: BaseNode) -> dict[str, Any]:
        """The item of ``node``: its vector where it has one (always in a ``dim`` store),
        else its text for the variant to embed."""
        saved = node_to_metadata_dict(node, remove_text=False)
        metadata: dict[str, Any] = {
            NODE_FIELD: saved["_node_content"],
            NODE_TYPE_FIELD: saved["_node_type"],
            REF_DOC_FIELD: node.ref_doc_id or "None",
        }
        for name in self.fields or {}:
            if node.metadata.get(name) is not None:
                metadata[name] = node.metadata[name]
        item: dict[str, Any] = {"id": node.node_id, "metadata": metadata}
        if self.dim is not None or node.embedding is not None:
            item["vector"] = node.get_embedding()
            if self._keeps_text_field:
                metadata[TEXT_FIELD] = node.get_content()
        else:
            item["text"] = node.get_content()
        return item

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Add or replace ``nodes`` by id; returns their ids."""
        items = self._items(nodes, add_kwargs)
        if items:
            self._client.upsert(self.collection, items)
        return [node.node_id for node in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """:meth:`add`, awaited."""
        items = self._items(nodes, add_kwargs)
        if items:
            async with async_client_for(self._client, self._async_client) as client:
                await client.upsert(self.collection, items)
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the document ``ref_doc_id``."""
        refuse_unknown(delete_kwargs, (), "CrisscrossVectorStore.delete")
        self._client.delete_items(self.collection, filter=_of_document(ref_doc_id))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """:meth:`delete`, awaited."""
        refuse_unknown(delete_kwargs, (), "CrisscrossVectorStore.adelete")
        async with async_client_for(self._client, self._async_client) as client:
            await client.delete_items(self.collection, filter=_of_document(ref_doc_id))

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes ``node_ids``, or every node ``filters`` keeps (not both)."""
        refuse_unknown(delete_kwargs, (), "CrisscrossVectorStore.delete_nodes")
        ids, crisscross_filter = _node_selection(node_ids, filters)
        self._client.delete_items(self.collection, ids=ids, filter=crisscross_filter)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """:meth:`delete_nodes`, awaited."""
        refuse_unknown(delete_kwargs, (), "CrisscrossVectorStore.adelete_nodes")
        ids, crisscross_filter = _node_selection(node_ids, filters)
        async with async_client_for(self._client, self._async_client) as client:
            await client.delete_items(self.collection, ids=ids, filter=crisscross_filter)

    def clear(self) -> None:
        """Delete every node (the collection stays)."""
        self._client.delete_items(self.collection, filter=_EVERY_NODE)

    async def aclear(self) -> None:
        """:meth:`clear`, awaited."""
        async with async_client_for(self._client, self._async_client) as client:
            await client.delete_items(self.collection, filter=_EVERY_NODE)

    # -- reads -------------------------------------------------------------------------------

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The nodes of ``node_ids`` that exist, in the order asked; with ``filters``, every
        node they keep (in write order; of those, the ones in ``node_ids`` when both are
        given), read page by page with ``POST .../items/scroll``."""
        if filters is not None:
            nodes, cursor = [], None
            while True:
                page = self._client.scroll_items(
                    self.collection, filter=_nodes_kept(filters), limit=SCROLL_PAGE, cursor=cursor
                )
                nodes += [_node_of(item.metadata or {}) for item in page.items]
                if page.next_cursor is None:
                    return _among(nodes, node_ids)
                cursor = page.next_cursor
        if not node_ids:
            return []
        found = self._client.get_items(self.collection, list(node_ids)).items
        return [_node_of(item.metadata) for item in found]

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """:meth:`get_nodes`, awaited."""
        async with async_client_for(self._client, self._async_client) as client:
            if filters is not None:
                nodes, cursor = [], None
                while True:
                    page = await client.scroll_items(
                        self.collection,
                        filter=_nodes_kept(filters),
                        limit=SCROLL_PAGE,
                        cursor=cursor,
                    )
                    nodes += [_node_of(item.metadata or {}) for item in page.items]
                    if page.next_cursor is None:
                        return _among(nodes, node_ids)
                    cursor = page.next_cursor
            if not node_ids:
                return []
            found = (await client.get_items(self.collection, list(node_ids))).items
        return [_node_of(item.metadata) for item in found]

    def _plan(self, query: VectorStoreQuery, kwargs: Mapping[str, Any]) -> QueryPlan:
        return plan_query(
            query, kwargs, service_embeds=self.dim is None, ref_doc_field=REF_DOC_FIELD
        )

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes nearest the query (its embedding, or with a variant
        its ``query_str``), best first, under ``query.filters``, in the query's mode with the
        levers of ``kwargs`` (:mod:`crisscross_client.integrations.llamaindex_queries`)."""
        plan = self._plan(query, kwargs)
        vector = plan.vector
        if plan.embed_query:
            vector = self._client.embed_texts([plan.text or ""], self.variant).embeddings[0]
        answer = self._client.search(self.collection, **plan.search_arguments(vector))
        hits = plan.options.kept([(hit, hit.score) for hit in answer.results])
        if plan.mmr is None or not hits or vector is None:
            return _result(hits)
        ids = [hit.id for hit, _ in hits]
        stored = self._client.get_items(self.collection, ids, include_vectors=True).items
        return _mmr_result(plan, vector, hits, stored)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """:meth:`query`, awaited."""
        plan = self._plan(query, kwargs)
        vector = plan.vector
        async with async_client_for(self._client, self._async_client) as client:
            if plan.embed_query:
                embedded = await client.embed_texts([plan.text or ""], self.variant)
                vector = embedded.embeddings[0]
            answer = await client.search(self.collection, **plan.search_arguments(vector))
            hits = plan.options.kept([(hit, hit.score) for hit in answer.results])
            if plan.mmr is None or not hits or vector is None:
                return _result(hits)
            ids = [hit.id for hit, _ in hits]
            stored = (await client.get_items(self.collection, ids, include_vectors=True)).items
        return _mmr_result(plan, vector, hits, stored)


_EVERY_NODE = {"field": NODE_TYPE_FIELD, "exists": True}


def _of_document(ref_doc_id: str) -> dict[str, Any]:
    return {"field": REF_DOC_FIELD, "eq": ref_doc_id}


def _node_selection(
    node_ids: list[str] | None, filters: MetadataFilters | None
) -> tuple[list[str] | None, dict[str, Any] | None]:
    if (node_ids is None) == (filters is None):
        raise ValueError("give node_ids or filters (one of them)")
    return node_ids, None if filters is None else from_llamaindex(filters)


SCROLL_PAGE = 500
"""Nodes read per ``items/scroll`` request by :meth:`CrisscrossVectorStore.get_nodes`."""


def _nodes_kept(filters: MetadataFilters) -> dict[str, Any]:
    """The service filter of the nodes ``filters`` keeps."""
    return {"and": [_EVERY_NODE, from_llamaindex(filters)]}


def _among(nodes: list[BaseNode], node_ids: list[str] | None) -> list[BaseNode]:
    """``nodes``, only those of ``node_ids`` when given."""
    if node_ids is None:
        return nodes
    wanted = set(node_ids)
    return [node for node in nodes if node.node_id in wanted]


def _node_of(stored: Mapping[str, Any]) -> BaseNode:
    return metadata_dict_to_node(
        {"_node_content": stored[NODE_FIELD], "_node_type": stored.get(NODE_TYPE_FIELD)}
    )


def _result(hits: Sequence[tuple[SearchResult, float]]) -> VectorStoreQueryResult:
    """The nodes of ``hits``, each with its score."""
    return VectorStoreQueryResult(
        nodes=[_node_of(hit.metadata or {}) for hit, _ in hits],
        similarities=[score for _, score in hits],
        ids=[hit.id for hit, _ in hits],
    )


def _mmr_result(
    plan: QueryPlan,
    vector: Sequence[float],
    hits: Sequence[tuple[SearchResult, float]],
    stored: Sequence[StoredItem],
) -> VectorStoreQueryResult:
    """LlamaIndex's MMR over the candidates ``hits`` and their ``stored`` vectors (one gone
    since the search drops out), the MMR scores as similarities."""
    assert plan.mmr is not None
    vectors = {item.id: item.vector for item in stored if item.vector is not None}
    candidates = {hit.id: hit for hit, _ in hits if hit.id in vectors}
    scores, chosen = mmr_selection(
        plan.mmr, vector, list(candidates), [vectors[item_id] for item_id in candidates]
    )
    return VectorStoreQueryResult(
        nodes=[_node_of(candidates[item_id].metadata or {}) for item_id in chosen],
        similarities=scores,
        ids=chosen,
    )

"""LlamaIndex: :class:`CrisscrossVectorStore` over a live Crisscross collection.

Needs ``crisscross-client[llamaindex]`` (llama-index-core 0.14). With ``dim`` the store keeps
the nodes' own embeddings (LlamaIndex embeds nodes and queries); with ``variant`` the service
embeds the nodes' text and the query strings (``is_embedding_query`` is then False, so a
LlamaIndex retriever sends the query text, not a vector). ``MetadataFilters`` become Crisscross
filters (:mod:`crisscross_client.integrations.filters`) over the declared ``fields``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
from pydantic import Field, PrivateAttr

from crisscross_client.client import Client
from crisscross_client.integrations.filters import from_llamaindex
from crisscross_client.integrations.stored_documents import ensure_collection
from crisscross_client.models import FieldType

NODE_FIELD = "node_json"
NODE_TYPE_FIELD = "node_type"
REF_DOC_FIELD = "ref_doc_id"
_OWN_FIELDS: dict[str, FieldType] = {
    NODE_FIELD: "string",
    NODE_TYPE_FIELD: "string",
    REF_DOC_FIELD: "string",
}


class CrisscrossVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over the live collection ``collection`` (created when
    missing): nodes are items (id = node id), their whole content kept as JSON, ``ref_doc_id``
    filterable (``delete(ref_doc_id)`` deletes by it), ``fields`` (name → Crisscross type) the
    metadata keys filters may test."""

    stores_text: bool = True
    flat_metadata: bool = False
    collection: str
    variant: str | None = None
    dim: int | None = None
    fields: dict[str, FieldType] = Field(default_factory=dict)
    base_url: str = "http://127.0.0.1:8000"
    api_key: str | None = None
    _client: Client = PrivateAttr()
    _owns_client: bool = PrivateAttr(default=True)

    def __init__(self, **data: Any) -> None:
        client = data.pop("client", None)
        super().__init__(**data)
        if (self.variant is None) == (self.dim is None):
            raise ValueError("give exactly one of variant (the service embeds) or dim")
        clash = sorted(set(self.fields) & set(_OWN_FIELDS))
        if clash:
            raise ValueError(f"fields {clash} are kept by the store")
        self.is_embedding_query = self.dim is not None
        self._owns_client = client is None
        self._client = client or Client(self.base_url, api_key=self.api_key)
        self._create_if_missing()

    def _create_if_missing(self) -> None:
        fixed_dim = self.dim
        ensure_collection(
            self._client,
            self.collection,
            self.variant,
            lambda: fixed_dim,
            {**_OWN_FIELDS, **self.fields},
        )

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

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:  # noqa: ARG002
        """Add or replace ``nodes`` by id; returns their ids."""
        items = []
        for node in nodes:
            saved = node_to_metadata_dict(node, remove_text=False)
            metadata: dict[str, Any] = {
                NODE_FIELD: saved["_node_content"],
                NODE_TYPE_FIELD: saved["_node_type"],
                REF_DOC_FIELD: node.ref_doc_id or "None",
            }
            metadata.update(
                {name: node.metadata[name] for name in self.fields if node.metadata.get(name)}
            )
            item: dict[str, Any] = {"id": node.node_id, "metadata": metadata}
            if self.dim is not None:
                item["vector"] = node.get_embedding()
            else:
                item["text"] = node.get_content()
            items.append(item)
        if items:
            self._client.upsert(self.collection, items)
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:  # noqa: ARG002
        """Delete every node of the document ``ref_doc_id``."""
        self._client.delete_items(
            self.collection, filter={"field": REF_DOC_FIELD, "eq": ref_doc_id}
        )

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:  # noqa: ARG002
        """The ``similarity_top_k`` nodes nearest the query (its embedding, or with a variant
        its ``query_str``), best first, under ``query.filters``."""
        crisscross_filter = from_llamaindex(query.filters) if query.filters else None
        if query.node_ids or query.doc_ids:
            raise ValueError("queries restricted to node_ids or doc_ids are not supported")
        if query.query_embedding is not None:
            text, vector = None, list(query.query_embedding)
        elif query.query_str is not None and self.dim is None:
            text, vector = query.query_str, None
        else:
            raise ValueError("the query needs an embedding (or a query_str where a variant embeds)")
        answer = self._client.search(
            collection=self.collection,
            text=text,
            vector=vector,
            k=query.similarity_top_k,
            filter=crisscross_filter,
        )
        nodes = [_node_of(hit.metadata or {}) for hit in answer.results]
        return VectorStoreQueryResult(
            nodes=nodes,
            similarities=[hit.score for hit in answer.results],
            ids=[hit.id for hit in answer.results],
        )


def _node_of(stored: Mapping[str, Any]) -> BaseNode:
    return metadata_dict_to_node(
        {"_node_content": stored[NODE_FIELD], "_node_type": stored.get(NODE_TYPE_FIELD)}
    )

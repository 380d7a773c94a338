"""LlamaIndex: :class:`CrisscrossEmbedding`, a served variant's text tower as a LlamaIndex
``BaseEmbedding`` (``POST /v1/embed``), for ``VectorStoreIndex(..., embed_model=...)``.

Needs ``crisscross-client[llamaindex]`` (llama-index-core 0.14). Texts and queries are embedded
alike (the service's variants have one text tower); the vectors are L2-normalised, the ones a
live collection of that variant stores. The coroutine methods (``aget_query_embedding``,
``aget_text_embedding_batch``, what ``VectorStoreIndex(use_async=True)`` and ``aquery`` call)
await an :class:`~crisscross_client.AsyncClient`.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr

from crisscross_client.async_client import AsyncClient
from crisscross_client.client import Client
from crisscross_client.integrations._connection import Connection

DEFAULT_BATCH = 256
"""Texts per ``get_text_embedding_batch`` request: LlamaIndex's batches stay small requests (the
service takes up to its ``max_embed_inputs``, 2,048 by default; longer lists are cut by the
client anyway)."""


class CrisscrossEmbedding(BaseEmbedding):
    """Embeddings of a served variant (``variant``; the service's default when None).

    Args:
        variant: the served variant (``GET /v1/variants``).
        base_url, api_key: the service (a read key suffices), when no ``client`` is given;
            ``base_url`` None: the client's default.
        client: a sync client to share (left open by :meth:`close`).
        async_client: an async client to share for the coroutine methods (else one per call).
    """

    variant: str | None = Field(default=None, description="The served variant that embeds.")
    base_url: str | None = Field(default=None, description="The service root.")
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    embed_batch_size: int = Field(default=DEFAULT_BATCH, gt=0, le=2048)
    _connection: Connection = PrivateAttr()

    def __init__(
        self,
        variant: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("model_name", variant or "default")
        kwargs.update(variant=variant, base_url=base_url, api_key=api_key)
        super().__init__(**kwargs)
        self._connection = Connection(base_url, api_key, client, async_client)

    @classmethod
    def class_name(cls) -> str:
        return "CrisscrossEmbedding"

    @property
    def client(self) -> Client:
        """The sync client the embeddings call."""
        return self._connection.client

    def close(self) -> None:
        """Close the connections made here (given clients are left to their owners)."""
        self._connection.close()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._connection.client.embed_texts(texts, variant=self.variant).embeddings

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        async with self._connection.aclient() as client:
            return (await client.embed_texts(texts, variant=self.variant)).embeddings

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await self._aget_text_embedding(query)

"""The retriever of :class:`~crisscross_client.integrations.langchain_store.
CrisscrossVectorStore` (``as_retriever``): its search kwargs checked when it is made, each
document with its score (re-exported by :mod:`crisscross_client.integrations.langchain`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStoreRetriever
from pydantic import model_validator

from crisscross_client.integrations.search_options import (
    LEVERS,
    refuse_unknown,
)

if TYPE_CHECKING:
    from crisscross_client.integrations.langchain_store import CrisscrossVectorStore

_SEARCH_KWARGS = ("k", "filter", *LEVERS)
_MMR_KWARGS = ("fetch_k", "lambda_mult")


class CrisscrossVectorStoreRetriever(VectorStoreRetriever):
    """LangChain's retriever over a :class:`CrisscrossVectorStore` (``as_retriever()``), its
    ``search_kwargs`` checked when it is made (an unknown name is a :class:`TypeError`), and
    each document's score in ``metadata[score_key]``: the service's score for ``similarity``
    and ``mmr`` (the candidate's), the relevance in [0, 1] for
    ``similarity_score_threshold``."""

    score_key: str | None = "score"

    @model_validator(mode="after")
    def _known_search_kwargs(self) -> CrisscrossVectorStoreRetriever:
        allowed: tuple[str, ...] = _SEARCH_KWARGS
        if self.search_type == "mmr":
            allowed += _MMR_KWARGS
        refuse_unknown(
            self.search_kwargs, allowed, f"as_retriever(search_type={self.search_type!r})"
        )
        return self

    def _scored(self, found: list[tuple[Document, float]]) -> list[Document]:
        if self.score_key is not None:
            for document, score in found:
                document.metadata[self.score_key] = score
        return [document for document, _ in found]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002
        **kwargs: Any,
    ) -> list[Document]:
        store = cast("CrisscrossVectorStore", self.vectorstore)
        arguments = self.search_kwargs | kwargs
        if self.search_type == "similarity":
            return self._scored(store.similarity_search_with_score(query, **arguments))
        if self.search_type == "similarity_score_threshold":
            return self._scored(store.similarity_search_with_relevance_scores(query, **arguments))
        if self.search_type == "mmr":
            return self._scored(_mmr_call(store._mmr, query, arguments))
        raise ValueError(f"search_type of {self.search_type} not allowed.")

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002
        **kwargs: Any,
    ) -> list[Document]:
        store = cast("CrisscrossVectorStore", self.vectorstore)
        arguments = self.search_kwargs | kwargs
        if self.search_type == "similarity":
            found = await store.asimilarity_search_with_score(query, **arguments)
        elif self.search_type == "similarity_score_threshold":
            found = await store.asimilarity_search_with_relevance_scores(query, **arguments)
        elif self.search_type == "mmr":
            found = await _mmr_call(store._ammr, query, arguments)
        else:
            raise ValueError(f"search_type of {self.search_type} not allowed.")
        return self._scored(found)


def _mmr_call(method: Callable[..., Any], query: str, arguments: Mapping[str, Any]) -> Any:
    """``method`` (the store's ``_mmr`` or ``_ammr``) called with a retriever's arguments."""
    levers = dict(arguments)
    return method(
        query,
        None,
        levers.pop("k", 4),
        levers.pop("fetch_k", 20),
        levers.pop("lambda_mult", 0.5),
        levers.pop("filter", None),
        levers,
    )

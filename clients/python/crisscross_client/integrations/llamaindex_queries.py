"""A LlamaIndex ``VectorStoreQuery`` (and the retriever's ``vector_store_kwargs``) as a
Crisscross search, every field honoured or refused by name.

``vector_store_query_mode``: ``DEFAULT`` is a dense search, ``HYBRID`` the service's hybrid
search (``alpha``, LlamaIndex's weight of the dense leg, is the weighted fusion's ``alpha``),
``TEXT_SEARCH`` its lexical (BM25) search, ``MMR`` maximal marginal relevance over a dense
search's candidates and their stored vectors, by LlamaIndex's own
``get_top_k_mmr_embeddings`` (``mmr_threshold``, 0.5 by default: 1 is relevance alone;
``mmr_prefetch_k`` candidates, or ``mmr_prefetch_factor`` times ``similarity_top_k``, 4 by
default). Any other mode is a :class:`NotImplementedError` naming it.

``vector_store_kwargs`` take the service's levers (``lexical``, ``fusion``, ``window``,
``rerank``, ``search_params``, ``offset``, ``exclude``, ``score_threshold``:
:mod:`crisscross_client.integrations.search_options`) and the MMR ones; any other name is a
:class:`TypeError`. ``doc_ids`` restrict the search to those documents' nodes (a filter on
``ref_doc_id``); ``node_ids``, ``output_fields``, ``embedding_field``, ``sparse_top_k`` and
``hybrid_top_k`` are refused by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from crisscross_client.integrations.filters import from_llamaindex
from crisscross_client.integrations.search_options import (
    LEVERS,
    SearchOptions,
    refuse_unknown,
    search_options,
)

MMR_KWARGS = ("mmr_threshold", "mmr_prefetch_k", "mmr_prefetch_factor")
QUERY_KWARGS = tuple(name for name in LEVERS if name != "mode") + MMR_KWARGS
"""What ``vector_store_kwargs`` take (the mode is LlamaIndex's ``vector_store_query_mode``)."""

DEFAULT_MMR_PREFETCH_FACTOR = 4.0
_MODES: dict[VectorStoreQueryMode, str] = {
    VectorStoreQueryMode.DEFAULT: "dense",
    VectorStoreQueryMode.HYBRID: "hybrid",
    VectorStoreQueryMode.TEXT_SEARCH: "lexical",
    VectorStoreQueryMode.MMR: "dense",
}
_UNSUPPORTED_FIELDS = ("output_fields", "embedding_field", "sparse_top_k", "hybrid_top_k")


@dataclass(frozen=True)
class Mmr:
    """An MMR selection: ``top_k`` of the candidates, ``threshold`` weighing relevance
    against novelty (LlamaIndex's ``mmr_threshold``)."""

    top_k: int
    threshold: float | None


@dataclass(frozen=True)
class QueryPlan:
    """A query as the service takes it: the text and vector sent (a vector where there is
    one), ``k`` hits asked (MMR's candidates), the filter and levers; ``embed_query``: the
    query text must be embedded first (MMR on a store whose service embeds)."""

    text: str | None
    vector: list[float] | None
    k: int
    filter: dict[str, Any] | None
    options: SearchOptions
    mmr: Mmr | None
    embed_query: bool = False

    def search_arguments(self, vector: Sequence[float] | None = None) -> dict[str, Any]:
        """The keyword arguments of ``Client.search`` but the collection (``vector``: the
        query's embedding, made for it)."""
        vector = vector if vector is not None else self.vector
        return {
            "k": self.k,
            "filter": self.filter,
            **self.options.search_arguments(self.text, vector),
        }


def _mode(query: VectorStoreQuery) -> str:
    mode = VectorStoreQueryMode(query.mode)
    if mode not in _MODES:
        supported = ", ".join(sorted(m.value for m in _MODES))
        raise NotImplementedError(
            f"vector_store_query_mode {mode.value!r} is not supported by the Crisscross "
            f"store; it takes {supported}"
        )
    return _MODES[mode]


def _filter(query: VectorStoreQuery, ref_doc_field: str) -> dict[str, Any] | None:
    parts = []
    if query.filters:
        parts.append(from_llamaindex(query.filters))
    if query.doc_ids:
        parts.append({"field": ref_doc_field, "in": list(query.doc_ids)})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"and": parts}


def _mmr(query: VectorStoreQuery, kwargs: Mapping[str, Any]) -> tuple[Mmr, int]:
    threshold = kwargs.get("mmr_threshold", query.mmr_threshold)
    if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
        raise ValueError(f"mmr_threshold {threshold!r} is not in [0, 1]")
    prefetch_k, factor = kwargs.get("mmr_prefetch_k"), kwargs.get("mmr_prefetch_factor")
    if prefetch_k is not None and factor is not None:
        raise ValueError("give mmr_prefetch_k or mmr_prefetch_factor, not both")
    top_k = query.similarity_top_k
    if prefetch_k is None:
        prefetch_k = math.ceil(top_k * float(factor or DEFAULT_MMR_PREFETCH_FACTOR))
    if int(prefetch_k) < top_k:
        raise ValueError(f"mmr_prefetch_k {prefetch_k} is below similarity_top_k {top_k}")
    return Mmr(top_k, None if threshold is None else float(threshold)), int(prefetch_k)


def plan_query(
    query: VectorStoreQuery,
    kwargs: Mapping[str, Any],
    *,
    service_embeds: bool,
    ref_doc_field: str,
) -> QueryPlan:
    """The :class:`QueryPlan` of ``query`` and the store's query ``kwargs``
    (``service_embeds``: the collection's variant can embed the query text)."""
    refuse_unknown(kwargs, QUERY_KWARGS, "CrisscrossVectorStore.query")
    for name in _UNSUPPORTED_FIELDS:
        if getattr(query, name, None) is not None:
            raise NotImplementedError(f"VectorStoreQuery.{name} is not supported by the store")
    if query.node_ids:
        raise NotImplementedError(
            "queries restricted to node_ids are not supported (doc_ids and filters are)"
        )
    mode = _mode(query)
    is_mmr = VectorStoreQueryMode(query.mode) == VectorStoreQueryMode.MMR
    levers = {name: value for name, value in kwargs.items() if name not in MMR_KWARGS}
    if query.alpha is not None:
        if mode != "hybrid":
            raise ValueError(f"alpha weighs a hybrid query's legs; this query's mode is {mode}")
        if "fusion" in levers:
            raise ValueError("give alpha or fusion, not both")
        levers["fusion"] = {"method": "weighted", "alpha": query.alpha}
    options = search_options({**levers, "mode": mode}, "CrisscrossVectorStore.query")
    mmr, k = None, query.similarity_top_k
    if is_mmr:
        mmr, k = _mmr(query, kwargs)
    elif query.mmr_threshold is not None or set(MMR_KWARGS) & set(kwargs):
        raise ValueError(f"MMR options need vector_store_query_mode 'mmr', not {mode!r}")
    vector = None if query.query_embedding is None else list(query.query_embedding)
    text = query.query_str
    if mode == "lexical":
        if text is None:
            raise ValueError("a text_search query needs its query_str")
        vector = None
    elif vector is None and (text is None or not service_embeds):
        raise ValueError(
            "the query needs an embedding (or a query_str where the collection's variant embeds)"
        )
    return QueryPlan(
        text=text,
        vector=vector,
        k=k,
        filter=_filter(query, ref_doc_field),
        options=options,
        mmr=mmr,
        embed_query=is_mmr and vector is None,
    )


def mmr_selection(
    mmr: Mmr,
    query_vector: Sequence[float],
    ids: Sequence[str],
    vectors: Sequence[Sequence[float]],
) -> tuple[list[float], list[str]]:
    """LlamaIndex's MMR of the candidates ``ids`` (their stored ``vectors``): the MMR scores
    and the ids chosen, in order."""
    if not ids:
        return [], []
    scores, chosen = get_top_k_mmr_embeddings(
        list(query_vector),
        [list(vector) for vector in vectors],
        similarity_top_k=mmr.top_k,
        embedding_ids=list(ids),
        mmr_threshold=mmr.threshold,
    )
    return list(scores), [str(item_id) for item_id in chosen]

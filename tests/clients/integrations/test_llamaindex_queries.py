"""LlamaIndex's query modes and options mapped onto the service's search, or refused by name."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from crisscross_client.integrations.llamaindex_queries import Mmr, mmr_selection, plan_query


def plan(query: VectorStoreQuery, service_embeds: bool = True, **kwargs: Any) -> Any:
    return plan_query(query, kwargs, service_embeds=service_embeds, ref_doc_field="ref_doc_id")


def sent(query: VectorStoreQuery, service_embeds: bool = True, **kwargs: Any) -> dict[str, Any]:
    arguments = plan(query, service_embeds, **kwargs).search_arguments()
    return {name: value for name, value in arguments.items() if value is not None}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (VectorStoreQueryMode.DEFAULT, {"text": "a dog", "k": 3}),
        (
            VectorStoreQueryMode.HYBRID,
            {"text": "a dog", "k": 3, "mode": "hybrid"},
        ),
        (
            VectorStoreQueryMode.TEXT_SEARCH,
            {"text": "a dog", "k": 3, "mode": "lexical"},
        ),
    ],
)
def test_each_mode_is_the_services(mode: VectorStoreQueryMode, expected: dict[str, Any]) -> None:
    assert sent(VectorStoreQuery(query_str="a dog", similarity_top_k=3, mode=mode)) == expected


def test_hybrid_alpha_is_the_weighted_fusion_and_a_vector_query_sends_its_keywords() -> None:
    query = VectorStoreQuery(
        query_str="a dog",
        query_embedding=[1.0, 0.0],
        similarity_top_k=2,
        mode=VectorStoreQueryMode.HYBRID,
        alpha=0.8,
    )
    assert sent(query, window=40) == {
        "vector": [1.0, 0.0],
        "k": 2,
        "mode": "hybrid",
        "lexical": {"text": "a dog"},
        "fusion": {"method": "weighted", "alpha": 0.8},
        "window": 40,
    }


def test_a_text_search_needs_no_embedding_and_sends_none() -> None:
    query = VectorStoreQuery(
        query_str="dog", query_embedding=[1.0], mode=VectorStoreQueryMode.TEXT_SEARCH
    )
    assert sent(query, service_embeds=False) == {"text": "dog", "k": 1, "mode": "lexical"}


def test_doc_ids_and_filters_are_both_kept() -> None:
    query = VectorStoreQuery(
        query_str="x",
        doc_ids=["d1", "d2"],
        filters=MetadataFilters(filters=[MetadataFilter(key="topic", value="pets")]),
    )
    assert sent(query)["filter"] == {
        "and": [{"field": "topic", "eq": "pets"}, {"field": "ref_doc_id", "in": ["d1", "d2"]}]
    }


def test_mmr_fetches_candidates_and_embeds_the_query_text_where_it_has_no_vector() -> None:
    query = VectorStoreQuery(query_str="x", similarity_top_k=3, mode=VectorStoreQueryMode.MMR)
    default = plan(query)
    assert default.k == 12
    assert default.mmr == Mmr(top_k=3, threshold=None)
    assert default.embed_query
    chosen = plan(query, mmr_threshold=0.2, mmr_prefetch_k=5)
    assert (chosen.k, chosen.mmr) == (5, Mmr(3, 0.2))
    assert plan(query, mmr_prefetch_factor=2).k == 6
    with_vector = VectorStoreQuery(
        query_embedding=[1.0], similarity_top_k=3, mode=VectorStoreQueryMode.MMR
    )
    assert not plan(with_vector, service_embeds=False).embed_query


@pytest.mark.parametrize(
    ("query", "kwargs", "error", "named"),
    [
        (
            VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.SVM),
            {},
            NotImplementedError,
            "'svm'",
        ),
        (
            VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.SEMANTIC_HYBRID),
            {},
            NotImplementedError,
            "'semantic_hybrid'",
        ),
        (
            VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.SPARSE),
            {},
            NotImplementedError,
            "'sparse'",
        ),
        (VectorStoreQuery(query_str="x"), {"bogus": 1}, TypeError, "'bogus'"),
        (VectorStoreQuery(query_str="x"), {"mode": "hybrid"}, TypeError, "'mode'"),
        (VectorStoreQuery(query_str="x", alpha=0.5), {}, ValueError, "alpha"),
        (VectorStoreQuery(query_str="x"), {"mmr_threshold": 0.5}, ValueError, "MMR"),
        (VectorStoreQuery(query_str="x", mmr_threshold=0.5), {}, ValueError, "MMR"),
        (VectorStoreQuery(query_str="x", sparse_top_k=5), {}, NotImplementedError, "sparse"),
        (VectorStoreQuery(query_str="x", hybrid_top_k=5), {}, NotImplementedError, "hybrid"),
        (
            VectorStoreQuery(query_str="x", output_fields=["a"]),
            {},
            NotImplementedError,
            "output_fields",
        ),
        (VectorStoreQuery(query_str="x", node_ids=["n1"]), {}, NotImplementedError, "node_ids"),
        (VectorStoreQuery(query_str="x"), {"fusion": {"method": "rrf"}}, ValueError, "fusion"),
        (
            VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.MMR),
            {"mmr_threshold": 2},
            ValueError,
            "mmr_threshold",
        ),
        (
            VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.MMR, similarity_top_k=4),
            {"mmr_prefetch_k": 2},
            ValueError,
            "mmr_prefetch_k",
        ),
        (
            VectorStoreQuery(query_embedding=None, query_str=None),
            {},
            ValueError,
            "embedding",
        ),
        (
            VectorStoreQuery(
                query_embedding=None, query_str=None, mode=VectorStoreQueryMode.TEXT_SEARCH
            ),
            {},
            ValueError,
            "query_str",
        ),
    ],
)
def test_what_cannot_be_honoured_is_refused_by_name(
    query: VectorStoreQuery, kwargs: dict[str, Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named):
        plan(query, **kwargs)


def test_a_store_of_client_vectors_needs_the_query_embedding() -> None:
    with pytest.raises(ValueError, match="embedding"):
        plan(VectorStoreQuery(query_str="x"), service_embeds=False)


def test_mmr_selection_is_llamaindexs_own() -> None:
    vectors = [[1.0, 0.0], [0.99, 0.14], [0.6, 0.8]]
    scores, ids = mmr_selection(Mmr(top_k=2, threshold=0.2), [1.0, 0.0], ["a", "b", "c"], vectors)
    assert ids == ["a", "c"]
    assert (scores, ids) == get_top_k_mmr_embeddings(
        [1.0, 0.0], vectors, similarity_top_k=2, embedding_ids=["a", "b", "c"], mmr_threshold=0.2
    )
    assert mmr_selection(Mmr(2, 1.0), [1.0, 0.0], ["a", "b", "c"], vectors)[1] == ["a", "b"]
    assert mmr_selection(Mmr(2, None), [1.0], [], []) == ([], [])

"""The service's levers as the integrations take them: sent as given, unknown names and
levers the mode would ignore refused, scores kept by a threshold, relevance by the mode."""

from __future__ import annotations

import pytest

from crisscross_client.integrations.search_options import (
    SearchOptions,
    cosine_relevance,
    relevance_function,
    search_options,
)


def test_a_plain_search_sends_its_query_and_nothing_else() -> None:
    arguments = search_options({}, "f").search_arguments("a dog", None)
    assert {name: value for name, value in arguments.items() if value is not None} == {
        "text": "a dog"
    }
    assert search_options({}, "f").search_arguments("a dog", [1.0, 0.0])["vector"] == [1.0, 0.0]


def test_every_lever_reaches_the_request() -> None:
    options = search_options(
        {
            "mode": "hybrid",
            "fusion": {"method": "rrf", "k": 10},
            "window": 50,
            "rerank": {"by": "exact"},
            "search_params": {"exact": True},
            "offset": 3,
            "exclude": ("a",),
            "lexical": {"text": "dog"},
        },
        "f",
    )
    assert options.search_arguments("a dog", [0.5, 0.5], text_field="page_content") == {
        "vector": [0.5, 0.5],
        "mode": "hybrid",
        "lexical": {"text": "dog", "field": "page_content"},
        "fusion": {"method": "rrf", "k": 10},
        "window": 50,
        "rerank": {"by": "exact"},
        "search_params": {"exact": True},
        "offset": 3,
        "exclude": ["a"],
    }


def test_a_vector_query_in_a_keyword_mode_sends_its_text_as_the_keywords() -> None:
    arguments = search_options({"mode": "lexical"}, "f").search_arguments("a dog", [1.0])
    assert arguments["vector"] == [1.0]
    assert arguments["lexical"] == {"text": "a dog"}
    assert "text" not in arguments


def test_an_unknown_name_is_a_type_error_naming_it_and_the_method() -> None:
    with pytest.raises(TypeError, match=r"similarity_search.*'bogus_kwarg'.*score_threshold"):
        search_options({"bogus_kwarg": 1, "mode": "dense"}, "similarity_search")


@pytest.mark.parametrize(
    ("levers", "named"),
    [
        ({"mode": "sparse"}, "mode 'sparse'"),
        ({"fusion": {"method": "rrf"}}, "fusion applies to mode='hybrid'"),
        ({"mode": "lexical", "fusion": {"method": "rrf"}}, "fusion"),
        ({"lexical": {"text": "x"}}, "lexical options"),
        ({"window": 50}, "window"),
        ({"mode": "lexical", "window": 50}, "window"),
    ],
)
def test_a_lever_the_mode_would_ignore_is_refused(levers: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        search_options(levers, "f")


def test_a_window_is_taken_by_a_re_rank_or_a_hybrid_search() -> None:
    assert search_options({"window": 50, "rerank": {"by": "exact"}}, "f").window == 50
    assert search_options({"window": 50, "mode": "hybrid"}, "f").window == 50


def test_the_threshold_keeps_the_scores_at_least_it() -> None:
    options = SearchOptions(score_threshold=0.5)
    assert options.kept([("a", 0.9), ("b", 0.5), ("c", 0.49)]) == [("a", 0.9), ("b", 0.5)]
    assert SearchOptions().kept([("c", -1.0)]) == [("c", -1.0)]


def test_relevance_follows_what_the_scores_are() -> None:
    assert relevance_function(SearchOptions()) is cosine_relevance
    assert cosine_relevance(-1.0) == 0.0
    assert cosine_relevance(1.0) == 1.0
    reranked = SearchOptions(mode="lexical", rerank={"by": "exact"})
    assert relevance_function(reranked) is cosine_relevance
    weighted = relevance_function(SearchOptions(mode="hybrid"))
    assert weighted(0.25) == 0.25
    assert weighted(1.0000001) == 1.0
    with pytest.raises(ValueError, match="mode='lexical'"):
        relevance_function(SearchOptions(mode="lexical"))
    with pytest.raises(ValueError, match="rrf fusion"):
        relevance_function(SearchOptions(mode="hybrid", fusion={"method": "rrf"}))

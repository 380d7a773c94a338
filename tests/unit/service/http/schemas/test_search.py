"""Request models: a search's ``search_params`` (shape, limits) in the JSON body and the upload
form."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.engine.rank.search_params import SearchOverride
from service.http.schemas.search import SearchRequest, SearchUploadForm

QUERY = {"query": {"text": "a dog"}, "collection": "captions"}


@pytest.mark.parametrize(
    ("params", "override"),
    [
        ({"nprobe": 16}, SearchOverride(nprobe=16)),
        ({"nprobe": 16.0}, SearchOverride(nprobe=16)),
        ({"ef_search": 64}, SearchOverride(ef_search=64)),
        ({"exact": True}, SearchOverride(exact=True)),
        ({}, SearchOverride()),
    ],
)
def test_search_params_become_the_core_s_override(
    params: dict[str, Any], override: SearchOverride
) -> None:
    request = SearchRequest.model_validate({**QUERY, "search_params": params})
    assert request.page().override == override
    assert request.page().params_where == "search_params"


def test_no_search_params_is_no_override() -> None:
    assert SearchRequest.model_validate(QUERY).page().override is None


@pytest.mark.parametrize(
    "params",
    [
        {"nprobe": 0},
        {"ef_search": -1},
        {"nprobe": "4"},
        {"nprobe": 2.5},
        {"nprobe": True},
        {"exact": "yes"},
        {"nprobe": 4, "exact": True},
        {"ef_search": 4, "exact": True},
        {"efSearch": 4},
    ],
)
def test_malformed_search_params_are_refused(params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SearchRequest.model_validate({**QUERY, "search_params": params})


def test_a_search_becomes_one_engine_query_located_in_its_request() -> None:
    request = SearchRequest.model_validate({**QUERY, "filter": {"field": "a", "exists": True}})
    query = request.to_query("searches.2")
    assert query.where == "searches.2"
    assert query.side_where == "searches.2.query.text"
    item = SearchRequest.model_validate(
        {**QUERY, "query": {"item": {"collection": "c", "id": "i"}}}
    )
    assert item.to_query().side_where == "query.item"
    assert query.page.where == "searches.2.filter"
    assert request.to_query().page.params_where == "search_params"


def test_bulk_pages_locate_their_parameters() -> None:
    request = SearchRequest.model_validate({**QUERY, "search_params": {"nprobe": 2}})
    assert request.page("searches.3.filter").params_where == "searches.3.search_params"


def test_the_upload_form_takes_search_params_as_json_text() -> None:
    form = SearchUploadForm.model_validate(
        {"collection": "images", "k": "5", "search_params": '{"nprobe": 4}'}
    )
    assert form.page().override == SearchOverride(nprobe=4)
    for bad in ("nprobe=4", '{"nprobe": 4, "exact": true}', "[4]"):
        with pytest.raises(ValidationError):
            SearchUploadForm.model_validate({"collection": "images", "search_params": bad})

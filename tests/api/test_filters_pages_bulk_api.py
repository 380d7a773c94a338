"""Metadata filters, pages and bulk search over a real faiss bundle with the fake encoder.

The fake captions carry ``image_id`` 42 + row // 2, ``sentid`` 1000 + row, ``text`` and
``filename``; the surfing caption sits at rows 1, 4 and 6 (a tie run).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.http.schemas.bulk import BulkSearchResponse
from tests.fakes.fake_bundles import CAPTIONS, caption_id

SURF = CAPTIONS[1]


def post(client: TestClient, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, json=body)


def ids_of(payload: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in payload["results"]]


def search(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("collection", "captions")
    body.setdefault("query", {"text": SURF})
    response = client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


def test_a_range_filter_keeps_only_matching_items(client: TestClient) -> None:
    payload = search(client, k=12, filter={"field": "sentid", "range": {"gte": 1004, "lt": 1007}})
    assert sorted(ids_of(payload)) == [caption_id(row) for row in (4, 5, 6)]
    assert payload["next_offset"] is None


def test_eq_in_exists_not_and_or_combine(client: TestClient) -> None:
    surf_or_bus = {"field": "text", "in": [SURF, CAPTIONS[5]]}
    not_row_4 = {"not": {"field": "sentid", "eq": 1004}}
    payload = search(client, k=12, filter={"and": [surf_or_bus, not_row_4]})
    assert ids_of(payload) == [caption_id(1), caption_id(6), caption_id(5)]
    either = {"or": [{"field": "image_id", "eq": 42}, {"field": "image_id", "eq": 47}]}
    assert sorted(ids_of(search(client, k=12, filter=either))) == [
        caption_id(row) for row in (0, 1, 10, 11)
    ]
    assert len(search(client, k=12, filter={"field": "text", "exists": True})["results"]) == 12
    assert search(client, k=12, filter={"field": "text", "exists": False})["results"] == []


def test_a_filter_with_a_single_match_returns_it(client: TestClient) -> None:
    payload = search(client, k=5, filter={"field": "sentid", "eq": 1009})
    assert ids_of(payload) == [caption_id(9)]
    assert payload["results"][0]["rank"] == 1


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ({"field": "colour", "eq": "red"}, "filter.field: unknown field 'colour'"),
        ({"field": "sentid", "eq": "1000"}, "filter.eq: '1000' does not fit field 'sentid'"),
        ({"field": "text", "range": {"gt": 1}}, "filter.range: field 'text' is a string"),
        ({"and": [{"field": "sentid", "eq": 1}, {"field": "x", "exists": True}]}, "filter.and.1"),
    ],
)
def test_a_filter_that_does_not_fit_the_collection_is_409_naming_the_field(
    client: TestClient, flt: dict[str, Any], message: str
) -> None:
    """A well-formed filter the collection's fields cannot answer (another collection might):
    409 filter_not_applicable, not the 422 of a request that breaks the schema."""
    response = post(
        client, "/v1/search", {"query": {"text": SURF}, "collection": "captions", "filter": flt}
    )
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "filter_not_applicable"
    assert message in response.json()["error"]["message"]


def test_a_range_no_value_can_satisfy_is_422(client: TestClient) -> None:
    flt = {"field": "sentid", "range": {"gt": 5, "lt": 5}}
    response = post(
        client, "/v1/search", {"query": {"text": SURF}, "collection": "captions", "filter": flt}
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_input"
    assert "filter.range: no value" in response.json()["error"]["message"]


def test_malformed_filters_are_422(client: TestClient) -> None:
    for flt in (
        {"field": "sentid"},
        {"field": "sentid", "eq": 1, "exists": True},
        {"and": []},
        {"and": [], "or": []},
        {"field": "sentid", "range": {}},
        {"field": "sentid", "range": {"gt": 1, "gte": 2}},
    ):
        response = post(
            client, "/v1/search", {"query": {"text": SURF}, "collection": "captions", "filter": flt}
        )
        assert response.status_code == 422, flt


def test_pages_continue_each_other_through_a_tie_run(client: TestClient) -> None:
    whole = ids_of(search(client, k=12))
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        payload = search(client, k=2, offset=offset)
        pages += ids_of(payload)
        ranks = [hit["rank"] for hit in payload["results"]]
        assert ranks == list(range(offset + 1, offset + 1 + len(ranks)))
        offset = payload["next_offset"]
    assert pages == whole
    assert search(client, k=5, offset=40)["results"] == []


def test_paging_deeper_than_the_setting_is_422(client: TestClient) -> None:
    response = post(
        client,
        "/v1/search",
        {"query": {"text": SURF}, "collection": "captions", "k": 10, "offset": 10_001},
    )
    assert response.status_code == 422
    assert "max_offset=10000" in response.json()["error"]["message"]


def test_bulk_answers_in_order_like_single_searches_each_with_its_own_error(
    client: TestClient,
) -> None:
    searches: list[dict[str, Any]] = [
        {"query": {"text": SURF}, "collection": "captions", "k": 4},
        {"query": {"text": CAPTIONS[3]}, "collection": "nope", "k": 2},
        {
            "query": {"item": {"collection": "captions", "id": caption_id(2)}},
            "collection": "captions",
            "k": 3,
            "exclude": [caption_id(2)],
        },
        {"query": {"text": SURF}, "collection": "captions", "k": 2, "offset": 2},
        {"query": {"text": SURF}, "collection": "captions", "filter": {"field": "nope", "eq": 1}},
        {
            "query": {"text": CAPTIONS[5]},
            "collection": "captions",
            "k": 3,
            "filter": {"field": "image_id", "range": {"gte": 44}},
        },
    ]
    response = post(client, "/v1/search/bulk", {"searches": searches})
    assert response.status_code == 200, response.text
    answers = BulkSearchResponse.model_validate(response.json()).model_dump()["responses"]
    assert [answer["status"] for answer in answers] == [200, 404, 200, 200, 409, 200]
    assert answers[1]["error"]["code"] == "not_found"
    assert answers[4]["error"]["code"] == "filter_not_applicable"
    assert "unknown field 'nope'" in answers[4]["error"]["message"]
    for search_body, answer in zip(searches, answers, strict=True):
        if answer["status"] != 200:
            continue
        single = search(client, **search_body)
        assert answer["result"]["results"] == single["results"]
        assert answer["result"]["next_offset"] == single["next_offset"]


def test_bulk_limits_refuse_the_whole_request(client: TestClient) -> None:
    one = {"query": {"text": SURF}, "collection": "captions", "k": 10}
    response = post(client, "/v1/search/bulk", {"searches": [one] * 257})
    assert response.status_code == 422
    assert "max_bulk_searches=256" in response.json()["error"]["message"]
    too_deep = {"query": {"text": SURF}, "collection": "captions", "k": 1001}
    response = post(client, "/v1/search/bulk", {"searches": [one, too_deep]})
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith("searches.1.k: 1001")
    short = {"query": {"vector": [1.0, 0.0]}, "collection": "captions"}
    response = post(client, "/v1/search/bulk", {"searches": [one, short]})
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith("searches.1.query.vector: 2 numbers")
    assert post(client, "/v1/search/bulk", {"searches": []}).status_code == 422


def test_an_invalid_search_is_refused_in_its_place(client: TestClient) -> None:
    one = {"query": {"text": SURF}, "collection": "captions", "k": 3}
    empty = {"query": {"text": "   "}, "collection": "captions"}
    unknown_key = {"query": {"text": SURF}, "collection": "captions", "bogus": 1}
    no_bound = {**one, "filter": {"field": "sentid", "range": {}}}
    searches = [empty, one, unknown_key, one, no_bound]
    response = post(client, "/v1/search/bulk", {"searches": searches})
    assert response.status_code == 200, response.text
    answers = response.json()["responses"]
    assert [answer["status"] for answer in answers] == [422, 200, 422, 200, 422]
    assert answers[4]["error"]["message"] == (
        "searches.4.filter.range: give at least one bound: 'gt', 'gte', 'lt' or 'lte'"
    )
    assert answers[4]["error"]["param"] == "searches.4.filter.range"
    assert answers[0]["error"]["param"] == "searches.0.query.text"
    unknown_field = {**one, "filter": {"field": "nope", "eq": 1}}
    conflict = post(client, "/v1/search/bulk", {"searches": [one, unknown_field]}).json()
    assert conflict["responses"][1]["status"] == 409
    assert conflict["responses"][1]["error"]["code"] == "filter_not_applicable"
    assert conflict["responses"][1]["error"]["param"] == "searches.1.filter.field"
    assert answers[0]["error"]["code"] == "invalid_input"
    assert answers[0]["error"]["message"].startswith("searches.0.query.text")
    assert "searches.2.bogus" in answers[2]["error"]["message"]
    assert answers[1]["result"] == answers[3]["result"]
    BulkSearchResponse.model_validate(response.json())
    # Every search invalid, or the request's own shape wrong: the whole request is refused.
    assert post(client, "/v1/search/bulk", {"searches": [empty, empty]}).status_code == 422
    assert post(client, "/v1/search/bulk", {"searches": [one], "extra": 1}).status_code == 422
    assert post(client, "/v1/search/bulk", {"searches": one}).status_code == 422

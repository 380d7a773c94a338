"""POST /v1/search over a real faiss bundle with the fake encoder."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.http.schemas.search import SearchResponse
from tests.fakes.fake_bundles import CAPTIONS, caption_id
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder

SURF = CAPTIONS[1]  # also at rows 4 and 6


def search(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("collection", "captions")
    response = client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


@pytest.mark.parametrize(
    "body",
    [
        {"query": {"text": SURF}, "k": 3},
        {"query": {"text": SURF}, "k": 2, "offset": 2, "include_metadata": False},
        {"query": {"item": {"collection": "captions", "id": caption_id(3)}}, "k": 4},
        {"query": {"text": SURF}, "k": 100},
    ],
)
def test_answers_are_exactly_the_response_model(client: TestClient, body: dict[str, Any]) -> None:
    # The route serialises plain values without validating them (the event loop's time): the
    # document must still be what the declared model validates and writes back unchanged.
    response = client.post("/v1/search", json={"collection": "captions", **body})
    assert response.status_code == 200, response.text
    model = SearchResponse.model_validate_json(response.content, strict=True)
    assert model.model_dump(mode="json") == response.json()


def test_text_search_ranks_the_matching_caption_first(client: TestClient) -> None:
    payload = search(client, query={"text": "a dog sleeping on a red couch"}, k=3)
    assert set(payload) == {
        "results",
        "collection",
        "variant",
        "bundle",
        "bundle_version",
        "mode",
        "next_offset",
        "search_params",
        "missing_shards",
        "timings_ms",
    }
    assert payload["missing_shards"] == []  # a collection that is not sharded is whole
    assert payload["search_params"] == {}  # a flat index has no search parameters
    assert payload["collection"] == "captions"
    assert payload["variant"] == FAKE_VARIANT
    assert payload["bundle"] == "coco-captions"
    assert payload["bundle_version"] == "20260101T000000Z"
    assert set(payload["timings_ms"]) == {"decode", "queue", "encode", "search", "total"}
    assert payload["timings_ms"]["decode"] == 0.0
    first = payload["results"][0]
    assert first["id"] == caption_id(0)
    assert first["rank"] == 1
    assert first["score"] == pytest.approx(1.0, abs=1e-6)
    assert first["metadata"] == {
        "text": CAPTIONS[0],
        "image_id": 42,
        "filename": "COCO_val2014_000000000042.jpg",
        "sentid": 1000,
    }
    assert [hit["rank"] for hit in payload["results"]] == [1, 2, 3]


def test_text_search_encodes_exactly_once(client: TestClient, encoder: FakeTextEncoder) -> None:
    search(client, query={"text": "a cat"}, k=2)
    assert encoder.calls == [["a cat"]]


def test_equal_scores_are_ordered_by_row(client: TestClient) -> None:
    payload = search(client, query={"text": SURF}, k=3)
    assert [hit["id"] for hit in payload["results"]] == [
        caption_id(1),
        caption_id(4),
        caption_id(6),
    ]
    assert len({hit["score"] for hit in payload["results"]}) == 1


def test_tie_rule_holds_at_the_cut(client: TestClient) -> None:
    payload = search(client, query={"text": SURF}, k=1)
    assert [hit["id"] for hit in payload["results"]] == [caption_id(1)]


def test_item_search_uses_the_stored_vector_without_encoding(
    client: TestClient, encoder: FakeTextEncoder
) -> None:
    payload = search(client, query={"item": {"collection": "captions", "id": caption_id(4)}}, k=3)
    assert [hit["id"] for hit in payload["results"]] == [
        caption_id(1),
        caption_id(4),
        caption_id(6),
    ]
    assert encoder.calls == []
    assert payload["timings_ms"]["encode"] == 0.0


def test_exclude_removes_ids_and_still_fills_k(client: TestClient) -> None:
    payload = search(
        client,
        query={"item": {"collection": "captions", "id": caption_id(1)}},
        k=3,
        exclude=[caption_id(1), caption_id(6), "COCO_val2014:sentid:999999"],
    )
    ids = [hit["id"] for hit in payload["results"]]
    assert len(ids) == 3
    assert ids[0] == caption_id(4)
    assert caption_id(1) not in ids
    assert caption_id(6) not in ids


def test_k_larger_than_the_collection_returns_all_of_it(client: TestClient) -> None:
    payload = search(client, query={"text": "a dog"}, k=1000)
    results = payload["results"]
    assert len(results) == len(CAPTIONS)
    assert [hit["rank"] for hit in results] == list(range(1, len(CAPTIONS) + 1))
    keys = [(-hit["score"], int(hit["id"].rsplit(":", 1)[1])) for hit in results]
    assert keys == sorted(keys)


def test_k_defaults_to_ten(client: TestClient) -> None:
    assert len(search(client, query={"text": "a dog"})["results"]) == 10


def test_k_at_max_k_is_accepted(client: TestClient) -> None:
    assert len(search(client, query={"text": "a dog"}, k=1000)["results"]) == len(CAPTIONS)


def test_named_variant_is_served(client: TestClient) -> None:
    assert search(client, query={"text": "a dog"}, k=1, variant=FAKE_VARIANT)["variant"] == (
        FAKE_VARIANT
    )


def test_timing_headers_are_set(client: TestClient) -> None:
    response = client.post(
        "/v1/search", json={"query": {"text": "a dog"}, "collection": "captions", "k": 2}
    )
    for name in ("x-timing-encode-ms", "x-timing-search-ms", "x-timing-total-ms"):
        assert float(response.headers[name]) >= 0.0


def test_item_query_has_no_encode_timing_header(client: TestClient) -> None:
    response = client.post(
        "/v1/search",
        json={
            "query": {"item": {"collection": "captions", "id": caption_id(0)}},
            "collection": "captions",
        },
    )
    assert "x-timing-encode-ms" not in response.headers
    assert "x-timing-search-ms" in response.headers


def test_metadata_can_be_left_out(client: TestClient) -> None:
    full = search(client, query={"text": "a dog sleeping on a red couch"}, k=3)
    lean = search(
        client, query={"text": "a dog sleeping on a red couch"}, k=3, include_metadata=False
    )
    assert [hit["metadata"] for hit in lean["results"]] == [None, None, None]
    assert [(hit["id"], hit["score"]) for hit in lean["results"]] == [
        (hit["id"], hit["score"]) for hit in full["results"]
    ]

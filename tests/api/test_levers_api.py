"""Quality levers over HTTP: lexical and hybrid modes, fusion, window and re-rank on bundle and
live collections, in single and bulk searches; every misfit refused before anything is
encoded, with its status."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import CAPTIONS, caption_id
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import Multimodal, wait_ready


def search(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("collection", "captions")
    body.setdefault("query", {"text": "a man riding a wave"})
    response = client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


def refused(client: TestClient, status: int, code: str, **body: Any) -> str:
    body.setdefault("collection", "captions")
    body.setdefault("query", {"text": "a dog"})
    response = client.post("/v1/search", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    message: str = response.json()["error"]["message"]
    return message


def test_lexical_finds_exactly_the_captions_holding_a_keyword(client: TestClient) -> None:
    answer = search(client, query={"text": "couch"}, mode="lexical", k=20)
    assert answer["mode"] == "lexical"
    expected = {caption_id(row) for row, text in enumerate(CAPTIONS) if "couch" in text.split()}
    assert set(ids(answer)) == expected
    assert all(hit["score"] > 0 for hit in answer["results"])
    assert answer["next_offset"] is None


def test_lexical_keywords_override_the_query_text_and_filters_hold(client: TestClient) -> None:
    answer = search(
        client,
        query={"item": {"collection": "captions", "id": caption_id(0)}},
        mode="lexical",
        lexical={"text": "sleeping"},
        filter={"field": "image_id", "range": {"gte": 43}},
        k=20,
    )
    expected = [
        caption_id(row)
        for row, text in enumerate(CAPTIONS)
        if "sleeping" in text.split() and 42 + row // 2 >= 43
    ]
    assert sorted(ids(answer)) == sorted(expected)


def test_hybrid_pages_continue_each_other_within_the_window(client: TestClient) -> None:
    whole = search(client, mode="hybrid", k=9, window=9)
    assert whole["mode"] == "hybrid"
    pages = [search(client, mode="hybrid", k=3, offset=offset, window=9) for offset in (0, 3, 6)]
    assert [item for page in pages for item in ids(page)] == ids(whole)
    assert [page["next_offset"] for page in pages[:2]] == [3, 6]
    ranks = [hit["rank"] for page in pages for hit in page["results"]]
    assert ranks == list(range(1, 10))


def test_hybrid_exclusions_and_filters_hold_on_both_legs(client: TestClient) -> None:
    excluded = caption_id(1)
    answer = search(
        client,
        mode="hybrid",
        fusion={"method": "weighted", "alpha": 0.3},
        exclude=[excluded],
        filter={"field": "image_id", "in": [42, 43, 44]},
        k=20,
    )
    assert excluded not in ids(answer)
    kept = {caption_id(row) for row in range(len(CAPTIONS)) if 42 + row // 2 in (42, 43, 44)}
    assert set(ids(answer)) <= kept
    scores = [hit["score"] for hit in answer["results"]]
    assert scores == sorted(scores, reverse=True)
    assert max(scores) <= 1.0


def test_rerank_by_exact_vectors_orders_by_cosine(client: TestClient) -> None:
    plain = search(client, k=5)
    reranked = search(client, k=5, rerank={"by": "exact"}, window=20)
    assert ids(reranked) == ids(plain)
    np.testing.assert_allclose(
        [hit["score"] for hit in reranked["results"]],
        [hit["score"] for hit in plain["results"]],
        atol=1e-6,
    )


def test_bulk_answers_lever_searches_as_single_searches(client: TestClient) -> None:
    bodies = [
        {"query": {"text": "a cat"}, "collection": "captions", "k": 4, "mode": "hybrid"},
        {"query": {"text": "a cat"}, "collection": "captions", "k": 4},
        {"query": {"text": "surfboard"}, "collection": "captions", "k": 4, "mode": "lexical"},
        {
            "query": {"text": "a cat"},
            "collection": "captions",
            "mode": "lexical",
            "lexical": {"field": "image_id"},
        },
    ]
    response = client.post("/v1/search/bulk", json={"searches": bodies})
    assert response.status_code == 200, response.text
    answers = response.json()["responses"]
    for body, answer in zip(bodies[:3], answers[:3], strict=True):
        single = search(client, **body)
        assert answer["status"] == 200
        assert ids(answer["result"]) == ids(single)
        assert answer["result"]["mode"] == single["mode"]
    assert answers[3]["status"] == 409
    assert answers[3]["error"]["code"] == "lever_not_applicable"


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        ({"mode": "hybrid", "k": 5, "window": 4}, 422, "invalid_input", "at least 5"),
        ({"mode": "hybrid", "window": 1001}, 422, "invalid_input", "max_window=1000"),
        (
            {"rerank": {"by": "exact"}, "offset": 95, "k": 10, "window": 100},
            422,
            "invalid_input",
            "offset + k = 105",
        ),
        (
            {"mode": "lexical", "lexical": {"field": "nope"}},
            409,
            "lever_not_applicable",
            "no field 'nope'",
        ),
        (
            {"mode": "lexical", "lexical": {"field": "sentid"}},
            409,
            "lever_not_applicable",
            "of type integer",
        ),
        (
            {"mode": "lexical", "query": {"vector": [1.0] + [0.0] * 63}},
            422,
            "invalid_input",
            "needs keywords",
        ),
        ({"mode": "lexical", "lexical": {"text": "!!"}}, 422, "invalid_input", "no word"),
        ({"rerank": {"by": "variant", "variant": "nope"}}, 404, "not_found", "unknown variant"),
        ({"mode": "fuzzy"}, 422, "invalid_input", "mode"),
        ({"mode": "hybrid", "fusion": {"method": "rrf", "k": 0}}, 422, "invalid_input", "k"),
        (
            {"mode": "hybrid", "fusion": {"method": "weighted", "alpha": 2}},
            422,
            "invalid_input",
            "alpha",
        ),
    ],
)
def test_misfits_are_refused_before_encoding(
    client: TestClient,
    encoder: FakeTextEncoder,
    body: dict[str, Any],
    status: int,
    code: str,
    says: str,
) -> None:
    assert says in refused(client, status, code, **body)
    assert encoder.calls == []


def test_an_image_collection_takes_keywords_on_its_captions(multimodal: Multimodal) -> None:
    # The fake images' captions field holds their captions' ids: image row r, captions 2r, 2r+1.
    answer = search(
        multimodal.client,
        collection="images",
        query={"text": "a dog"},
        mode="hybrid",
        lexical={"text": "1005"},
        k=3,
    )
    assert answer["variant"] == "fake-clip"
    lexical = search(
        multimodal.client,
        collection="images",
        query={"text": "a dog"},
        mode="lexical",
        lexical={"text": "1005"},
    )
    assert len(lexical["results"]) == 1
    assert lexical["results"][0]["metadata"]["captions"] == [caption_id(4), caption_id(5)]
    assert lexical["results"][0]["id"] in ids(answer)


def test_rerank_by_another_variant_reads_its_vectors_of_the_same_items(
    multimodal: Multimodal,
) -> None:
    client = multimodal.client
    query = {"text": "a dog sleeping"}
    first = search(
        client, collection="coco-captions:captions", variant="fake-bow", query=query, k=12
    )
    other = search(client, collection="coco-clip:captions", variant="fake-clip", query=query, k=12)
    reranked = search(
        client,
        collection="coco-captions:captions",
        variant="fake-bow",
        query=query,
        k=12,
        rerank={"by": "variant", "variant": "fake-clip"},
        window=12,
    )
    assert ids(reranked) == ids(other)
    assert set(ids(reranked)) == set(ids(first))
    refused(
        client,
        409,
        "lever_not_applicable",
        collection="coco-captions:captions",
        variant="fake-bow",
        query={"item": {"collection": "captions", "id": caption_id(0)}},
        rerank={"by": "variant", "variant": "fake-pixels"},
    )


@pytest.fixture
def live(settings: Settings, tmp_path: Path) -> Iterator[TestClient]:
    live_settings = settings.model_copy(update={"collections_dir": tmp_path / "collections"})
    app = create_app(live_settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        yield client


def test_a_live_collection_searches_its_texts_by_keyword_as_written(live: TestClient) -> None:
    created = live.post(
        "/v1/collections",
        json={"name": "notes", "variant": "fake-bow", "fields": {"tag": "string"}},
    )
    assert created.status_code == 201, created.text
    items = [
        {"id": f"n{row}", "text": text, "metadata": {"tag": "ab"[row % 2]}}
        for row, text in enumerate(CAPTIONS)
    ]
    assert live.post("/v1/collections/notes/items", json={"items": items}).status_code == 200

    def lexical(word: str, **options: Any) -> list[str]:
        return ids(
            search(live, collection="notes", query={"text": word}, mode="lexical", k=50, **options)
        )

    couch = [f"n{row}" for row, text in enumerate(CAPTIONS) if "couch" in text.split()]
    assert sorted(lexical("couch")) == sorted(couch)
    assert lexical("couch", filter={"field": "tag", "eq": "a"}) == [
        item for item in lexical("couch") if int(item[1:]) % 2 == 0
    ]
    deleted = live.post("/v1/collections/notes/items/delete", json={"ids": [couch[0]]})
    assert deleted.status_code == 200
    replaced = {"id": couch[1], "text": "a bicycle leaning on a wall"}
    assert live.post("/v1/collections/notes/items", json={"items": [replaced]}).status_code == 200
    assert sorted(lexical("couch")) == sorted(couch[2:])
    assert lexical("bicycle") == [couch[1]]
    compacted = live.post("/v1/collections/notes/compact")
    assert compacted.status_code == 200, compacted.text
    assert sorted(lexical("couch")) == sorted(couch[2:])
    assert lexical("bicycle") == [couch[1]]
    hybrid = search(
        live,
        collection="notes",
        query={"text": "a cat on a couch"},
        mode="hybrid",
        k=3,
        rerank={"by": "exact"},
    )
    assert hybrid["mode"] == "hybrid"
    assert len(hybrid["results"]) == 3
    message = refused(
        live,
        409,
        "lever_not_applicable",
        collection="notes",
        rerank={"by": "variant", "variant": "fake-bow"},
    )
    assert "by: exact" in message


def test_a_bulk_of_hybrid_searches_embeds_its_texts_together(
    client: TestClient, encoder: FakeTextEncoder
) -> None:
    # More searches than the encoder's queue holds requests: one job, not one per search.
    searches = [
        {
            "query": {"text": f"{CAPTIONS[n % 12]} {n}"},
            "collection": "captions",
            "k": 3,
            "mode": "hybrid",
            "rerank": {"by": "exact"},
        }
        for n in range(100)
    ]
    response = client.post("/v1/search/bulk", json={"searches": searches})
    assert response.status_code == 200, response.text
    assert [answer["status"] for answer in response.json()["responses"]] == [200] * 100
    assert sum(len(call) for call in encoder.calls) == 100
    assert len(encoder.calls) < 10
    single = search(client, **searches[7])
    assert ids(response.json()["responses"][7]["result"]) == ids(single)

"""One engine over HTTP: a bundle collection and a live collection written with the same items in
the same order answer every lever case alike — the same ids, scores, ranks, next offset and mode,
or the same refusal (status and code) — alone and in a bulk request. (The engine-level parity,
sharded views included, is tests/unit/service/engine/collection/test_collection_view.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import CAPTIONS, caption_id
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

FIELDS = {"text": "string", "image_id": "integer", "filename": "string", "sentid": "integer"}


@pytest.fixture
def twins(settings: Settings, tmp_path: Path) -> Iterator[TestClient]:
    """The fake bundle's ``captions`` and a live collection ``twin`` of the same items (texts
    embedded by the same variant, the same metadata), written in row order."""
    live_settings = settings.model_copy(update={"collections_dir": tmp_path / "collections"})
    app = create_app(live_settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        created = client.post(
            "/v1/collections", json={"name": "twin", "variant": "fake-bow", "fields": FIELDS}
        )
        assert created.status_code == 201, created.text
        items = [
            {
                "id": caption_id(row),
                "text": text,
                "metadata": {
                    "text": text,
                    "image_id": 42 + row // 2,
                    "filename": f"COCO_val2014_{42 + row // 2:012d}.jpg",
                    "sentid": 1000 + row,
                },
            }
            for row, text in enumerate(CAPTIONS)
        ]
        written = client.post("/v1/collections/twin/items", json={"items": items})
        assert written.status_code == 200, written.text
        yield client


CASES: dict[str, dict[str, Any]] = {
    "dense": {"k": 5},
    "dense page": {"k": 3, "offset": 2},
    "dense filter": {"k": 10, "filter": {"field": "image_id", "range": {"gte": 43, "lt": 46}}},
    "dense and/or/not/in": {
        "k": 10,
        "filter": {
            "or": [
                {"not": {"field": "image_id", "in": [42, 43]}},
                {"field": "sentid", "eq": 1001},
            ]
        },
    },
    "dense exclusions": {"k": 6, "exclude": [caption_id(0), caption_id(3), "nope"]},
    "an item": {"k": 4, "query": {"item": {"collection": "SELF", "id": caption_id(2)}}},
    "lexical": {"k": 10, "mode": "lexical", "query": {"text": "a dog on a couch"}},
    "lexical page": {"k": 2, "offset": 1, "mode": "lexical", "lexical": {"text": "a"}},
    "lexical window under the page": {
        "k": 4,
        "offset": 1,
        "mode": "lexical",
        "lexical": {"text": "a"},
        "window": 2,
    },
    "hybrid rrf": {"k": 6, "mode": "hybrid", "fusion": {"method": "rrf", "k": 60}, "window": 10},
    "hybrid weighted": {"k": 4, "offset": 2, "mode": "hybrid", "window": 12},
    "hybrid window under the page": {"k": 5, "mode": "hybrid", "window": 3},
    "rerank exact": {"k": 5, "rerank": {"by": "exact"}, "window": 9},
}


def _answer(client: TestClient, collection: str, case: str) -> tuple[int, Any]:
    body = {"collection": collection, "query": {"text": "a man riding a wave on a surfboard"}}
    body.update(CASES[case])
    query = body["query"]
    if "item" in query:
        body["query"] = {"item": {"collection": collection, "id": query["item"]["id"]}}
    response = client.post("/v1/search", json=body)
    return _shape(response.status_code, response.json())


def _shape(status: int, payload: dict[str, Any]) -> tuple[int, Any]:
    if status != 200:
        return status, payload["error"]["code"]
    hits = [(hit["id"], hit["score"], hit["rank"]) for hit in payload["results"]]
    return status, (hits, payload["next_offset"], payload["mode"])


@pytest.mark.parametrize("case", list(CASES))
def test_a_bundle_and_its_live_twin_answer_alike(twins: TestClient, case: str) -> None:
    bundle = _answer(twins, "captions", case)
    live = _answer(twins, "twin", case)
    assert live == bundle
    if case.endswith("window under the page"):
        assert bundle[0] == (422 if case.startswith("hybrid") else 200)
    elif bundle[0] == 200:
        assert bundle[1][0], "a case that finds nothing proves little"


def test_a_bulk_answers_both_alike(twins: TestClient) -> None:
    searches = []
    for collection in ("captions", "twin"):
        for case in CASES:
            body = {"collection": collection, "query": {"text": "a cat sleeping on a couch"}}
            body.update(CASES[case])
            if "item" in body["query"]:
                body["query"] = {"item": {"collection": collection, "id": caption_id(2)}}
            searches.append(body)
    response = twins.post("/v1/search/bulk", json={"searches": searches})
    assert response.status_code == 200, response.text
    answers = [
        _shape(one["status"], one["result"] if one["status"] == 200 else one)
        for one in response.json()["responses"]
    ]
    half = len(CASES)
    assert answers[half:] == answers[:half]

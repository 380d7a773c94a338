"""Search and score by the client's own embedding (``{"vector": [...]}``): validated, then
normalised; it agrees with the text and item queries it stands for."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.fakes.fake_bundles import CAPTIONS, caption_id
from tests.fakes.fake_encoders import embed_bag_of_words


def vector_search(client: TestClient, vector: list[float], k: int = 3) -> dict[str, object]:
    response = client.post(
        "/v1/search", json={"query": {"vector": vector}, "collection": "captions", "k": k}
    )
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def test_a_stored_embedding_finds_its_item_first(client: TestClient) -> None:
    vector = embed_bag_of_words(CAPTIONS[2]).tolist()
    body = vector_search(client, vector)
    results = body["results"]
    assert isinstance(results, list)
    assert results[0]["id"] == caption_id(2)
    assert results[0]["score"] == pytest.approx(1.0, abs=1e-6)
    assert body["bundle_version"] == "20260101T000000Z"
    assert body["timings_ms"]["encode"] == 0.0  # type: ignore[index]


def test_a_vector_query_agrees_with_the_text_it_embeds(client: TestClient) -> None:
    text = "a cat on a couch"
    by_text = client.post(
        "/v1/search", json={"query": {"text": text}, "collection": "captions", "k": 5}
    ).json()["results"]
    by_vector = vector_search(client, embed_bag_of_words(text).tolist(), k=5)["results"]
    assert [hit["id"] for hit in by_vector] == [hit["id"] for hit in by_text]  # type: ignore[attr-defined]


@pytest.mark.parametrize("scale", [1e-300, 1e-3, 7.0, 1e300])
def test_a_vector_is_normalised_before_searching(client: TestClient, scale: float) -> None:
    unit = embed_bag_of_words(CAPTIONS[0]).astype(np.float64)
    body = vector_search(client, (unit * scale).tolist())
    results = body["results"]
    assert isinstance(results, list)
    assert results[0]["id"] == caption_id(0)
    assert results[0]["score"] == pytest.approx(1.0, abs=1e-6)


def test_score_takes_vector_sides(client: TestClient) -> None:
    vector = embed_bag_of_words(CAPTIONS[3]).tolist()
    response = client.post(
        "/v1/score",
        json={
            "pairs": [
                {"left": {"vector": vector}, "right": {"text": CAPTIONS[3]}},
                {
                    "left": {"vector": vector},
                    "right": {"item": {"collection": "captions", "id": caption_id(3)}},
                },
            ]
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["scores"] == pytest.approx([1.0, 1.0], abs=1e-6)

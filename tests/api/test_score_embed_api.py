"""POST /v1/score and POST /v1/embed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.fakes.fake_bundles import CAPTIONS, caption_id
from tests.fakes.fake_encoders import FAKE_DIM, FAKE_VARIANT, FakeTextEncoder, embed_bag_of_words


def item(row: int) -> dict[str, Any]:
    return {"item": {"collection": "captions", "id": caption_id(row)}}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def expected_cosine(left: str, right: str) -> float:
    return float(embed_bag_of_words(left) @ embed_bag_of_words(right))


def test_scores_every_kind_of_pair_in_order(client: TestClient) -> None:
    pairs = [
        {"left": text(CAPTIONS[0]), "right": text(CAPTIONS[0])},
        {"left": text("a dog on a couch"), "right": item(10)},
        {"left": item(1), "right": item(4)},
        {"left": item(2), "right": text("a dog on a couch")},
        {"left": text("zebra"), "right": text("a dog on a couch")},
    ]
    response = client.post("/v1/score", json={"pairs": pairs})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert set(payload) == {"scores", "variant", "bundle_version", "timings_ms"}
    assert payload["variant"] == FAKE_VARIANT
    assert payload["bundle_version"] == "20260101T000000Z"
    expected = [
        1.0,
        expected_cosine("a dog on a couch", CAPTIONS[10]),
        1.0,
        expected_cosine(CAPTIONS[2], "a dog on a couch"),
        expected_cosine("zebra", "a dog on a couch"),
    ]
    assert payload["scores"] == pytest.approx(expected, abs=1e-6)


def test_all_texts_of_a_request_are_encoded_in_one_call_without_repeats(
    client: TestClient, encoder: FakeTextEncoder
) -> None:
    pairs = [
        {"left": text("a"), "right": text("b")},
        {"left": text("b"), "right": item(0)},
        {"left": text("c"), "right": text("a")},
    ]
    assert client.post("/v1/score", json={"pairs": pairs}).status_code == 200
    assert encoder.calls == [["a", "b", "c"]]


def test_item_only_scores_need_no_encoder(client: TestClient, encoder: FakeTextEncoder) -> None:
    response = client.post("/v1/score", json={"pairs": [{"left": item(0), "right": item(10)}]})
    assert response.status_code == 200
    assert encoder.calls == []
    assert "x-timing-encode-ms" not in response.headers


def test_text_only_scores_name_no_bundle(client: TestClient) -> None:
    response = client.post("/v1/score", json={"pairs": [{"left": text("a"), "right": text("b")}]})
    assert response.json()["bundle_version"] is None


def test_unknown_item_is_refused_before_encoding(
    client: TestClient, encoder: FakeTextEncoder
) -> None:
    pairs = [{"left": text("a"), "right": {"item": {"collection": "captions", "id": "nope"}}}]
    assert client.post("/v1/score", json={"pairs": pairs}).status_code == 404
    assert encoder.calls == []


def test_max_score_pairs_is_accepted(client: TestClient) -> None:
    pairs = [{"left": text(f"t{n % 7}"), "right": item(n % len(CAPTIONS))} for n in range(1024)]
    response = client.post("/v1/score", json={"pairs": pairs})
    assert response.status_code == 200
    assert len(response.json()["scores"]) == 1024


def test_embed_returns_normalised_float_vectors(client: TestClient) -> None:
    texts = ["a dog on a couch", "two cats", "a dog on a couch"]
    response = client.post("/v1/embed", json={"texts": texts})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert set(payload) == {"embeddings", "dim", "variant"}
    assert payload["dim"] == FAKE_DIM
    assert payload["variant"] == FAKE_VARIANT
    embeddings = np.array(payload["embeddings"], dtype=np.float32)
    assert embeddings.shape == (3, FAKE_DIM)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(embeddings[0], embed_bag_of_words(texts[0]))


def test_embed_is_one_encoder_call(client: TestClient, encoder: FakeTextEncoder) -> None:
    texts = [f"text {n}" for n in range(256)]
    assert client.post("/v1/embed", json={"texts": texts}).status_code == 200
    assert encoder.calls == [texts]

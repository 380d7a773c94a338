"""``POST /v1/embeddings`` and ``GET /v1/models``: OpenAI's shapes over the fake deployments
(the real ``openai`` package drives a real server in tests/e2e/test_openai_client.py)."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.fakes.fake_bundles import CLIP_VARIANT, PIXELS_VARIANT
from tests.fakes.fake_encoders import (
    COLOURS,
    FAKE_DIM,
    FAKE_VARIANT,
    FakeTextEncoder,
    embed_bag_of_words,
    embed_colour,
)
from tests.fakes.image_files import b64, solid
from tests.fakes.service_app import Multimodal

TEXTS = ["a dog on a couch", "two cats", "a red bus in the rain"]


@pytest.fixture
def encoder() -> FakeTextEncoder:
    """The fake text tower, declared trained for cuts to 16 and 32 values."""
    return FakeTextEncoder(matryoshka_dims=(16, 32))


def _vectors(payload: dict[str, object]) -> np.ndarray:
    data = payload["data"]
    assert isinstance(data, list)
    return np.array([row["embedding"] for row in data], dtype=np.float32)


def test_texts_answer_openais_shape_with_embeds_vectors(client: TestClient) -> None:
    response = client.post("/v1/embeddings", json={"model": FAKE_VARIANT, "input": TEXTS})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["object"] == "list"
    assert payload["model"] == FAKE_VARIANT
    assert [row["index"] for row in payload["data"]] == [0, 1, 2]
    assert {row["object"] for row in payload["data"]} == {"embedding"}
    embed = client.post("/v1/embed", json={"texts": TEXTS, "variant": FAKE_VARIANT}).json()
    np.testing.assert_array_equal(_vectors(payload), np.array(embed["embeddings"], np.float32))
    # The fake tokenizer counts words plus [CLS] and [SEP].
    tokens = sum(len(text.split()) + 2 for text in TEXTS)
    assert payload["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}
    assert "x-timing-encode-ms" in response.headers


def test_a_lone_string_is_one_input(client: TestClient) -> None:
    response = client.post("/v1/embeddings", json={"model": FAKE_VARIANT, "input": "two cats"})
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(_vectors(response.json())[0], embed_bag_of_words("two cats"))


def test_base64_is_little_endian_float32_of_the_same_vector(client: TestClient) -> None:
    floats = client.post("/v1/embeddings", json={"model": FAKE_VARIANT, "input": TEXTS}).json()
    encoded = client.post(
        "/v1/embeddings",
        json={"model": FAKE_VARIANT, "input": TEXTS, "encoding_format": "base64"},
    ).json()
    decoded = np.stack(
        [np.frombuffer(base64.b64decode(row["embedding"]), dtype="<f4") for row in encoded["data"]]
    )
    np.testing.assert_array_equal(decoded, _vectors(floats))


@pytest.mark.parametrize("cut", [16, 32])
def test_a_declared_cut_keeps_the_first_values_renormalised(client: TestClient, cut: int) -> None:
    response = client.post(
        "/v1/embeddings", json={"model": FAKE_VARIANT, "input": TEXTS, "dimensions": cut}
    )
    assert response.status_code == 200, response.text
    full = np.stack([embed_bag_of_words(text) for text in TEXTS]).astype(np.float64)
    expected = full[:, :cut] / np.linalg.norm(full[:, :cut], axis=1, keepdims=True)
    got = _vectors(response.json())
    assert got.shape == (len(TEXTS), cut)
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_the_full_dimension_is_always_a_cut(client: TestClient) -> None:
    response = client.post(
        "/v1/embeddings", json={"model": FAKE_VARIANT, "input": TEXTS, "dimensions": FAKE_DIM}
    )
    assert response.status_code == 200, response.text
    assert _vectors(response.json()).shape == (len(TEXTS), FAKE_DIM)


@pytest.mark.parametrize("dimensions", [8, FAKE_DIM + 1])
def test_an_undeclared_cut_is_refused_naming_the_cuts(
    client: TestClient, encoder: FakeTextEncoder, dimensions: int
) -> None:
    response = client.post(
        "/v1/embeddings", json={"model": FAKE_VARIANT, "input": TEXTS, "dimensions": dimensions}
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["code"], error["type"]) == ("invalid_input", "invalid_request_error")
    assert f"16, 32, {FAKE_DIM}" in error["message"]
    assert encoder.calls == []


def test_dimensions_zero_is_invalid(client: TestClient) -> None:
    response = client.post(
        "/v1/embeddings", json={"model": FAKE_VARIANT, "input": TEXTS, "dimensions": 0}
    )
    assert response.status_code == 422
    assert response.json()["error"]["param"] == "dimensions"


@pytest.mark.parametrize(
    "token_ids", [[101, 2023, 102], [[101, 2023], [101, 102]]], ids=["one", "several"]
)
def test_token_ids_are_refused_saying_why(
    client: TestClient, encoder: FakeTextEncoder, token_ids: list[object]
) -> None:
    response = client.post("/v1/embeddings", json={"model": FAKE_VARIANT, "input": token_ids})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert "token ids" in error["message"]
    assert "check_embedding_ctx_length=False" in error["message"]
    assert error["param"] == "input"
    assert encoder.calls == []


def test_an_unknown_model_is_404_in_openais_error_shape(client: TestClient) -> None:
    response = client.post("/v1/embeddings", json={"model": "text-embedding-3-small", "input": "x"})
    assert response.status_code == 404
    error = response.json()["error"]
    assert {"message", "type", "param", "code"} <= set(error)
    assert (error["code"], error["type"]) == ("not_found", "not_found_error")
    assert FAKE_VARIANT in error["message"]


def test_user_is_accepted_and_ignored(client: TestClient) -> None:
    response = client.post(
        "/v1/embeddings", json={"model": FAKE_VARIANT, "input": ["x"], "user": "someone"}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"model": FAKE_VARIANT, "input": []}, "input"),
        ({"model": FAKE_VARIANT, "input": ["ok", " "]}, "input.1"),
        ({"model": FAKE_VARIANT, "input": " "}, "input.0"),
        ({"model": FAKE_VARIANT, "input": ["x"] * 2049}, "max_embed_inputs=2048"),
        ({"model": FAKE_VARIANT, "input": "x" * 2001}, "max_text_chars"),
        ({"model": FAKE_VARIANT, "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"model": FAKE_VARIANT, "input": "x", "extra": 1}, "extra"),
        ({"input": "x"}, "model"),
    ],
    ids=[
        "empty list",
        "blank text",
        "blank string",
        "too many",
        "too long",
        "bad format",
        "extra",
        "no model",
    ],
)
def test_bad_requests_are_refused_before_encoding(
    client: TestClient, encoder: FakeTextEncoder, body: dict[str, object], where: str
) -> None:
    response = client.post("/v1/embeddings", json=body)
    assert response.status_code == 422, response.text
    assert where in response.json()["error"]["message"]
    assert encoder.calls == []


def test_models_lists_the_served_variants(client: TestClient) -> None:
    response = client.get("/v1/models")
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["object"] == "list"
    (model,) = payload["data"]
    assert (model["id"], model["object"], model["owned_by"]) == (
        FAKE_VARIANT,
        "model",
        "crisscross",
    )
    assert (model["dim"], model["towers"], model["matryoshka_dims"]) == (
        FAKE_DIM,
        ["text"],
        [16, 32],
    )
    assert isinstance(model["created"], int)
    assert (model["max_inputs"], model["max_image_inputs"]) == (2048, None)


def test_models_state_each_towers_input_limit(multimodal: Multimodal) -> None:
    payload = multimodal.client.get("/v1/models").json()
    limits = {
        model["id"]: (model["towers"], model["max_inputs"], model["max_image_inputs"])
        for model in payload["data"]
    }
    images = multimodal.settings.max_images_per_request
    texts = multimodal.settings.max_embed_inputs
    assert limits[CLIP_VARIANT] == (["text", "image"], texts, images)
    assert limits[PIXELS_VARIANT] == (["image"], None, images)


def test_openais_2048_inputs_are_one_request_and_one_encoder_job(
    client: TestClient, encoder: FakeTextEncoder
) -> None:
    texts = [f"caption {n}: a dog on a couch near the window" for n in range(2048)]
    response = client.post("/v1/embeddings", json={"model": FAKE_VARIANT, "input": texts})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert [row["index"] for row in payload["data"]] == list(range(2048))
    np.testing.assert_allclose(_vectors(payload)[2047], embed_bag_of_words(texts[2047]))
    # One batcher job holds the whole request (the real text encoder cuts it into runs).
    assert encoder.calls == [texts]


def test_a_body_over_max_body_bytes_says_to_send_smaller_batches(
    client: TestClient, encoder: FakeTextEncoder
) -> None:
    texts = ["a long paragraph " * 35] * 2048  # about 1.2 MB of JSON: over 1 MiB
    response = client.post("/v1/embeddings", json={"model": FAKE_VARIANT, "input": texts})
    assert response.status_code == 413, response.text
    message = response.json()["error"]["message"]
    assert "max_body_bytes" in message
    assert "chunk_size" in message
    assert encoder.calls == []


def test_images_through_modality_equal_embeds(multimodal: Multimodal) -> None:
    colours = ["yellow", "red"]
    data_uri = "data:image/png;base64," + b64(solid(colours[0]))
    response = multimodal.client.post(
        "/v1/embeddings",
        json={
            "model": CLIP_VARIANT,
            "input": [data_uri, b64(solid(colours[1]))],
            "modality": "image",
        },
    )
    assert response.status_code == 200, response.text
    payload = response.json()
    expected = np.stack([embed_colour(COLOURS[colour]) for colour in colours])
    np.testing.assert_allclose(_vectors(payload), expected, atol=1e-6)
    assert payload["usage"] == {"prompt_tokens": 0, "total_tokens": 0}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"model": CLIP_VARIANT, "input": "data:image/png,abc", "modality": "image"}, 422, None),
        ({"model": CLIP_VARIANT, "input": "not base64!", "modality": "image"}, 422, None),
        ({"model": PIXELS_VARIANT, "input": "two cats"}, 409, "tower_missing"),
        ({"model": FAKE_VARIANT, "input": b64(solid("red")), "modality": "image"}, 409, None),
    ],
    ids=["data URI not base64", "bad base64", "text on an image-only model", "image on text-only"],
)
def test_image_inputs_are_refused_as_embed_refuses_them(
    multimodal: Multimodal, body: dict[str, object], status: int, code: str | None
) -> None:
    response = multimodal.client.post("/v1/embeddings", json=body)
    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["error"]["code"] == code
    assert multimodal.clip_image.calls == []


def test_too_many_images_are_refused(multimodal: Multimodal) -> None:
    count = multimodal.settings.max_images_per_request + 1
    response = multimodal.client.post(
        "/v1/embeddings",
        json={"model": CLIP_VARIANT, "input": [b64(solid("red"))] * count, "modality": "image"},
    )
    assert response.status_code == 422, response.text
    assert "max_images_per_request" in response.json()["error"]["message"]

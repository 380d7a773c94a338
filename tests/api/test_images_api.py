"""Images end to end over real faiss bundles, the real ``decode_image`` and fake encoders: the four
search directions, item queries across collections, the upload route, score and embed with
images, what is reported about towers, and how the work is staged (off the event loop, in
bounded groups)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient
from PIL import Image

import service.engine.query.images
from encoders.image_decode import ImageLimits, decode_image
from service.settings import Settings
from tests.fakes.fake_bundles import (
    CAPTIONS,
    CLIP_FINGERPRINT,
    CLIP_VARIANT,
    IMAGE_COLOURS,
    PIXELS_VARIANT,
    caption_id,
    captions_input,
    image_id,
    images_input,
)
from tests.fakes.fake_encoders import (
    COLOURS,
    FAKE_DIM,
    FAKE_VARIANT,
    embed_bag_of_words,
    embed_colour,
    in_event_loop,
)
from tests.fakes.image_files import b64, solid, upload
from tests.fakes.service_app import Multimodal, open_multimodal

UPLOAD = "/v1/search/upload"
CAPTION_VECTORS = captions_input().vectors
IMAGE_VECTORS = images_input().vectors


def search(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


def expected_order(query: npt.NDArray[np.float32], vectors: npt.NDArray[np.float32]) -> list[int]:
    """Rows by score descending, then row ascending (the tie rule), scores rounded to float32
    precision so that float rounding cannot reorder equal scores."""
    scores = np.round(vectors.astype(np.float64) @ query.astype(np.float64), 5)
    return [int(row) for row in np.lexsort((np.arange(len(vectors)), -scores))]


def assert_ranked(
    results: Sequence[dict[str, Any]],
    query: npt.NDArray[np.float32],
    vectors: npt.NDArray[np.float32],
    id_of: Any,
) -> None:
    """Every hit's score is the cosine of ``query`` with its stored vector, and the hits are
    exactly the expected ranking."""
    order = expected_order(query, vectors)[: len(results)]
    assert [hit["id"] for hit in results] == [id_of(row) for row in order]
    for hit, row in zip(results, order, strict=True):
        assert hit["score"] == pytest.approx(float(vectors[row] @ query), abs=1e-5)
    assert [hit["rank"] for hit in results] == list(range(1, len(results) + 1))


def red_vector() -> npt.NDArray[np.float32]:
    return embed_colour(COLOURS["red"])


# -- the four directions, and items across collections --------------------------------------------


def test_text_to_images(multimodal: Multimodal) -> None:
    payload = search(multimodal.client, query={"text": "red"}, collection="images", k=6)
    assert payload["collection"] == "images"
    assert payload["variant"] == CLIP_VARIANT
    assert payload["bundle"] == "coco-clip"
    assert_ranked(payload["results"], embed_bag_of_words("red"), IMAGE_VECTORS, image_id)
    # The two red images tie; the tie rule puts the lower row first.
    assert [hit["id"] for hit in payload["results"][:2]] == [image_id(0), image_id(4)]
    assert payload["results"][0]["metadata"] == {
        "image_id": 42,
        "filename": image_id(0),
        "captions": [caption_id(0), caption_id(1)],
    }
    assert multimodal.clip_text.calls == [["red"]]
    assert multimodal.clip_image.calls == []


def test_text_to_captions_on_a_two_tower_variant(multimodal: Multimodal) -> None:
    payload = search(multimodal.client, query={"text": CAPTIONS[3]}, collection="captions", k=4)
    assert_ranked(payload["results"], embed_bag_of_words(CAPTIONS[3]), CAPTION_VECTORS, caption_id)
    assert payload["results"][0]["score"] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_image_to_images_in_every_accepted_format(multimodal: Multimodal, fmt: str) -> None:
    query = {"image": b64(solid("red", fmt))}
    payload = search(multimodal.client, query=query, collection="images", k=3)
    assert [hit["id"] for hit in payload["results"][:2]] == [image_id(0), image_id(4)]
    assert payload["results"][0]["score"] == pytest.approx(1.0, abs=1e-3)
    assert multimodal.clip_image.calls == [[(16, 12)]]
    assert multimodal.clip_text.calls == []


def test_image_to_images_exact_scores(multimodal: Multimodal) -> None:
    payload = search(
        multimodal.client, query={"image": b64(solid("red"))}, collection="images", k=6
    )
    assert_ranked(payload["results"], red_vector(), IMAGE_VECTORS, image_id)


def test_image_to_captions(multimodal: Multimodal) -> None:
    payload = search(
        multimodal.client, query={"image": b64(solid("red"))}, collection="captions", k=12
    )
    assert_ranked(payload["results"], red_vector(), CAPTION_VECTORS, caption_id)
    top = {hit["id"] for hit in payload["results"][:2]}
    assert top == {caption_id(0), caption_id(5)}  # the captions saying "red"
    assert "red" in payload["results"][0]["metadata"]["text"]


@pytest.mark.parametrize(
    ("source", "row", "target"),
    [
        ("images", 1, "captions"),
        ("captions", 0, "images"),
        ("images", 2, "images"),
        ("captions", 3, "captions"),
    ],
)
def test_item_queries_from_either_collection_into_either(
    multimodal: Multimodal, source: str, row: int, target: str
) -> None:
    ids = {"images": image_id, "captions": caption_id}
    vectors = {"images": IMAGE_VECTORS, "captions": CAPTION_VECTORS}
    query = {"item": {"collection": source, "id": ids[source](row)}}
    payload = search(multimodal.client, query=query, collection=target, k=5)
    assert_ranked(payload["results"], vectors[source][row], vectors[target], ids[target])
    assert multimodal.clip_text.calls == []
    assert multimodal.clip_image.calls == []
    assert (
        "x-timing-encode-ms"
        not in multimodal.client.post(
            "/v1/search", json={"query": query, "collection": target}
        ).headers
    )


def test_item_query_on_an_image_only_variant_needs_no_tower(multimodal: Multimodal) -> None:
    query = {"item": {"collection": "images", "id": image_id(1)}}
    payload = search(
        multimodal.client,
        query=query,
        collection="images",
        k=2,
        variant=PIXELS_VARIANT,
        exclude=[image_id(1)],
    )
    assert payload["bundle"] == "coco-pixels"
    assert image_id(1) not in [hit["id"] for hit in payload["results"]]


def test_image_query_on_the_image_only_variant(multimodal: Multimodal) -> None:
    payload = search(
        multimodal.client,
        query={"image": b64(solid("blue"))},
        collection="images",
        k=1,
        variant=PIXELS_VARIANT,
    )
    assert payload["results"][0]["id"] == image_id(1)
    assert multimodal.pixels_image.calls == [[(16, 12)]]
    assert multimodal.clip_image.calls == []


def test_exclude_and_include_metadata_apply_to_image_queries(multimodal: Multimodal) -> None:
    payload = search(
        multimodal.client,
        query={"image": b64(solid("red"))},
        collection="images",
        k=2,
        exclude=[image_id(0)],
        include_metadata=False,
    )
    ids = [hit["id"] for hit in payload["results"]]
    assert len(ids) == 2
    assert ids[0] == image_id(4)
    assert image_id(0) not in ids
    assert all(hit["metadata"] is None for hit in payload["results"])


def test_image_items_are_served_by_the_catalog(multimodal: Multimodal) -> None:
    response = multimodal.client.get(f"/v1/items/images/{image_id(3)}")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "collection": "images",
        "id": image_id(3),
        "row": 3,
        "metadata": {
            "image_id": 45,
            "filename": image_id(3),
            "captions": [caption_id(6), caption_id(7)],
        },
    }
    collections = multimodal.client.get("/v1/collections").json()["collections"]
    assert [(c["variant"], c["name"], c["count"]) for c in collections] == [
        (FAKE_VARIANT, "captions", len(CAPTIONS)),
        (CLIP_VARIANT, "captions", len(CAPTIONS)),
        (CLIP_VARIANT, "images", len(IMAGE_COLOURS)),
        (PIXELS_VARIANT, "images", len(IMAGE_COLOURS)),
    ]


def test_variants_report_towers_and_the_providers_of_each(multimodal: Multimodal) -> None:
    variants = {v["name"]: v for v in multimodal.client.get("/v1/variants").json()["variants"]}
    assert variants[CLIP_VARIANT] == {
        "name": CLIP_VARIANT,
        "dim": FAKE_DIM,
        "precision": "fp32",
        "towers": ["text", "image"],
        "providers": ["CPUExecutionProvider", "CUDAExecutionProvider"],
        "tower_providers": {
            "text": ["CPUExecutionProvider"],
            "image": ["CUDAExecutionProvider", "CPUExecutionProvider"],
        },
        # Each tower batches for the device it runs on.
        "tower_batching": {
            "text": {"max_batch_size": 16, "max_wait_ms": 0.0},
            "image": {"max_batch_size": 64, "max_wait_ms": 2.0},
        },
        "fingerprint": CLIP_FINGERPRINT,
        "bundle_versions": {"coco-clip": "20260101T000000Z"},
        "max_tokens": 128,
        "image_size": [224, 224],
        "default": True,
    }
    assert variants[PIXELS_VARIANT]["towers"] == ["image"]
    assert variants[PIXELS_VARIANT]["max_tokens"] is None
    assert variants[PIXELS_VARIANT]["image_size"] == [8, 8]
    assert variants[PIXELS_VARIANT]["tower_providers"] == {"image": ["CPUExecutionProvider"]}
    assert variants[FAKE_VARIANT]["towers"] == ["text"]
    assert variants[FAKE_VARIANT]["image_size"] is None


# -- the upload route ------------------------------------------------------------------------------


def test_upload_answers_like_the_json_search(multimodal: Multimodal) -> None:
    image = solid("red", "JPEG")
    body, headers = upload(
        image,
        ("collection", "images"),
        ("k", "3"),
        ("exclude", image_id(0)),
        ("exclude", image_id(3)),
        ("include_metadata", "true"),
    )
    response = multimodal.client.post(UPLOAD, content=body, headers=headers)
    assert response.status_code == 200, response.text
    uploaded = response.json()
    expected = search(
        multimodal.client,
        query={"image": b64(image)},
        collection="images",
        k=3,
        exclude=[image_id(0), image_id(3)],
    )
    assert set(uploaded) == set(expected)
    assert uploaded["results"] == expected["results"]
    assert uploaded["results"][0]["id"] == image_id(4)
    assert (uploaded["variant"], uploaded["bundle"]) == (CLIP_VARIANT, "coco-clip")
    assert uploaded["timings_ms"]["decode"] > 0
    assert "x-timing-decode-ms" in response.headers


def test_upload_defaults_and_named_variant(multimodal: Multimodal) -> None:
    body, headers = upload(
        solid("green"),
        ("collection", "captions"),
        ("include_metadata", "false"),
        ("variant", ""),  # an empty field counts as not given
    )
    response = multimodal.client.post(UPLOAD, content=body, headers=headers)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert len(payload["results"]) == 10  # default k
    assert all(hit["metadata"] is None for hit in payload["results"])

    body, headers = upload(
        solid("green"), ("collection", "images"), ("variant", PIXELS_VARIANT), ("k", "1")
    )
    response = multimodal.client.post(UPLOAD, content=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["variant"] == PIXELS_VARIANT
    assert response.json()["results"][0]["id"] == image_id(2)


def test_upload_built_by_an_http_client_library(multimodal: Multimodal) -> None:
    response = multimodal.client.post(
        UPLOAD,
        files={"file": ("photo.png", solid("yellow"), "image/png")},
        data={"collection": "images", "k": "1"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["results"][0]["id"] == image_id(3)


def test_upload_accepts_an_image_too_big_for_the_json_body(
    multimodal_settings: Settings,
) -> None:
    # A JSON body of 20 kB cannot carry a 60 kB image; the upload route's limit follows
    # max_image_bytes instead, and the JSON 413 says where to go.
    settings = Settings(**{**multimodal_settings.model_dump(), "max_body_bytes": 20_000})
    noise = np.random.default_rng(1).integers(0, 256, (140, 140, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    image = buffer.getvalue()
    assert 20_000 < len(image) < settings.max_image_bytes
    with open_multimodal(settings) as deployment:
        refused = deployment.client.post(
            "/v1/search", json={"query": {"image": b64(image)}, "collection": "images"}
        )
        assert refused.status_code == 413
        assert refused.json()["error"]["code"] == "payload_too_large"
        assert "max_body_bytes=20000" in refused.json()["error"]["message"]
        assert UPLOAD in refused.json()["error"]["message"]
        body, headers = upload(image, ("collection", "images"), ("k", "1"))
        accepted = deployment.client.post(UPLOAD, content=body, headers=headers)
        assert accepted.status_code == 200, accepted.text
        # Behind a proxy that mounts the app under a prefix, the upload limit still applies.
        proxied = TestClient(deployment.client.app, root_path="/api")
        behind = proxied.post("/api" + UPLOAD, content=body, headers=headers)
        assert behind.status_code == 200, behind.text


def chunked(data: bytes, size: int = 32 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_upload_over_its_body_limit_is_refused_while_streaming(multimodal: Multimodal) -> None:
    limit = multimodal.settings.upload_body_limit
    body, headers = upload(b"\0" * (limit + 1), ("collection", "images"))
    # A generator body goes out chunked: no Content-Length to refuse it up front.
    response = multimodal.client.post(UPLOAD, content=chunked(body), headers=headers)
    assert response.status_code == 413
    assert f"max_upload_body_bytes={limit}" in response.json()["error"]["message"]
    assert multimodal.clip_image.calls == []


# -- score and embed -------------------------------------------------------------------------------


def test_score_with_image_sides(multimodal: Multimodal) -> None:
    # Four image sides: max_images_per_request counts sides, repeated or not.
    red, blue = b64(solid("red")), b64(solid("blue", "JPEG"))
    pairs = [
        {"left": {"image": red}, "right": {"image": red}},
        {"left": {"image": red}, "right": {"text": "a red couch"}},
        {"left": {"image": blue}, "right": {"item": {"collection": "images", "id": image_id(1)}}},
        {"left": {"text": "red"}, "right": {"item": {"collection": "images", "id": image_id(4)}}},
        {
            "left": {"item": {"collection": "captions", "id": caption_id(5)}},
            "right": {"item": {"collection": "images", "id": image_id(0)}},
        },
    ]
    response = multimodal.client.post("/v1/score", json={"pairs": pairs})
    assert response.status_code == 200, response.text
    payload = response.json()
    expected = [
        1.0,
        float(red_vector() @ embed_bag_of_words("a red couch")),
        float(IMAGE_VECTORS[1] @ IMAGE_VECTORS[1]),
        float(embed_bag_of_words("red") @ IMAGE_VECTORS[4]),
        float(CAPTION_VECTORS[5] @ IMAGE_VECTORS[0]),
    ]
    assert payload["scores"] == pytest.approx(expected, abs=2e-3)
    assert payload["bundle_version"] == "20260101T000000Z"
    # Each distinct image is decoded and embedded once, each distinct text encoded once.
    assert multimodal.clip_image.calls == [[(16, 12), (16, 12)]]
    assert multimodal.clip_text.calls == [["a red couch", "red"]]
    assert payload["timings_ms"]["decode"] > 0


def test_embed_images(multimodal: Multimodal) -> None:
    colours = ["yellow", "red", "yellow"]
    images = [b64(solid(colour)) for colour in colours]
    response = multimodal.client.post("/v1/embed", json={"images": images})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert set(payload) == {"embeddings", "dim", "variant"}
    assert (payload["dim"], payload["variant"]) == (FAKE_DIM, CLIP_VARIANT)
    embeddings = np.array(payload["embeddings"], dtype=np.float32)
    expected = np.stack([embed_colour(COLOURS[colour]) for colour in colours])
    np.testing.assert_allclose(embeddings, expected, atol=1e-6)
    assert multimodal.clip_image.calls == [[(16, 12)] * 3]
    assert "x-timing-decode-ms" in response.headers


def test_embed_images_on_the_image_only_variant(multimodal: Multimodal) -> None:
    response = multimodal.client.post(
        "/v1/embed", json={"images": [b64(solid("white"))], "variant": PIXELS_VARIANT}
    )
    assert response.status_code == 200, response.text
    assert response.json()["variant"] == PIXELS_VARIANT
    assert multimodal.pixels_image.calls == [[(16, 12)]]


def test_embed_the_most_images_allowed(multimodal: Multimodal) -> None:
    count = multimodal.settings.max_images_per_request
    response = multimodal.client.post("/v1/embed", json={"images": [b64(solid("red"))] * count})
    assert response.status_code == 200, response.text
    assert len(response.json()["embeddings"]) == count


# -- how the work is done -------------------------------------------------------------------------


def test_decoding_and_encoding_run_off_the_event_loop(
    multimodal: Multimodal, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded_on_loop: list[bool] = []

    def recording_decode(data: bytes, limits: ImageLimits) -> Image.Image:
        decoded_on_loop.append(in_event_loop())
        return decode_image(data, limits)

    monkeypatch.setattr(service.engine.query.images, "decode_image", recording_decode)
    search(multimodal.client, query={"image": b64(solid("red"))}, collection="images")
    body, headers = upload(solid("red"), ("collection", "images"))
    assert multimodal.client.post(UPLOAD, content=body, headers=headers).status_code == 200
    assert decoded_on_loop == [False, False]
    assert multimodal.clip_image.on_event_loop == [False, False]


def test_ordinary_images_are_all_decoded_then_embedded_in_one_call(
    multimodal: Multimodal,
) -> None:
    images = [b64(solid(c, size=(100, 100))) for c in ("red", "blue", "green", "white")]
    response = multimodal.client.post("/v1/embed", json={"images": images})
    assert response.status_code == 200
    assert multimodal.clip_image.calls == [[(100, 100)] * 4]


def test_huge_images_are_embedded_in_groups_of_bounded_pixels(multimodal: Multimodal) -> None:
    # 400 x 400 = 160,000 pixels each, max_image_pixels = 250,000: a group closes once it holds
    # at least that many, so no more than two such images are ever decoded at once.
    colours = ["red", "blue", "green"]
    images = [b64(solid(colour, size=(400, 400))) for colour in colours]
    response = multimodal.client.post("/v1/embed", json={"images": images})
    assert response.status_code == 200, response.text
    assert multimodal.clip_image.calls == [[(400, 400)] * 2, [(400, 400)]]
    embeddings = np.array(response.json()["embeddings"], dtype=np.float32)
    expected = np.stack([embed_colour(COLOURS[colour]) for colour in colours])
    np.testing.assert_allclose(embeddings, expected, atol=1e-6)


def test_image_stages_are_timed_and_counted(multimodal: Multimodal) -> None:
    client = multimodal.client
    text_only = client.post("/v1/search", json={"query": {"text": "red"}, "collection": "images"})
    assert "x-timing-decode-ms" not in text_only.headers
    image = client.post(
        "/v1/search", json={"query": {"image": b64(solid("red"))}, "collection": "images"}
    )
    assert float(image.headers["x-timing-decode-ms"]) > 0
    assert float(image.headers["x-timing-encode-ms"]) >= 0
    bad = client.post(
        "/v1/search", json={"query": {"image": b64(b"not an image")}, "collection": "images"}
    )
    assert bad.status_code == 422
    text = client.get("/metrics").text
    assert "crisscross_image_decode_duration_seconds_count 2.0" in text
    assert (
        f'crisscross_encode_duration_seconds_count{{tower="image",variant="{CLIP_VARIANT}"}} 1.0'
        in text
    )
    assert 'crisscross_images_refused_total{reason="invalid_image"} 1.0' in text
    assert (
        f'crisscross_variant_loaded{{fingerprint="{CLIP_FINGERPRINT}",precision="fp32",'
        f'providers="CUDAExecutionProvider,CPUExecutionProvider",tower="image",'
        f'variant="{CLIP_VARIANT}"}} 1.0'
    ) in text
    # Each tower's batch limit, for the device it runs on (image: CUDA; text: the CPU).
    for tower, size in (("image", 64), ("text", 16)):
        assert (
            f'crisscross_encoder_max_batch_size{{tower="{tower}",variant="{CLIP_VARIANT}"}} '
            f"{size}.0"
        ) in text


def test_access_log_carries_the_decode_time(
    multimodal: Multimodal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="crisscross.access")
    body = {"query": {"image": b64(solid("red"))}, "collection": "images"}
    multimodal.client.post("/v1/search", content=json.dumps(body), headers=JSON)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "crisscross.access"]
    assert "decode_ms=" in line
    assert "decode_ms=-" not in line
    assert b64(solid("red"))[:40] not in caplog.text


JSON = {"content-type": "application/json"}


def test_openapi_documents_the_upload_form(multimodal: Multimodal) -> None:
    schema = multimodal.client.get("/openapi.json").json()
    body = schema["paths"][UPLOAD]["post"]["requestBody"]["content"]["multipart/form-data"]
    properties = body["schema"]["properties"]
    assert properties["file"]["format"] == "binary"
    assert {"collection", "k", "variant", "exclude", "include_metadata"} <= set(properties)
    assert set(body["schema"]["required"]) == {"file", "collection"}
    assert "413" in schema["paths"][UPLOAD]["post"]["responses"]

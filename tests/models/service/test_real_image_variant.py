"""The production path with a real (tiny) image variant: ``onnx_encoder_factory`` reads the
variant's towers from ``variant.json``, ``OnnxImageEncoder`` runs its ONNX graph on CPU, and
uploads and base64 queries go through the real ``decode_image``.

The tiny variant (tests/encoders/tiny_image_variant.py) projects the 8 x 8 preprocessed pixels
with a fixed random matrix, so different colours land in different directions.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from encoders.image_decode import ImageLimits, decode_image
from encoders.image_encoder import OnnxImageEncoder
from encoders.variant import load_variant_manifest
from service.http.app import create_app
from service.settings import Settings
from storage.writer import CollectionInput, write_bundle
from tests.fakes.image_files import b64, solid, upload
from tests.fakes.service_app import wait_ready

tiny = pytest.importorskip("tests.fakes.tiny_image_variant")
pytest.importorskip("onnx", reason="building the tiny image graph needs onnx")

VARIANT = "tiny-image"
COLOURS = ["red", "green", "blue", "yellow"]


def file_name(row: int) -> str:
    return f"COCO_val2014_{100 + row:012d}.jpg"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("real-image")
    variant_dir = root / "variants" / VARIANT
    tiny.make_tiny_image_variant(variant_dir, name=VARIANT)
    encoder = OnnxImageEncoder(variant_dir, providers="cpu", intra_op_threads=1)
    limits = ImageLimits(max_bytes=1 << 20, max_pixels=1 << 20)
    images = [decode_image(solid(colour, size=(24, 20)), limits) for colour in COLOURS]
    write_bundle(
        root / "bundles",
        "tiny-images",
        [
            CollectionInput(
                name="images",
                ids=[file_name(row) for row in range(len(COLOURS))],
                metadata=[
                    {"image_id": 100 + row, "filename": file_name(row), "captions": []}
                    for row in range(len(COLOURS))
                ],
                vectors=encoder.encode_images(images),
            )
        ],
        variant_name=VARIANT,
        variant_fingerprint=load_variant_manifest(variant_dir).fingerprint,
        version="20260102T000000Z",
    )
    settings = Settings(
        bundles_root=root / "bundles",
        variants_root=root / "variants",
        providers="cpu",
        intra_op_threads=1,
    )
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        yield client


def test_the_variant_is_served_with_its_image_tower_only(served: TestClient) -> None:
    (variant,) = served.get("/v1/variants").json()["variants"]
    assert variant["name"] == VARIANT
    assert variant["towers"] == ["image"]
    assert variant["tower_providers"] == {"image": ["CPUExecutionProvider"]}
    assert variant["image_size"] == [8, 8]
    assert variant["max_tokens"] is None


@pytest.mark.parametrize("row", range(len(COLOURS)))
def test_upload_finds_the_same_picture(served: TestClient, row: int) -> None:
    body, headers = upload(solid(COLOURS[row], size=(24, 20)), ("collection", "images"))
    response = served.post("/v1/search/upload", content=body, headers=headers)
    assert response.status_code == 200, response.text
    first = response.json()["results"][0]
    assert first["id"] == file_name(row)
    assert first["score"] == pytest.approx(1.0, abs=1e-5)


def test_base64_query_and_embed_agree_with_the_upload(served: TestClient) -> None:
    image = solid("green", "JPEG", size=(24, 20))
    payload = served.post(
        "/v1/search", json={"query": {"image": b64(image)}, "collection": "images", "k": 1}
    ).json()
    assert payload["results"][0]["id"] == file_name(1)
    embedded = served.post("/v1/embed", json={"images": [b64(image)]}).json()
    assert embedded["dim"] == tiny.TINY_IMAGE_DIM
    assert len(embedded["embeddings"][0]) == tiny.TINY_IMAGE_DIM


def test_text_query_names_the_missing_tower(served: TestClient) -> None:
    response = served.post("/v1/search", json={"query": {"text": "red"}, "collection": "images"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "tower_missing"
    assert "has no text tower" in response.json()["error"]["message"]


def test_refusals_of_the_real_decoder(served: TestClient) -> None:
    body, headers = upload(solid("red", "BMP"), ("collection", "images"))
    assert served.post("/v1/search/upload", content=body, headers=headers).status_code == 415
    body, headers = upload(b"\x89PNG\r\n\x1a\nbroken", ("collection", "images"))
    assert served.post("/v1/search/upload", content=body, headers=headers).status_code == 422

"""End to end with pixels: real uvicorn, real EfficientNet-Lite0, real photos over HTTP.

The service's embedding of an uploaded file must equal the offline path (decode_image +
OnnxImageEncoder on the same bytes) to cosine ≥ 0.9999, and image→image search must find the
photo itself first, whether it arrives as base64 JSON or as a multipart upload.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from encoders.image_decode import ImageLimits, decode_image
from encoders.image_encoder import OnnxImageEncoder
from storage.writer import CollectionInput, write_bundle
from tests.e2e.conftest import LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PHOTOS = ("astronaut", "camera", "coffee", "chelsea", "rocket", "horse")


def photo_jpegs() -> dict[str, bytes]:
    """Real photographs shipped inside scikit-image, as JPEG bytes."""
    from skimage import data

    files = {}
    for name in PHOTOS:
        pixels = np.asarray(getattr(data, name)())
        image = Image.fromarray(pixels.astype(np.uint8)).convert("RGB")
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        files[f"{name}.jpg"] = buffer.getvalue()
    return files


@pytest.fixture(scope="module")
def photos() -> dict[str, bytes]:
    return photo_jpegs()


@pytest.fixture(scope="module")
def image_service(
    efficientnet_variant_dir: Path,
    photos: dict[str, bytes],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LiveService, OnnxImageEncoder]]:
    root = tmp_path_factory.mktemp("image-served")
    encoder = OnnxImageEncoder(efficientnet_variant_dir, providers="cpu")
    variants_root = root / "variants"
    variants_root.mkdir()
    (variants_root / encoder.name).symlink_to(efficientnet_variant_dir.resolve())
    limits = ImageLimits(max_bytes=10 << 20, max_pixels=40_000_000)
    vectors = encoder.encode_images([decode_image(data, limits) for data in photos.values()])
    write_bundle(
        root / "bundles",
        "photos",
        [
            CollectionInput(
                name="images",
                ids=list(photos),
                metadata=[{"filename": name} for name in photos],
                vectors=vectors,
            )
        ],
        variant_name=encoder.name,
        variant_fingerprint=encoder.fingerprint,
    )
    service = start_service(variants_root, root / "bundles", root / "service.log")
    yield service, encoder
    assert stop_service(service) == 0, service.log()


def cosine(left: list[float], right: np.ndarray) -> float:
    vector = np.asarray(left, dtype=np.float64)
    return float(vector @ right / (np.linalg.norm(vector) * np.linalg.norm(right)))


def test_uploaded_embedding_equals_the_offline_path(
    image_service: tuple[LiveService, OnnxImageEncoder], photos: dict[str, bytes]
) -> None:
    service, encoder = image_service
    limits = ImageLimits(max_bytes=10 << 20, max_pixels=40_000_000)
    names = list(photos)[:3]
    response = httpx.post(
        f"{service.url}/v1/embed",
        json={"images": [base64.b64encode(photos[name]).decode() for name in names]},
        timeout=60.0,
    )
    assert response.status_code == 200, response.text
    served = response.json()["embeddings"]
    offline = encoder.encode_images([decode_image(photos[name], limits) for name in names])
    for served_vector, offline_vector in zip(served, offline, strict=True):
        assert cosine(served_vector, offline_vector) >= 0.9999


@pytest.mark.parametrize("name", ["coffee.jpg", "chelsea.jpg"])
def test_image_to_image_search_finds_the_photo_first(
    image_service: tuple[LiveService, OnnxImageEncoder], photos: dict[str, bytes], name: str
) -> None:
    service, _ = image_service
    as_json = httpx.post(
        f"{service.url}/v1/search",
        json={
            "query": {"image": base64.b64encode(photos[name]).decode()},
            "collection": "images",
            "k": 3,
        },
        timeout=60.0,
    )
    assert as_json.status_code == 200, as_json.text
    uploaded = httpx.post(
        f"{service.url}/v1/search/upload",
        files={"file": (name, photos[name], "image/jpeg")},
        data={"collection": "images", "k": "3"},
        timeout=60.0,
    )
    assert uploaded.status_code == 200, uploaded.text
    for answer in (as_json.json(), uploaded.json()):
        top = answer["results"][0]
        assert top["id"] == name
        assert top["score"] == pytest.approx(1.0, abs=1e-4)
    assert [hit["id"] for hit in as_json.json()["results"]] == [
        hit["id"] for hit in uploaded.json()["results"]
    ]


def test_a_truncated_upload_is_refused_and_the_service_keeps_serving(
    image_service: tuple[LiveService, OnnxImageEncoder], photos: dict[str, bytes]
) -> None:
    service, _ = image_service
    truncated = photos["coffee.jpg"][: len(photos["coffee.jpg"]) // 2]
    refused = httpx.post(
        f"{service.url}/v1/search/upload",
        files={"file": ("coffee.jpg", truncated, "image/jpeg")},
        data={"collection": "images", "k": "3"},
        timeout=60.0,
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["code"] == "invalid_input"
    assert httpx.get(f"{service.url}/readyz").status_code == 200

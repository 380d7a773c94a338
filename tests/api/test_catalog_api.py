"""GET /v1/items/{collection}/{id}, /v1/variants, /v1/collections."""

from __future__ import annotations

import functools
import io
import os

import pytest
from fastapi.testclient import TestClient
from PIL import Image

import service.lifecycle.loading
from service.http.app import create_app
from service.lifecycle.index_placement import place_index
from service.settings import Settings
from tests.fakes.fake_bundles import CAPTIONS, CLIP_VARIANT, PIXELS_VARIANT, caption_id, image_id
from tests.fakes.fake_encoders import (
    FAKE_DIM,
    FAKE_FINGERPRINT,
    FAKE_VARIANT,
    FakeTextEncoder,
    fake_factory,
)
from tests.fakes.fake_faiss import FakeGpuFaiss
from tests.fakes.service_app import Multimodal, wait_ready


def test_item_with_colons_in_its_id(client: TestClient) -> None:
    response = client.get(f"/v1/items/captions/{caption_id(3)}")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "collection": "captions",
        "id": caption_id(3),
        "row": 3,
        "metadata": {
            "text": CAPTIONS[3],
            "image_id": 43,
            "filename": "COCO_val2014_000000000043.jpg",
            "sentid": 1003,
        },
    }


def test_item_id_may_be_percent_encoded(client: TestClient) -> None:
    response = client.get("/v1/items/captions/COCO_val2014%3Asentid%3A1005")
    assert response.status_code == 200
    assert response.json()["row"] == 5


def test_item_with_named_variant(client: TestClient) -> None:
    response = client.get(f"/v1/items/captions/{caption_id(0)}", params={"variant": FAKE_VARIANT})
    assert response.status_code == 200


def test_variants(client: TestClient) -> None:
    response = client.get("/v1/variants")
    assert response.status_code == 200
    assert response.json() == {
        "variants": [
            {
                "name": FAKE_VARIANT,
                "dim": FAKE_DIM,
                "precision": "fp32",
                "towers": ["text"],
                "providers": ["CPUExecutionProvider"],
                "tower_providers": {"text": ["CPUExecutionProvider"]},
                "tower_batching": {"text": {"max_batch_size": 16, "max_wait_ms": 0.0}},
                "fingerprint": FAKE_FINGERPRINT,
                "bundle_versions": {"coco-captions": "20260101T000000Z"},
                "max_tokens": 128,
                "image_size": None,
                "default": True,
            }
        ],
        "processes": {
            "workers": 1,
            "worker": 0,
            "pid": os.getpid(),  # the app runs in the test process
            "encoder_threads": 2,
            "intra_op_threads": 1,
            "blas_threads": 1,
            "flat_scan": "onnxruntime",
            "overload_concurrent_requests": 2,
        },
    }


@pytest.mark.parametrize(
    ("overrides", "batching", "overload"),
    [
        pytest.param({}, {"max_batch_size": 64, "max_wait_ms": 2.0}, 64, id="defaults"),
        pytest.param(
            {"max_batch_size": 8, "max_wait_ms": 0.5},
            {"max_batch_size": 8, "max_wait_ms": 0.5},
            16,
            id="batching set",
        ),
        pytest.param(
            {"overload_concurrent_requests": 3},
            {"max_batch_size": 64, "max_wait_ms": 2.0},
            3,
            id="overload set",
        ),
    ],
)
def test_variants_report_the_batching_of_an_encoder_on_a_gpu(
    settings: Settings,
    overrides: dict[str, float],
    batching: dict[str, float],
    overload: int,
) -> None:
    # A session that really runs on CUDA: a batch costs about one input there.
    encoder = FakeTextEncoder(providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    app = create_app(settings.model_copy(update=overrides), encoder_factory=fake_factory(encoder))
    with TestClient(app) as client:
        wait_ready(client)
        body = client.get("/v1/variants").json()
    assert body["variants"][0]["tower_batching"] == {"text": batching}
    # A full batch per encoder thread (2), at most max_concurrent_requests (64).
    assert body["processes"]["overload_concurrent_requests"] == overload


def test_collections(client: TestClient) -> None:
    response = client.get("/v1/collections")
    assert response.status_code == 200
    assert response.json() == {
        "collections": [
            {
                "name": "captions",
                "qualified_name": "coco-captions:captions",
                "count": len(CAPTIONS),
                "dim": FAKE_DIM,
                "variant": FAKE_VARIANT,
                "bundle": "coco-captions",
                "bundle_version": "20260101T000000Z",
                "factory": "Flat",
                "metric": "ip",
                "index_device": "cpu",
                "fields": {
                    "filename": "string",
                    "image_id": "integer",
                    "sentid": "integer",
                    "text": "string",
                },
                "thumbnails": False,
                "index_kind": "flat",
                "search_params": {},
                "tuning": None,
                "on_disk": False,
            }
        ],
        "live": [],
        "sharded": [],
    }


def test_each_variant_reports_the_bundle_versions_it_serves(multimodal: Multimodal) -> None:
    variants = multimodal.client.get("/v1/variants").json()["variants"]
    assert {v["name"]: v["bundle_versions"] for v in variants} == {
        CLIP_VARIANT: {"coco-clip": "20260101T000000Z"},
        FAKE_VARIANT: {"coco-captions": "20260101T000000Z"},
        PIXELS_VARIANT: {"coco-pixels": "20260101T000000Z"},
    }


def test_collections_route_reports_the_device(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A faiss GPU build with one visible GPU (a fake: no GPU here) behind the loader's placement.
    gpu = FakeGpuFaiss(1)
    monkeypatch.setattr(
        service.lifecycle.loading, "place_index", functools.partial(place_index, module=gpu)
    )
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        (entry,) = client.get("/v1/collections").json()["collections"]
    assert entry["index_device"] == "gpu"
    assert len(gpu.clones) == 1


def test_an_image_item_has_a_cached_thumbnail(multimodal: Multimodal) -> None:
    client = multimodal.client
    listed = {c["qualified_name"]: c for c in client.get("/v1/collections").json()["collections"]}
    assert listed["coco-clip:images"]["thumbnails"] is True
    assert listed["coco-clip:captions"]["thumbnails"] is False
    url = f"/v1/thumbnails/coco-clip:images/{image_id(1)}"
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/jpeg"
    assert response.headers["cache-control"] == "private, max-age=3600"
    with Image.open(io.BytesIO(response.content)) as thumbnail:
        assert thumbnail.format == "JPEG"
        _, _, blue = thumbnail.getpixel((5, 5))  # type: ignore[misc]
        assert blue > 120  # IMAGE_COLOURS[1] is blue
    etag = response.headers["etag"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert client.get(url, headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_text_item_or_unknown_id_has_no_thumbnail(multimodal: Multimodal) -> None:
    client = multimodal.client
    text = client.get(f"/v1/thumbnails/coco-clip:captions/{caption_id(0)}")
    assert text.status_code == 404
    assert "has no thumbnail" in text.json()["error"]["message"]
    assert client.get("/v1/thumbnails/coco-clip:images/nope").status_code == 404

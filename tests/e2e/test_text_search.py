"""End to end: real uvicorn, real ONNX MiniLM, real faiss bundle of real COCO captions, HTTP."""

from __future__ import annotations

import httpx
import pytest

from formats.karpathy import CaptionRecord
from tests.e2e.conftest import LiveService

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# The first image of the Karpathy val split (COCO 184613): a child with an umbrella and yaks.
YAK_IMAGE_ID = 184613


def search(service: LiveService, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{service.url}/v1/search", json=body, timeout=30.0)


def test_a_caption_finds_itself_first(
    live_service: LiveService, real_captions: list[CaptionRecord]
) -> None:
    caption = real_captions[123]
    response = search(
        live_service, {"query": {"text": caption.text}, "collection": "captions", "k": 3}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    top = body["results"][0]
    assert top["id"] == caption.key
    assert top["rank"] == 1
    assert top["score"] == pytest.approx(1.0, abs=1e-3)
    assert top["metadata"]["text"] == caption.text
    assert body["variant"] == "minilm-l6-v2"
    assert body["bundle_version"]
    assert response.headers["x-request-id"]


def test_a_paraphrase_finds_captions_of_the_right_image(live_service: LiveService) -> None:
    response = search(
        live_service,
        {
            "query": {"text": "a kid with an umbrella petting a yak"},
            "collection": "captions",
            "k": 5,
        },
    )
    assert response.status_code == 200, response.text
    images = [result["metadata"]["image_id"] for result in response.json()["results"]]
    assert images[0] == YAK_IMAGE_ID
    assert images.count(YAK_IMAGE_ID) >= 2


def test_more_like_this_caption_excludes_the_query_item(
    live_service: LiveService, real_captions: list[CaptionRecord]
) -> None:
    query = real_captions[0]
    response = search(
        live_service,
        {
            "query": {"item": {"collection": "captions", "id": query.key}},
            "collection": "captions",
            "k": 10,
            "exclude": [query.key],
        },
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    ids = [result["id"] for result in results]
    assert query.key not in ids
    assert [result["rank"] for result in results] == list(range(1, 11))
    scores = [result["score"] for result in results]
    assert scores == sorted(scores, reverse=True)
    # A co-caption of the same image (a child with an umbrella among yaks) is the nearest.
    assert results[0]["metadata"]["image_id"] == YAK_IMAGE_ID


def test_score_agrees_with_search(
    live_service: LiveService, real_captions: list[CaptionRecord]
) -> None:
    left, right = real_captions[0], real_captions[1]
    response = httpx.post(
        f"{live_service.url}/v1/score",
        json={
            "pairs": [
                {
                    "left": {"text": left.text},
                    "right": {"item": {"collection": "captions", "id": right.key}},
                },
                {
                    "left": {"item": {"collection": "captions", "id": left.key}},
                    "right": {"text": left.text},
                },
            ]
        },
        timeout=30.0,
    )
    assert response.status_code == 200, response.text
    cross, same = response.json()["scores"]
    assert same == pytest.approx(1.0, abs=1e-3)
    found = search(
        live_service, {"query": {"text": left.text}, "collection": "captions", "k": 20}
    ).json()["results"]
    by_id = {result["id"]: result["score"] for result in found}
    if right.key in by_id:
        assert by_id[right.key] == pytest.approx(cross, abs=1e-4)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"query": {"text": ""}, "collection": "captions", "k": 5}, 422),
        ({"query": {"text": "dog"}, "collection": "captions", "k": 0}, 422),
        ({"query": {"text": "dog"}, "collection": "captions", "k": "5"}, 422),
        ({"query": {"text": "dog"}, "collection": "nope", "k": 5}, 404),
        (
            {
                "query": {"item": {"collection": "captions", "id": "missing"}},
                "collection": "captions",
            },
            404,
        ),
    ],
)
def test_bad_requests_get_their_status_in_the_error_shape(
    live_service: LiveService, body: dict[str, object], status: int
) -> None:
    response = search(live_service, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message", "request_id", "type", "param"}
    assert error["request_id"] == response.headers["x-request-id"]


def test_catalog_routes(live_service: LiveService, real_captions: list[CaptionRecord]) -> None:
    collections = httpx.get(f"{live_service.url}/v1/collections").json()["collections"]
    assert collections[0]["count"] == len(real_captions)
    variants = httpx.get(f"{live_service.url}/v1/variants").json()["variants"]
    assert variants[0]["providers"] == ["CPUExecutionProvider"]
    item = httpx.get(f"{live_service.url}/v1/items/captions/{real_captions[5].key}")
    assert item.status_code == 200, item.text
    assert item.json()["metadata"]["text"] == real_captions[5].text
    metrics = httpx.get(f"{live_service.url}/metrics").text
    assert "crisscross_requests_total" in metrics

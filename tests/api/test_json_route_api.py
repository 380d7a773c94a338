"""The JSON work routes' handler (service.http.routes.json_route): FastAPI's answers, in FastAPI's
order, from one validation of the body bytes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, Request
from fastapi.testclient import TestClient

from service.engine.collection.catalog import VariantEncoders
from service.http.app import create_app
from service.http.dependencies import ContextDep, StateDep
from service.http.routes.json_route import JsonRoute
from service.http.schemas.search import SearchRequest
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder

SEARCH = b'{"query": {"text": "a dog"}, "collection": "captions", "k": 2}'
JSON = {"content-type": "application/json"}


def error_of(response: Any) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        (SEARCH, {"content-type": "text/plain"}, (415, "unsupported_media_type")),
        (b"{not json", {"content-type": "text/plain"}, (415, "unsupported_media_type")),
        (b"{not json", JSON, (422, "invalid_input")),
        (b'{"k": "many"}', JSON, (503, "not_ready")),  # the schema is judged after readiness
        (b"", JSON, (503, "not_ready")),
    ],
)
def test_checks_run_in_fastapi_s_order_while_loading(
    settings: Settings, body: bytes, headers: dict[str, str], expected: tuple[int, str]
) -> None:
    release = threading.Event()

    def slow_factory(_variant_dir: Path, _settings: Settings) -> VariantEncoders:
        release.wait(timeout=10)
        return VariantEncoders(text=FakeTextEncoder())

    app = create_app(settings, encoder_factory=slow_factory)
    try:
        with TestClient(app) as client:
            status, code, _ = error_of(client.post("/v1/search", content=body, headers=headers))
            assert (status, code) == expected
    finally:
        release.set()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "body: Field required"),
        (b"{not json", "body is not valid JSON"),
        (b"[]", "body: Input should be an object"),
        (b'{"query": {"text": "a dog"}, "collection": "captions", "k": 0}', "k: "),
        # json.loads reads these where pydantic's parser stops: answered as FastAPI answered.
        (b'{"query": {"text": "dog \\ud800"}, "collection": "captions"}', "surrogate"),
        (b'{"query": {"vector": [NaN, 1.0]}, "collection": "captions"}', "query.vector"),
    ],
)
def test_bodies_that_do_not_fit_get_the_422_that_names_the_field(
    client: TestClient, body: bytes, message: str
) -> None:
    status, code, text = error_of(client.post("/v1/search", content=body, headers=JSON))
    assert (status, code) == (422, "invalid_input")
    assert message in text


def test_a_utf16_body_is_read_like_fastapi_read_it(client: TestClient) -> None:
    body = SEARCH.decode().encode("utf-16")
    assert client.post("/v1/search", content=body, headers=JSON).status_code == 200


def test_an_endpoint_it_cannot_call_fails_the_app_s_construction_not_a_request() -> None:
    router = APIRouter(route_class=JsonRoute)

    async def takes_the_request(body: SearchRequest, request: Request) -> None:  # noqa: ARG001
        return None

    with pytest.raises(TypeError, match="cannot supply parameter 'request'"):
        router.post("/x")(takes_the_request)

    async def no_body(state: StateDep, context: ContextDep) -> None:  # noqa: ARG001
        return None

    with pytest.raises(TypeError, match="JSON body"):
        router.post("/y")(no_body)

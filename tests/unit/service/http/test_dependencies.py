"""The routes' dependencies: the content-type checks (415 naming what came) and the live catalog
(503 not_ready until there is one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request

from service.exceptions import NotReadyError
from service.http.dependencies import (
    ready_catalog_of,
    refuse_unless_json,
    request_context_of,
    require_multipart,
)
from service.http.errors import ErrorCode, ServiceError
from service.lifecycle.state import ServiceState
from service.metrics import ServiceMetrics
from service.request_context import SCOPE_KEY, RequestContext
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory


def request(content_type: str | None) -> Request:
    headers = [] if content_type is None else [(b"content-type", content_type.encode())]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers})


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "Application/JSON; charset=utf-8", "application/problem+json"],
)
def test_json_bodies_pass(content_type: str) -> None:
    refuse_unless_json(request(content_type))


@pytest.mark.parametrize(
    ("content_type", "shown"), [("text/plain", "'text/plain'"), (None, "none")]
)
def test_other_bodies_get_415_naming_what_came(content_type: str | None, shown: str) -> None:
    with pytest.raises(ServiceError) as caught:
        refuse_unless_json(request(content_type))
    assert caught.value.code is ErrorCode.UNSUPPORTED_MEDIA_TYPE
    assert f"(got {shown})" in caught.value.message


def test_the_upload_route_takes_multipart_only() -> None:
    require_multipart(request("multipart/form-data; boundary=x"))
    with pytest.raises(ServiceError, match="send JSON with base64 images to /v1/search"):
        require_multipart(request("application/json"))


def test_no_catalog_is_503_not_ready(tmp_path: Path) -> None:
    state = ServiceState(
        settings=Settings(bundles_root=tmp_path, variants_root=tmp_path),
        metrics=ServiceMetrics(),
        encoder_factory=fake_factory(FakeTextEncoder()),
    )
    with pytest.raises(NotReadyError, match="still loading"):
        ready_catalog_of(state)


def test_the_request_context_is_the_middleware_s_or_a_fresh_one() -> None:
    context = RequestContext("given")
    assert request_context_of({SCOPE_KEY: context}) is context
    assert request_context_of({}).request_id

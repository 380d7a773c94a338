"""API keys (read and admin, Bearer or x-api-key, constant-time, never logged) and CORS."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import caption_id
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

READ_KEY = "read-key-0123456789abcdef"
OTHER_READ_KEY = "read-key-fedcba9876543210"
ADMIN_KEY = "admin-key-0123456789abcdef"
WRONG_KEY = "wrong-key-0123456789abcdef"
SEARCH = {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 2}
ORIGIN = "https://app.example.com"


def keyed_settings(bundles_root: Path, variants_root: Path, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "bundles_root": bundles_root,
        "variants_root": variants_root,
        "read_keys": [READ_KEY, OTHER_READ_KEY],
        "admin_keys": [ADMIN_KEY],
        "admin_reload": True,
    }
    values.update(changes)
    return Settings(**values)


@pytest.fixture
def keyed(bundles_root: Path, variants_root: Path) -> Iterator[TestClient]:
    settings = keyed_settings(bundles_root, variants_root)
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        yield client


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def test_a_data_route_without_a_key_is_401_with_a_challenge(keyed: TestClient) -> None:
    response = keyed.post("/v1/search", json=SEARCH, headers={"x-request-id": "auth-1"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json() == {
        "error": {
            "code": "unauthorized",
            "message": response.json()["error"]["message"],
            "request_id": "auth-1",
            "type": "authentication_error",
            "param": None,
        }
    }
    assert "Authorization: Bearer" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "headers",
    [
        bearer(WRONG_KEY),
        {"x-api-key": WRONG_KEY},
        bearer(READ_KEY[:-1]),
        bearer(READ_KEY + "x"),
        bearer(READ_KEY.upper()),
    ],
    ids=["bearer", "x-api-key", "prefix", "longer", "case"],
)
def test_a_wrong_key_is_403(keyed: TestClient, headers: dict[str, str]) -> None:
    response = keyed.post("/v1/search", json=SEARCH, headers=headers)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert "www-authenticate" not in response.headers


@pytest.mark.parametrize(
    "headers",
    [
        bearer(READ_KEY),
        bearer(OTHER_READ_KEY),
        {"authorization": f"bearer   {READ_KEY}  "},
        {"x-api-key": READ_KEY},
        bearer(ADMIN_KEY),
        {"x-api-key": ADMIN_KEY},
    ],
    ids=["bearer", "second key", "lowercase scheme", "x-api-key", "admin", "admin x-api-key"],
)
def test_read_and_admin_keys_open_the_data_routes(
    keyed: TestClient, headers: dict[str, str]
) -> None:
    assert keyed.post("/v1/search", json=SEARCH, headers=headers).status_code == 200
    assert keyed.get("/v1/collections", headers=headers).status_code == 200
    assert keyed.get(f"/v1/items/captions/{caption_id(0)}", headers=headers).status_code == 200


def test_another_authorization_scheme_presents_no_key(keyed: TestClient) -> None:
    response = keyed.get("/v1/variants", headers={"authorization": f"Basic {READ_KEY}"})
    assert response.status_code == 401


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"])
def test_probes_metrics_and_docs_stay_open(keyed: TestClient, path: str) -> None:
    assert keyed.get(path).status_code == 200


def test_unknown_routes_need_a_key_too(keyed: TestClient) -> None:
    # Deny by default: without a key nobody learns which routes exist.
    assert keyed.get("/v1/nothing").status_code == 401
    assert keyed.get("/v1/nothing", headers=bearer(READ_KEY)).status_code == 404


def test_the_key_is_checked_before_the_body_is_read(keyed: TestClient) -> None:
    huge = b"x" * ((1 << 20) + 10)
    response = keyed.post("/v1/embed", content=huge, headers={"content-type": "application/json"})
    assert response.status_code == 401
    assert response.headers["connection"] == "close"
    malformed = keyed.post(
        "/v1/search", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 401


def test_admin_routes_need_an_admin_key(keyed: TestClient) -> None:
    assert keyed.post("/v1/admin/reload").status_code == 401
    as_reader = keyed.post("/v1/admin/reload", headers=bearer(READ_KEY))
    assert as_reader.status_code == 403
    assert "admin key" in as_reader.json()["error"]["message"]
    assert keyed.post("/v1/admin/reload", headers=bearer(WRONG_KEY)).status_code == 403
    assert keyed.post("/v1/admin/reload", headers=bearer(ADMIN_KEY)).status_code == 200
    # A read key and an admin key together: the admin key counts.
    both = {**bearer(READ_KEY), "x-api-key": ADMIN_KEY}
    assert keyed.post("/v1/admin/reload", headers=both).status_code == 200


def test_admin_routes_are_closed_without_admin_keys(client: TestClient) -> None:
    response = client.post("/v1/admin/reload", headers=bearer(ADMIN_KEY))
    assert response.status_code == 403
    assert "no admin_keys" in response.json()["error"]["message"]


def test_without_read_keys_data_routes_are_open_but_admin_routes_are_not(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = keyed_settings(bundles_root, variants_root, read_keys=[])
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        assert client.post("/v1/search", json=SEARCH).status_code == 200
        assert client.post("/v1/admin/reload").status_code == 401
        assert client.post("/v1/admin/reload", headers=bearer(ADMIN_KEY)).status_code == 200


def test_refusals_are_counted_and_keys_never_logged(
    keyed: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    keyed.post("/v1/search", json=SEARCH)
    keyed.post("/v1/search", json=SEARCH, headers=bearer(WRONG_KEY))
    keyed.post("/v1/search", json=SEARCH, headers=bearer(READ_KEY))
    keyed.post("/v1/admin/reload", headers={"x-api-key": ADMIN_KEY})
    metrics = keyed.get("/metrics").text
    assert 'crisscross_requests_refused_total{reason="unauthorized"} 1.0' in metrics
    assert 'crisscross_requests_refused_total{reason="forbidden"} 1.0' in metrics
    for key in (READ_KEY, ADMIN_KEY, WRONG_KEY):
        assert key not in caplog.text
        assert key not in metrics
    access = [r.getMessage() for r in caplog.records if r.name == "crisscross.access"]
    assert any("status=401" in line for line in access)


def test_settings_never_show_a_key(bundles_root: Path, variants_root: Path) -> None:
    settings = keyed_settings(bundles_root, variants_root)
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert READ_KEY not in text
        assert ADMIN_KEY not in text


def test_openapi_documents_the_key_schemes(keyed: TestClient) -> None:
    schema = keyed.get("/openapi.json").json()
    assert set(schema["components"]["securitySchemes"]) == {"bearerKey", "apiKeyHeader"}
    assert schema["paths"]["/v1/search"]["post"]["security"] == [
        {"bearerKey": []},
        {"apiKeyHeader": []},
    ]
    assert "security" not in schema["paths"]["/healthz"]["get"]
    assert "401" in schema["paths"]["/v1/search"]["post"]["responses"]


# -- CORS -----------------------------------------------------------------------------------------


@pytest.fixture
def cors(bundles_root: Path, variants_root: Path) -> Iterator[TestClient]:
    settings = keyed_settings(bundles_root, variants_root, cors_origins=[ORIGIN])
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        yield client


def test_a_preflight_from_an_allowed_origin_needs_no_key(cors: TestClient) -> None:
    response = cors.options(
        "/v1/search",
        headers={
            "origin": ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "access-control-allow-credentials" not in response.headers


def test_a_refused_preflight_answers_in_the_error_shape(cors: TestClient) -> None:
    response = cors.options(
        "/v1/search",
        headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert "origin" in response.json()["error"]["message"]
    assert "access-control-allow-origin" not in response.headers


def test_cors_headers_reach_answers_and_refusals(cors: TestClient) -> None:
    answered = cors.post("/v1/search", json=SEARCH, headers={"origin": ORIGIN, **bearer(READ_KEY)})
    assert answered.status_code == 200
    assert answered.headers["access-control-allow-origin"] == ORIGIN
    assert "x-request-id" in answered.headers["access-control-expose-headers"]
    refused = cors.post("/v1/search", json=SEARCH, headers={"origin": ORIGIN})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == ORIGIN
    other = cors.post("/v1/search", json=SEARCH, headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_without_cors_origins_no_cors_headers_are_sent(client: TestClient) -> None:
    response = client.post("/v1/search", json=SEARCH, headers={"origin": ORIGIN})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers

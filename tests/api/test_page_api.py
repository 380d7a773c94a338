"""GET / (the search page) and GET /ui/{asset}: the package's own files, a Content-Security-Policy
that allows nothing from elsewhere, open without a key (the page asks for one), unknown assets
404. The page itself runs in a real browser in tests/e2e/test_search_page.py."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

KEY = "page-api-read-key-0123456789"


def test_the_page_and_its_assets_are_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "unsafe" not in policy
    assert '<script src="/ui/app.js"' in page.text
    assert "http://" not in page.text
    assert "https://" not in page.text
    script = client.get("/ui/app.js")
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "innerHTML" not in script.text  # data goes in as text, never as markup
    assert client.get("/ui/app.css").headers["content-type"] == "text/css; charset=utf-8"


@pytest.mark.parametrize("asset", ["nope.js", "..%2Fapp.py", "index.html"])
def test_only_the_pages_own_assets_are_served(client: TestClient, asset: str) -> None:
    response = client.get(f"/ui/{asset}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_page_opens_without_a_key_but_the_api_does_not(
    settings: Settings, encoder: FakeTextEncoder
) -> None:
    keyed = Settings(**{**settings.model_dump(), "read_keys": [KEY]})
    with TestClient(create_app(keyed, encoder_factory=fake_factory(encoder))) as client:
        wait_ready(client)
        assert client.get("/").status_code == 200
        assert client.get("/ui/app.js").status_code == 200
        assert client.get("/v1/collections").status_code == 401
        authorised = client.get("/v1/collections", headers={"Authorization": f"Bearer {KEY}"})
        assert authorised.status_code == 200

"""The integrations against the real app: the service's app (fake bag-of-words text encoder, the
fake captions bundle, live collections on) served by uvicorn on a loopback port in a thread of
the test process, once for the folder; each test makes collections of its own names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import clear_service_env
from tests.fakes.socket_server import serve_on_socket

VARIANT = FAKE_VARIANT
"""The served variant (64-dimensional bags of words: texts sharing words are near)."""


@dataclass(frozen=True)
class Served:
    """The served app's root and its text encoder (whose ``calls`` record every text it
    embedded)."""

    url: str
    encoder: FakeTextEncoder


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A served app with live collections (no keys)."""
    root = tmp_path_factory.mktemp("integrations")
    write_fake_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    with pytest.MonkeyPatch.context() as environment:
        clear_service_env(environment)  # a developer's CRISSCROSS_* must not change the app
        settings = Settings(
            bundles_root=root / "bundles",
            variants_root=root / "variants",
            collections_dir=root / "collections",
        )
    encoder = FakeTextEncoder()
    app = create_app(settings, encoder_factory=fake_factory(encoder))
    with serve_on_socket(app, settings) as server:
        yield Served(f"http://127.0.0.1:{server.port}", encoder)


@pytest.fixture
def service_url(served: Served) -> str:
    """The served app's root."""
    return served.url


@pytest.fixture
def collection_name() -> str:
    """A collection name no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"

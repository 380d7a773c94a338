"""ServiceState: why there is no catalog (loading, failed, draining), and the private copies of
versions no longer served let go."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.exceptions import NotReadyError
from service.lifecycle.loading import load_catalog
from service.lifecycle.state import ServiceState, publish_catalog
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.private_copies import PrivateCopies
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    (tmp_path / "variants" / FAKE_VARIANT).mkdir(parents=True)
    return Settings(
        bundles_root=tmp_path / "bundles",
        variants_root=tmp_path / "variants",
        not_ready_retry_after_s=7,
    )


def state_of(settings: Settings) -> ServiceState:
    return ServiceState(
        settings=settings, metrics=ServiceMetrics(), encoder_factory=fake_factory(FakeTextEncoder())
    )


def test_not_ready_says_why_and_when_to_retry(settings: Settings) -> None:
    state = state_of(settings)
    loading = state.not_ready_error()
    assert isinstance(loading, NotReadyError)
    assert (loading.message, loading.retry_after_s) == (
        "not ready: bundles and encoders are still loading",
        7,
    )
    state.load_error = "a fingerprint mismatch"
    assert state.not_ready_error().message == "not ready: loading failed: a fingerprint mismatch"
    state.start_draining()
    assert state.not_ready_error().message == "not ready: shutting down"


def test_published_catalog_keeps_its_copies_and_drops_the_rest(
    settings: Settings, tmp_path: Path
) -> None:
    state = state_of(settings)
    state.copies = PrivateCopies(tmp_path / "copies")
    catalog = load_catalog(settings, state.encoder_factory, state.metrics, state.copies)
    publish_catalog(state, catalog)
    served = state.copies.copy_of(settings.bundles_root / "coco-captions" / "v1")
    stray = state.copies.adopt(write_fake_bundle(settings.bundles_root, version="v2"))
    state.release_unserved_copies()
    assert served.is_dir()
    assert not stray.exists()
    state.copies.close()

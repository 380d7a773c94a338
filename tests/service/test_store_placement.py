"""The store places each collection's faiss index by ``faiss_device`` at load and at reload, and
``/v1/collections`` reports where it searches (a fake faiss GPU build; no GPU here)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import service.store
from service.app import create_app
from service.index_placement import GpuSearchIndex, place_index
from service.settings import Settings
from service.store import StoreLoadError, load_store, reload_bundles
from tests.service.conftest import wait_ready
from tests.service.fake_faiss import FakeGpuFaiss
from tests.service.fakes import (
    CAPTIONS,
    FAKE_VARIANT,
    FakeTextEncoder,
    caption_id,
    embed_bag_of_words,
    fake_factory,
    write_fake_bundle,
)


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    variants = tmp_path / "variants"
    (variants / FAKE_VARIANT).mkdir(parents=True, exist_ok=True)
    return Settings(bundles_root=tmp_path / "bundles", variants_root=variants, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpuFaiss:
    """A faiss GPU build with one visible GPU behind the store's placement."""
    module = FakeGpuFaiss(1)
    monkeypatch.setattr(service.store, "place_index", functools.partial(place_index, module=module))
    return module


def test_this_machine_serves_from_cpu_and_refuses_a_required_gpu(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    store = load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))
    (served,) = store.collections
    assert served.index_device == "cpu"
    assert not isinstance(served.collection.index, GpuSearchIndex)
    with pytest.raises(StoreLoadError, match=r"coco-captions@.*'captions'.*faiss_device=gpu"):
        load_store(settings_for(tmp_path, faiss_device="gpu"), fake_factory(FakeTextEncoder()))


def test_a_visible_gpu_serves_the_index_and_search_runs_there(
    tmp_path: Path, fake_gpu: FakeGpuFaiss
) -> None:
    write_fake_bundle(tmp_path / "bundles")
    store = load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))
    (served,) = store.collections
    assert served.index_device == "gpu"
    assert isinstance(served.collection.index, GpuSearchIndex)
    hits = store.search(served, embed_bag_of_words(CAPTIONS[1]), k=3)
    assert [hit.item_id for hit in hits[:2]] == [caption_id(1), caption_id(4)]
    assert served.collection.index.gpu.searches != []
    assert len(fake_gpu.clones) == 1


def test_faiss_device_cpu_keeps_the_gpu_unused(tmp_path: Path, fake_gpu: FakeGpuFaiss) -> None:
    write_fake_bundle(tmp_path / "bundles")
    settings = settings_for(tmp_path, faiss_device="cpu")
    (served,) = load_store(settings, fake_factory(FakeTextEncoder())).collections
    assert served.index_device == "cpu"
    assert fake_gpu.clones == []


def test_a_reloaded_version_is_placed_too(tmp_path: Path, fake_gpu: FakeGpuFaiss) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    store = load_store(settings, fake_factory(FakeTextEncoder()))
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    reloaded, _ = reload_bundles(store, settings)
    (served,) = reloaded.collections
    assert (served.bundle_version, served.index_device) == ("v2", "gpu")
    assert len(fake_gpu.clones) == 2


@pytest.mark.usefixtures("fake_gpu")
def test_collections_route_reports_the_device(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    app = create_app(settings_for(tmp_path), encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        (entry,) = client.get("/v1/collections").json()["collections"]
    assert entry["index_device"] == "gpu"

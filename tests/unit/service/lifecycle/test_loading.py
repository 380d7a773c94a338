"""Loading the catalog and reloading bundles (service.lifecycle.loading): what is served, each
variant's batchers, the refusals that keep a bad deployment from serving, the placement of each
index by ``faiss_device`` (a fake faiss GPU build; no GPU here), and all-or-nothing reloads."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import pytest

import service.lifecycle.loading
from service.engine.collection.catalog import Catalog, StoreLoadError
from service.engine.collection.knn import nearest
from service.engine.rank.gpu_index import GpuSearchIndex
from service.exceptions import BundleRejectedError, InvalidQueryError, NotFoundError
from service.lifecycle.index_placement import place_index
from service.lifecycle.loading import BundleChange, load_catalog, reload_bundles
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.manifest import BundleError
from storage.reader import LoadedBundle, load_bundle
from storage.writer import set_current
from tests.fakes.fake_bundles import CAPTIONS, caption_id, write_fake_bundle
from tests.fakes.fake_encoders import (
    FAKE_VARIANT,
    FakeImageEncoder,
    FakeTextEncoder,
    embed_bag_of_words,
    fake_factory,
)
from tests.fakes.fake_faiss import FakeGpuFaiss


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    variants = tmp_path / "variants"
    (variants / FAKE_VARIANT).mkdir(parents=True, exist_ok=True)
    return Settings(bundles_root=tmp_path / "bundles", variants_root=variants, **overrides)  # type: ignore[arg-type]


def load(settings: Settings, encoder: FakeTextEncoder | None = None) -> Catalog:
    """The catalog of ``settings`` served by a fake text encoder."""
    return load_catalog(settings, fake_factory(encoder or FakeTextEncoder()), ServiceMetrics())


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpuFaiss:
    """A faiss GPU build with one visible GPU behind the loader's placement."""
    module = FakeGpuFaiss(1)
    monkeypatch.setattr(
        service.lifecycle.loading, "place_index", functools.partial(place_index, module=module)
    )
    return module


# -- loading ----------------------------------------------------------------------------------


def test_load_serves_the_current_version_with_real_faiss(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    catalog = load(settings_for(tmp_path))
    (served,) = catalog.collections
    assert (served.bundle, served.bundle_version, served.collection.count) == (
        "coco-captions",
        "v2",
        5,
    )
    variant = catalog.resolve_variant(None)
    assert variant.name == FAKE_VARIANT
    assert variant.is_default
    hits = nearest(served, embed_bag_of_words(CAPTIONS[1]), k=5)
    # Rows 1 and 4 hold the same caption: equal scores, row ascending.
    assert [hit.item_id for hit in hits[:2]] == [caption_id(1), caption_id(4)]
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)


def test_each_variant_gets_a_batcher_per_tower_under_the_settings_limits(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    settings = settings_for(
        tmp_path,
        max_batch_size=5,
        max_wait_ms=7.0,
        max_queue_depth=9,
        overload_retry_after_s=4,
        encoder_workers=2,
    )
    variant = load(settings).resolve_variant(None)
    (batcher,) = variant.batchers
    assert batcher is variant.text_batcher
    assert variant.batchers_by_tower == {"text": batcher}
    assert (batcher.variant, batcher.tower) == (FAKE_VARIANT, "text")
    limits = batcher.limits
    assert (limits.max_batch_size, limits.max_wait_s, limits.max_queue_depth) == (5, 0.007, 9)
    assert (limits.retry_after_s, limits.workers) == (4, 2)
    assert variant.image_batcher is None


@pytest.mark.parametrize(
    ("providers", "batch", "wait_s"),
    [
        pytest.param(["CPUExecutionProvider"], 16, 0.0, id="cpu"),
        pytest.param(["CUDAExecutionProvider", "CPUExecutionProvider"], 64, 0.002, id="cuda"),
    ],
)
def test_unset_batching_follows_where_each_tower_really_runs(
    tmp_path: Path, providers: list[str], batch: int, wait_s: float
) -> None:
    write_fake_bundle(tmp_path / "bundles")
    settings = settings_for(tmp_path, encoder_workers=3)
    variant = load(settings, FakeTextEncoder(providers=providers)).resolve_variant(None)
    limits = variant.batchers_by_tower["text"].limits
    assert (limits.max_batch_size, limits.max_wait_s, limits.workers) == (batch, wait_s, 3)


def test_fingerprint_mismatch_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", fingerprint="cd" * 32)
    with pytest.raises(StoreLoadError, match=r"fingerprint .*cdcd.*abab"):
        load(settings_for(tmp_path))


def test_dimension_mismatch_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", dim=32)
    with pytest.raises(StoreLoadError, match="dimension 32"):
        load(settings_for(tmp_path))


def test_variant_folder_must_exist(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", variant_name="other-variant")
    with pytest.raises(StoreLoadError, match=r"other-variant.*is not a folder"):
        load(settings_for(tmp_path))


def test_encoder_must_be_the_variant_the_bundle_names(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    with pytest.raises(StoreLoadError, match="holds variant 'impostor'"):
        load(settings_for(tmp_path), FakeTextEncoder(name="impostor"))


def test_one_collection_name_in_two_bundles_is_served_under_both_qualified_names(
    tmp_path: Path,
) -> None:
    write_fake_bundle(tmp_path / "bundles", "first")
    write_fake_bundle(tmp_path / "bundles", "second")
    catalog = load(settings_for(tmp_path))
    assert [c.qualified_name for c in catalog.collections] == ["first:captions", "second:captions"]


def test_unknown_default_variant_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    with pytest.raises(StoreLoadError, match="default_variant 'nope'"):
        load(settings_for(tmp_path, default_variant="nope"))


def test_tampered_bundle_is_refused(tmp_path: Path) -> None:
    version_dir = write_fake_bundle(tmp_path / "bundles")
    ids_file = version_dir / "captions.ids.jsonl"
    rows = ids_file.read_text(encoding="utf-8").splitlines()
    rows[0] = json.dumps({"id": caption_id(0), "text": "tampered"})
    ids_file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(BundleError, match="sha256"):
        load(settings_for(tmp_path))


def test_load_serves_an_image_only_variant(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", captions=False, images=True)
    catalog = load_catalog(
        settings_for(tmp_path), fake_factory(image=FakeImageEncoder()), ServiceMetrics()
    )
    (served,) = catalog.collections
    assert (served.name, served.collection.count) == ("images", 6)
    variant = catalog.resolve_variant(None)
    assert variant.towers == ["image"]
    assert variant.batchers == [variant.image_batcher]
    catalog.require_tower(variant, "image", "query.image")
    no_text = r"query.text: .* no text tower .*no loaded variant"
    with pytest.raises(InvalidQueryError, match=no_text):
        catalog.require_tower(variant, "text", "query.text")


def test_an_image_tower_of_other_weights_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", captions=False, images=True)
    with pytest.raises(StoreLoadError, match="fingerprint"):
        load_catalog(
            settings_for(tmp_path),
            fake_factory(image=FakeImageEncoder(fingerprint="ee" * 32)),
            ServiceMetrics(),
        )


@pytest.mark.parametrize(
    ("params", "reason"),
    [({"nprobe": 4}, "does not apply to its index"), ({"nprobe": "4"}, "only numeric")],
)
def test_a_search_parameter_the_index_cannot_take_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    params: dict[str, float | int | str],
    reason: str,
) -> None:
    write_fake_bundle(tmp_path / "bundles")

    def with_params(version_dir: Path, *, verify: bool) -> LoadedBundle:
        bundle = load_bundle(version_dir, verify=verify)
        collections = {
            name: dataclasses.replace(collection, search_params=params)
            for name, collection in bundle.collections.items()
        }
        return dataclasses.replace(bundle, collections=collections)

    monkeypatch.setattr(service.lifecycle.loading, "load_bundle", with_params)
    with pytest.raises(StoreLoadError, match=rf"'captions' search parameter nprobe=.*{reason}"):
        load(settings_for(tmp_path))


# -- placement --------------------------------------------------------------------------------


def test_this_machine_serves_from_cpu_and_refuses_a_required_gpu(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    (served,) = load(settings_for(tmp_path)).collections
    assert served.index_device == "cpu"
    assert not isinstance(served.collection.index, GpuSearchIndex)
    with pytest.raises(StoreLoadError, match=r"coco-captions@.*'captions'.*faiss_device=gpu"):
        load(settings_for(tmp_path, faiss_device="gpu"))


def test_a_visible_gpu_serves_the_index_and_search_runs_there(
    tmp_path: Path, fake_gpu: FakeGpuFaiss
) -> None:
    write_fake_bundle(tmp_path / "bundles")
    (served,) = load(settings_for(tmp_path)).collections
    assert served.index_device == "gpu"
    assert isinstance(served.collection.index, GpuSearchIndex)
    hits = nearest(served, embed_bag_of_words(CAPTIONS[1]), k=3)
    assert [hit.item_id for hit in hits[:2]] == [caption_id(1), caption_id(4)]
    assert served.collection.index.gpu.searches != []
    assert len(fake_gpu.clones) == 1


def test_faiss_device_cpu_keeps_the_gpu_unused(tmp_path: Path, fake_gpu: FakeGpuFaiss) -> None:
    write_fake_bundle(tmp_path / "bundles")
    (served,) = load(settings_for(tmp_path, faiss_device="cpu")).collections
    assert served.index_device == "cpu"
    assert fake_gpu.clones == []


def test_a_reloaded_version_is_placed_too(tmp_path: Path, fake_gpu: FakeGpuFaiss) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    reloaded, _ = reload_bundles(catalog, settings)
    (served,) = reloaded.collections
    assert (served.bundle_version, served.index_device) == ("v2", "gpu")
    assert len(fake_gpu.clones) == 2


# -- reloading --------------------------------------------------------------------------------


def test_a_reload_builds_a_new_catalog_and_leaves_the_served_one_alone(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    reloaded, changes = reload_bundles(catalog, settings)
    assert changes == [BundleChange("coco-captions", "v1", "v2")]
    assert changes[0].changed
    assert reloaded.bundle_versions == {"coco-captions": "v2"}
    assert catalog.bundle_versions == {"coco-captions": "v1"}
    # The variants, and so their encoders and batchers, carry over.
    assert reloaded.variants == catalog.variants


def test_a_reload_without_changes_returns_the_served_catalog(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    reloaded, changes = reload_bundles(catalog, settings)
    assert reloaded is catalog
    assert changes == [BundleChange("coco-captions", "v1", "v1")]
    assert not changes[0].changed


def test_a_named_version_is_loaded_even_if_not_current(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    set_current(tmp_path / "bundles" / "coco-captions", "v2")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    back, _ = reload_bundles(catalog, settings, bundle="coco-captions", version="v1")
    assert back.bundle_versions == {"coco-captions": "v1"}


def test_an_unknown_bundle_or_version_is_not_found(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    with pytest.raises(NotFoundError, match=r"bundle 'nope' is not served; served: coco-captions"):
        reload_bundles(catalog, settings, bundle="nope")
    with pytest.raises(NotFoundError, match=r"bundle 'coco-captions' has no version 'v9'"):
        reload_bundles(catalog, settings, bundle="coco-captions", version="v9")


def test_a_corrupt_version_is_rejected_and_nothing_is_loaded(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    version_dir = write_fake_bundle(tmp_path / "bundles", version="v2")
    (version_dir / "captions.vectors.npy").write_bytes(b"not the vectors")
    message = r"bundle coco-captions@v2 refused, the served version keeps serving: .*sha256"
    with pytest.raises(BundleRejectedError, match=message):
        reload_bundles(catalog, settings)
    assert catalog.bundle_versions == {"coco-captions": "v1"}


def test_a_version_of_an_unloaded_variant_is_rejected(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    write_fake_bundle(tmp_path / "bundles", version="v2", variant_name="stranger")
    with pytest.raises(BundleRejectedError, match="variant 'stranger', which this server has not"):
        reload_bundles(catalog, settings)


def test_a_version_of_other_weights_is_rejected(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    settings = settings_for(tmp_path)
    catalog = load(settings)
    write_fake_bundle(tmp_path / "bundles", version="v2", fingerprint="cd" * 32)
    with pytest.raises(BundleRejectedError, match=r"coco-captions@v2 refused.*fingerprint"):
        reload_bundles(catalog, settings)

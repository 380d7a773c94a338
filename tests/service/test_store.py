"""The live index store: tie rule, exclusion, clamping, NaN guard, and refusal at load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from index_builder.bundle import BundleError, LoadedCollection
from service.errors import ErrorCode, ServiceError
from service.settings import Settings
from service.store import (
    LiveIndexStore,
    ServedCollection,
    ServedVariant,
    StoreLoadError,
    VariantEncoders,
    load_store,
)
from tests.service.fakes import (
    CAPTIONS,
    COLOURS,
    FAKE_DIM,
    FAKE_VARIANT,
    FakeImageEncoder,
    FakeTextEncoder,
    caption_id,
    embed_bag_of_words,
    fake_factory,
    write_fake_bundle,
)


class AdversarialTieIndex:
    """Exact inner-product search that breaks ties by *highest* row first and so cuts runs of
    equal scores the wrong way — what an approximate or multi-threaded faiss index may do."""

    def __init__(self, vectors: npt.NDArray[np.float32]) -> None:
        self.vectors = vectors
        self.ntotal = len(vectors)
        self.fetches: list[int] = []

    def search(
        self, queries: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        self.fetches.append(k)
        scores = self.vectors @ queries[0]
        rows = np.arange(self.ntotal)
        order = np.lexsort((-rows, -scores))[:k]
        return scores[order][None, :], rows[order][None, :].astype(np.int64)


def served_with(vectors: npt.NDArray[np.float32], index: object) -> ServedCollection:
    ids = [f"item-{row}" for row in range(len(vectors))]
    collection = LoadedCollection(
        name="captions",
        index=index,
        ids=ids,
        row_of={item: row for row, item in enumerate(ids)},
        metadata=[{"row": row} for row in range(len(vectors))],
        vectors=vectors,
        factory="Flat",
        metric="ip",
    )
    return ServedCollection(variant="v", bundle="b", bundle_version="1", collection=collection)


def tie_corpus() -> npt.NDArray[np.float32]:
    """Rows 2..9 equal (the query's direction), the rest orthogonal-ish and lower."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((12, 8)).astype(np.float32)
    vectors[:, 0] = 0.0
    vectors[2:10] = 0.0
    vectors[2:10, 0] = 1.0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


QUERY = np.eye(8, dtype=np.float32)[0]


def test_ties_are_broken_by_row_ascending_even_across_the_cut() -> None:
    vectors = tie_corpus()
    index = AdversarialTieIndex(vectors)
    hits = LiveIndexStore.search(served_with(vectors, index), QUERY, k=3)
    assert [hit.row for hit in hits] == [2, 3, 4]
    assert [hit.rank for hit in hits] == [1, 2, 3]
    assert len(index.fetches) > 1, "the run of ties crossing k must make the store fetch more"


def test_exclusion_fetches_past_the_excluded_rows() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    hits = LiveIndexStore.search(served, QUERY, k=3, exclude={"item-2", "item-4", "unknown"})
    assert [hit.item_id for hit in hits] == ["item-3", "item-5", "item-6"]


def test_k_beyond_the_collection_returns_every_remaining_row_in_order() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    hits = LiveIndexStore.search(served, QUERY, k=1000, exclude={"item-0"})
    assert len(hits) == 11
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert [hit.row for hit in hits][:8] == list(range(2, 10))


def test_excluding_everything_returns_nothing() -> None:
    vectors = tie_corpus()
    served = served_with(vectors, AdversarialTieIndex(vectors))
    everything = {f"item-{row}" for row in range(12)}
    assert LiveIndexStore.search(served, QUERY, k=5, exclude=everything) == []


def test_a_nan_query_never_reaches_faiss() -> None:
    vectors = tie_corpus()
    index = AdversarialTieIndex(vectors)
    query = QUERY.copy()
    query[3] = np.nan
    with pytest.raises(ServiceError) as raised:
        LiveIndexStore.search(served_with(vectors, index), query, k=3)
    assert raised.value.code is ErrorCode.INVALID_INPUT
    assert index.fetches == []


def test_encode_refuses_non_finite_embeddings() -> None:
    encoder = FakeTextEncoder(nan_texts=frozenset({"broken"}))
    variant = ServedVariant(FAKE_VARIANT, VariantEncoders(text=encoder), Path("."), is_default=True)
    with pytest.raises(ServiceError, match="text #1 cannot be embedded"):
        LiveIndexStore.encode_texts(variant, ["fine", "broken"])


# -- loading ----------------------------------------------------------------------------------


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    variants = tmp_path / "variants"
    (variants / FAKE_VARIANT).mkdir(parents=True, exist_ok=True)
    return Settings(bundles_root=tmp_path / "bundles", variants_root=variants, **overrides)  # type: ignore[arg-type]


def test_load_serves_the_current_version_with_real_faiss(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    store = load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))
    (served,) = store.collections
    assert (served.bundle, served.bundle_version, served.collection.count) == (
        "coco-captions",
        "v2",
        5,
    )
    variant = store.resolve_variant(None)
    assert variant.name == FAKE_VARIANT
    assert variant.is_default
    hits = store.search(served, embed_bag_of_words(CAPTIONS[1]), k=5)
    # Rows 1 and 4 hold the same caption: equal scores, row ascending.
    assert [hit.item_id for hit in hits[:2]] == [caption_id(1), caption_id(4)]
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)


def test_fingerprint_mismatch_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", fingerprint="cd" * 32)
    with pytest.raises(StoreLoadError, match=r"fingerprint .*cdcd.*abab"):
        load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))


def test_dimension_mismatch_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", dim=32)
    with pytest.raises(StoreLoadError, match="dimension 32"):
        load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))


def test_variant_folder_must_exist(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", variant_name="other-variant")
    with pytest.raises(StoreLoadError, match=r"other-variant.*is not a folder"):
        load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))


def test_encoder_must_be_the_variant_the_bundle_names(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    with pytest.raises(StoreLoadError, match="holds variant 'impostor'"):
        load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder(name="impostor")))


def test_a_collection_served_twice_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", "first")
    write_fake_bundle(tmp_path / "bundles", "second")
    with pytest.raises(StoreLoadError, match="in two bundles"):
        load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))


def test_unknown_default_variant_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    with pytest.raises(StoreLoadError, match="default_variant 'nope'"):
        load_store(settings_for(tmp_path, default_variant="nope"), fake_factory(FakeTextEncoder()))


def test_tampered_bundle_is_refused(tmp_path: Path) -> None:
    version_dir = write_fake_bundle(tmp_path / "bundles")
    ids_file = version_dir / "captions.ids.jsonl"
    rows = ids_file.read_text(encoding="utf-8").splitlines()
    rows[0] = json.dumps({"id": caption_id(0), "text": "tampered"})
    ids_file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(BundleError, match="sha256"):
        load_store(settings_for(tmp_path), fake_factory(FakeTextEncoder()))


# -- towers ---------------------------------------------------------------------------------------


def test_variant_encoders_need_a_tower() -> None:
    with pytest.raises(StoreLoadError, match="at least one tower"):
        VariantEncoders()


@pytest.mark.parametrize(
    ("image_changes", "fact"),
    [
        ({"name": "other"}, "name"),
        ({"dim": 32}, "dim"),
        ({"precision": "fp16"}, "precision"),
        ({"fingerprint": "ef" * 32}, "fingerprint"),
    ],
)
def test_the_towers_of_one_variant_must_agree(image_changes: dict[str, Any], fact: str) -> None:
    with pytest.raises(StoreLoadError, match=f"disagree on {fact}"):
        VariantEncoders(text=FakeTextEncoder(), image=FakeImageEncoder(**image_changes))


def test_served_variant_reports_each_tower() -> None:
    image = FakeImageEncoder(providers=["CUDAExecutionProvider"], input_size=(224, 200))
    both = ServedVariant("v", VariantEncoders(FakeTextEncoder(), image), Path("."), True)
    assert both.towers == ["text", "image"]
    assert both.providers == ["CPUExecutionProvider", "CUDAExecutionProvider"]
    assert both.providers_by_tower == {
        "text": ["CPUExecutionProvider"],
        "image": ["CUDAExecutionProvider"],
    }
    assert (both.max_tokens, both.image_input_size) == (128, (224, 200))
    image_only = ServedVariant("v", VariantEncoders(image=image), Path("."), True)
    assert image_only.towers == ["image"]
    assert (image_only.max_tokens, image_only.dim) == (None, FAKE_DIM)


def test_encoding_needs_the_tower() -> None:
    text_only = ServedVariant("v", VariantEncoders(text=FakeTextEncoder()), Path("."), True)
    image = Image.new("RGB", (4, 4), COLOURS["red"])
    with pytest.raises(ServiceError, match="no image tower"):
        LiveIndexStore.encode_images(text_only, [image])
    image_only = ServedVariant("v", VariantEncoders(image=FakeImageEncoder()), Path("."), True)
    with pytest.raises(ServiceError, match="no text tower"):
        LiveIndexStore.encode_texts(image_only, ["red"])


def test_encode_refuses_non_finite_image_embeddings() -> None:
    encoder = FakeImageEncoder(nan_colours=frozenset({"blue"}))
    variant = ServedVariant(FAKE_VARIANT, VariantEncoders(image=encoder), Path("."), True)
    images = [Image.new("RGB", (4, 4), COLOURS[colour]) for colour in ("red", "blue")]
    with pytest.raises(ServiceError, match="image #1 cannot be embedded") as raised:
        LiveIndexStore.encode_images(variant, images)
    assert raised.value.code is ErrorCode.INVALID_INPUT


def test_load_serves_an_image_only_variant(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", captions=False, images=True)
    store = load_store(settings_for(tmp_path), fake_factory(image=FakeImageEncoder()))
    (served,) = store.collections
    assert (served.name, served.collection.count) == ("images", 6)
    variant = store.resolve_variant(None)
    assert variant.towers == ["image"]
    store.require_tower(variant, "image", "query.image")
    with pytest.raises(ServiceError, match=r"query.text: .* no text tower .*no loaded variant"):
        store.require_tower(variant, "text", "query.text")


def test_an_image_tower_of_other_weights_is_refused(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", captions=False, images=True)
    with pytest.raises(StoreLoadError, match="fingerprint"):
        load_store(
            settings_for(tmp_path), fake_factory(image=FakeImageEncoder(fingerprint="ee" * 32))
        )

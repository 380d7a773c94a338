"""The live catalog (service.engine.collection.catalog): a variant's towers and batchers, and the
lookups requests make — variant by name or default, collection, tower, item row, stored vector —
each refusing with its domain error; a catalog that cannot be served together is refused when
built."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.engine.collection.catalog import (
    Catalog,
    ServedVariant,
    StoreLoadError,
    VariantEncoders,
)
from service.engine.encode.batcher import Batcher, BatchLimits
from service.exceptions import InvalidQueryError, NotFoundError, ShuttingDownError
from service.metrics import ServiceMetrics
from tests.fakes.fake_encoders import FAKE_DIM, FakeImageEncoder, FakeTextEncoder
from tests.fakes.fake_faiss import AdversarialTieIndex, served_with, tie_corpus

LIMITS = BatchLimits(max_batch_size=8, max_wait_s=0.0, max_queue_depth=4, retry_after_s=1)


def variant(
    name: str,
    *,
    text: bool = True,
    image: bool = False,
    is_default: bool = False,
    batchers: bool = False,
) -> ServedVariant:
    """A served variant of fake towers named ``name``, with batchers when asked."""
    encoders = VariantEncoders(
        text=FakeTextEncoder(name=name) if text else None,
        image=FakeImageEncoder(name=name) if image else None,
    )
    metrics = ServiceMetrics()
    return ServedVariant(
        name,
        encoders,
        Path("."),
        is_default,
        text_batcher=(
            Batcher(encoders.text.encode_texts, LIMITS, metrics, variant=name, tower="text")
            if batchers and encoders.text is not None
            else None
        ),
        image_batcher=(
            Batcher(encoders.image.encode_images, LIMITS, metrics, variant=name, tower="image")
            if batchers and encoders.image is not None
            else None
        ),
    )


def catalog_of(*variants: ServedVariant, collection_of: str | None = None) -> Catalog:
    """A catalog of ``variants``; ``collection_of`` names the variant serving the tie corpus as
    its ``captions`` collection."""
    vectors = tie_corpus()
    collections = (
        [served_with(vectors, AdversarialTieIndex(vectors), collection_of)]
        if collection_of is not None
        else []
    )
    return Catalog({one.name: one for one in variants}, collections)


# -- towers -----------------------------------------------------------------------------------


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


# -- batchers ---------------------------------------------------------------------------------


def test_a_variant_owns_one_batcher_per_tower() -> None:
    both = variant("v", image=True, batchers=True)
    assert both.batcher("text") is both.text_batcher
    assert both.batcher("image") is both.image_batcher
    assert both.batchers == [both.text_batcher, both.image_batcher]
    assert [(b.variant, b.tower) for b in both.batchers] == [("v", "text"), ("v", "image")]


def test_encoding_needs_the_tower() -> None:
    text_only = variant("v", batchers=True)
    with pytest.raises(InvalidQueryError, match="no image tower"):
        text_only.batcher("image")
    image_only = variant("v", text=False, image=True, batchers=True)
    with pytest.raises(InvalidQueryError, match="no text tower"):
        image_only.batcher("text")
    assert image_only.batchers == [image_only.image_batcher]


def test_close_stops_every_variant_s_batchers() -> None:
    two = variant("two", image=True, batchers=True)
    one = variant("one", batchers=True, is_default=True)
    catalog = catalog_of(one, two)

    async def scenario() -> None:
        rows = (await one.batcher("text").submit(["red"], math.inf)).rows
        assert rows.shape == (1, FAKE_DIM)
        await catalog.close(timeout_s=5)
        for batcher in [*one.batchers, *two.batchers]:
            with pytest.raises(ShuttingDownError, match="shutting down"):
                await batcher.submit(["red"], math.inf)

    asyncio.run(scenario())


# -- building a catalog -----------------------------------------------------------------------


def test_one_name_in_two_bundles_is_found_by_qualified_name_and_bare_is_ambiguous() -> None:
    vectors = tie_corpus()
    first = served_with(vectors, AdversarialTieIndex(vectors))
    second = dataclasses.replace(first, bundle="other")
    catalog = Catalog({"v": variant("v")}, [first, second])
    assert [c.qualified_name for c in catalog.collections] == ["b:captions", "other:captions"]
    assert catalog.locate(None, "other:captions", lambda _: True)[1] is second
    message = (
        r"'captions' is ambiguous: .*\(b:captions \(variant v\), other:captions \(variant v\)\)"
    )
    with pytest.raises(InvalidQueryError, match=message):
        catalog.locate(None, "captions", lambda _: True)
    with pytest.raises(InvalidQueryError, match="ambiguous"):
        catalog.collection(catalog.resolve_variant("v"), "captions")
    with pytest.raises(StoreLoadError, match="'b:captions' is loaded twice"):
        Catalog({"v": variant("v")}, [first, first])


def test_a_bare_name_finds_the_collection_whose_variant_fits() -> None:
    vectors = tie_corpus()
    first = served_with(vectors, AdversarialTieIndex(vectors))
    second = dataclasses.replace(first, bundle="other", variant="w")
    catalog = Catalog({"v": variant("v"), "w": variant("w")}, [first, second])
    assert catalog.locate(None, "captions", lambda v: v.name == "w")[1] is second
    with_default = Catalog({"v": variant("v"), "w": variant("w", is_default=True)}, [first, second])
    assert with_default.locate(None, "captions", lambda _: True)[1] is second
    with pytest.raises(InvalidQueryError, match="is embedded by variant 'v', not 'w'"):
        catalog.locate("w", "b:captions", lambda _: True)


def test_a_collection_of_an_unloaded_variant_is_refused() -> None:
    with pytest.raises(StoreLoadError, match="needs unloaded variant 'v'"):
        catalog_of(variant("w"), collection_of="v")


def test_several_default_variants_are_refused() -> None:
    with pytest.raises(StoreLoadError, match="several default variants"):
        catalog_of(variant("a", is_default=True), variant("b", is_default=True))


def test_what_is_loaded_is_listed_in_order() -> None:
    catalog = catalog_of(variant("w"), variant("v"), collection_of="v")
    assert [one.name for one in catalog.variants] == ["v", "w"]
    assert [(c.variant, c.name) for c in catalog.collections] == [("v", "captions")]
    assert catalog.bundle_versions == {"b": "1"}
    assert catalog.bundle_versions_of("v") == {"b": "1"}
    assert catalog.bundle_versions_of("w") == {}
    assert catalog.variant_named("w") is not None
    assert catalog.variant_named("x") is None


def test_with_collections_keeps_the_variants_and_leaves_the_original_alone() -> None:
    catalog = catalog_of(variant("v", is_default=True), collection_of="v")
    emptied = catalog.with_collections([])
    assert emptied.collections == []
    assert emptied.variants == catalog.variants
    assert emptied.resolve_variant(None).name == "v"
    assert len(catalog.collections) == 1


# -- lookups ----------------------------------------------------------------------------------


def test_no_variant_named_means_the_default_one() -> None:
    catalog = catalog_of(variant("v"), variant("w", is_default=True))
    assert catalog.resolve_variant(None).name == "w"
    assert catalog.resolve_variant("v").name == "v"


def test_an_unknown_variant_is_not_found_and_quoted() -> None:
    catalog = catalog_of(variant("v"), variant("w", is_default=True))
    with pytest.raises(NotFoundError, match=r"unknown variant 'nope'; loaded: v, w"):
        catalog.resolve_variant("nope")
    with pytest.raises(NotFoundError, match=r"unknown variant 'xxx+'…"):
        catalog.resolve_variant("x" * 300)


def test_several_variants_without_a_default_need_a_name() -> None:
    catalog = catalog_of(variant("v"), variant("w"))
    with pytest.raises(InvalidQueryError, match=r"none is the default: name one .*\(v, w\)"):
        catalog.resolve_variant(None)


def test_an_unknown_collection_is_not_found_with_what_is_served() -> None:
    catalog = catalog_of(variant("v", is_default=True), collection_of="v")
    chosen = catalog.resolve_variant(None)
    assert catalog.collection(chosen, "captions").name == "captions"
    with pytest.raises(NotFoundError, match=r"unknown collection 'images' .*served: \w+:captions"):
        catalog.collection(chosen, "images")


def test_a_missing_tower_is_refused_naming_the_variants_that_have_it() -> None:
    catalog = catalog_of(
        variant("text-only", is_default=True), variant("clip", image=True), collection_of=None
    )
    text_only = catalog.resolve_variant(None)
    catalog.require_tower(text_only, "text", "query.text")
    message = (
        r"query.image: variant 'text-only' has no image tower \(its towers: text\); "
        r"variants with one: clip"
    )
    with pytest.raises(InvalidQueryError, match=message):
        catalog.require_tower(text_only, "image", "query.image")
    image_only = catalog_of(variant("pixels", text=False, image=True, is_default=True))
    no_text = r"query.text: .* no text tower .*no loaded variant"
    with pytest.raises(InvalidQueryError, match=no_text):
        image_only.require_tower(image_only.resolve_variant(None), "text", "query.text")


def test_an_item_s_row_and_stored_vector() -> None:
    catalog = catalog_of(variant("v", is_default=True), collection_of="v")
    served = catalog.collection(catalog.resolve_variant(None), "captions")
    row = catalog.row_of(served, "item-5")
    assert row == 5
    stored = Catalog.stored_vector(served, row)
    assert stored.dtype == np.float32
    np.testing.assert_array_equal(stored, tie_corpus()[5])
    with pytest.raises(NotFoundError, match=r"unknown item 'item-99' in collection 'captions'"):
        catalog.row_of(served, "item-99")


def test_a_request_naming_no_variant_gets_the_one_that_fits_it() -> None:
    catalog = catalog_of(variant("text-only"), variant("clip", image=True), collection_of=None)
    has_image = catalog.resolve_variant_for(None, lambda v: "image" in v.towers)
    assert has_image.name == "clip"
    with pytest.raises(InvalidQueryError, match="several variants are loaded"):
        catalog.resolve_variant_for(None, lambda v: "text" in v.towers)
    assert catalog.resolve_variant_for("text-only", lambda _: False).name == "text-only"

"""The checks before a build reads anything: the collections each corpus kind yields with the
towers at hand, collection names, and the encoders being towers of one variant."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from index_builder.corpus import ImageFolderCorpus, ImageTable, KarpathyCaptions, TextTable
from index_builder.field_schema import CorpusError
from index_builder.preconditions import (
    CollectionPlan,
    EncoderVariant,
    check_collection_name,
    default_collection_name,
    encoder_variant,
    plan_collections,
)
from tests.fakes.fake_encoders import FAKE_FINGERPRINT, FakeImageEncoder, FakeTextEncoder

BOTH = ("text", "image")


def _plan(corpus: object, towers: tuple[str, ...], collection: str = "things") -> list[str]:
    plans = plan_collections(corpus, towers, variant="v", collection=collection)  # type: ignore[arg-type]
    return [f"{plan.name}:{plan.tower}" for plan in plans]


def test_a_user_corpus_is_one_collection_of_its_tower(tmp_path: Path) -> None:
    assert _plan(TextTable(tmp_path / "t.jsonl"), BOTH) == ["things:text"]
    assert _plan(ImageFolderCorpus(tmp_path), ("image",)) == ["things:image"]
    assert _plan(ImageTable(tmp_path / "i.csv"), BOTH) == ["things:image"]
    with pytest.raises(CorpusError, match="variant v has no text tower: it cannot embed --texts"):
        _plan(TextTable(tmp_path / "t.jsonl"), ("image",))
    with pytest.raises(CorpusError, match="no image tower: it cannot embed --image-table"):
        _plan(ImageTable(tmp_path / "i.csv"), ("text",))
    with pytest.raises(CorpusError, match="collection name 'Things' does not match"):
        _plan(TextTable(tmp_path / "t.jsonl"), BOTH, collection="Things")


def test_karpathy_captions_give_a_collection_per_tower(tmp_path: Path) -> None:
    captions = KarpathyCaptions([], tmp_path / "c.csv")
    with_images = replace(captions, images_dir=tmp_path / "images")
    assert _plan(captions, ("text",), collection="ignored") == ["captions:text"]
    assert _plan(with_images, BOTH) == ["captions:text", "images:image"]
    assert _plan(with_images, ("image",)) == ["images:image"]
    with pytest.raises(CorpusError, match="variant v has an image tower: give --images-dir"):
        _plan(captions, BOTH)
    with pytest.raises(CorpusError, match="variant v has no image tower: it cannot embed the"):
        _plan(with_images, ("text",))
    with pytest.raises(
        CorpusError, match="variant v has no text tower: it cannot embed --captions"
    ):
        _plan(captions, ())


def test_collection_names() -> None:
    check_collection_name("my_shop_2")
    with pytest.raises(CorpusError, match="does not match"):
        check_collection_name("2shop")


@pytest.mark.parametrize(
    ("bundle", "collection"),
    [("products", "products"), ("My-Shop.v2", "my_shop_v2"), ("a_b", "a_b")],
)
def test_default_collection_names(bundle: str, collection: str) -> None:
    assert default_collection_name(bundle) == collection


@pytest.mark.parametrize("bundle", ["2024-shop", "_x", "a" * 65])
def test_a_bundle_name_that_makes_no_collection_name(bundle: str) -> None:
    with pytest.raises(CorpusError, match="give --collection"):
        default_collection_name(bundle)


def test_the_encoders_are_towers_of_one_variant() -> None:
    assert encoder_variant(FakeTextEncoder(), None) == EncoderVariant(
        "fake-bow", FAKE_FINGERPRINT, ("text",)
    )
    assert encoder_variant(FakeTextEncoder(), FakeImageEncoder()).towers == BOTH
    assert encoder_variant(None, FakeImageEncoder()).towers == ("image",)
    with pytest.raises(CorpusError, match="not towers of one variant"):
        encoder_variant(FakeTextEncoder(), FakeImageEncoder(fingerprint="cd" * 32))
    with pytest.raises(CorpusError, match="nothing to embed with"):
        encoder_variant(None, None)
    assert CollectionPlan("captions", "text").tower == "text"

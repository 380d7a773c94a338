"""Building a bundle from a Karpathy-format corpus: ids, metadata and vectors per collection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import images_of_captions, read_captions
from formats.layout import captions_path, images_dir
from index_builder.build import (
    BuildInputs,
    build_bundle,
    build_captions_bundle,
    caption_metadata,
    image_metadata,
)
from storage.manifest import BundleError
from storage.reader import load_bundle
from tests.fakes.tiny_image_variant import make_tiny_image_variant
from tests.fakes.tiny_variant import make_tiny_variant


def test_metadata_of_a_caption_and_an_image(tiny_corpus: Path) -> None:
    records = read_captions(captions_path(tiny_corpus, "val"))
    assert caption_metadata(records[1]) == {
        "text": "a dog number 0 caption 1",
        "image_id": 0,
        "filename": "img_000000000000.png",
        "sentid": 1,
    }
    assert image_metadata(images_of_captions(records)[2]) == {
        "image_id": 2,
        "filename": "img_000000000002.png",
        "captions": ["tiny:sentid:20", "tiny:sentid:21"],
    }


def test_a_text_variant_gives_a_captions_collection(tiny_corpus: Path, tmp_path: Path) -> None:
    make_tiny_variant(tmp_path / "tiny")
    encoder = OnnxTextEncoder(tmp_path / "tiny", providers="cpu")
    source = captions_path(tiny_corpus, "val")
    records = read_captions(source)
    version_dir = build_captions_bundle(
        encoder, records, bundles_root=tmp_path / "bundles", name="t", source=source,
        version="v1", progress=False,
    )  # fmt: skip
    bundle = load_bundle(version_dir)
    captions = bundle.collections["captions"]
    assert list(bundle.collections) == ["captions"]
    assert captions.ids == [record.key for record in records]
    assert captions.metadata[0] == caption_metadata(records[0])
    np.testing.assert_allclose(
        captions.vectors, encoder.encode_texts([r.text for r in records]), atol=1e-6
    )
    assert bundle.manifest.build_info["source"]["path"] == str(source)


def test_an_image_variant_gives_an_images_collection(tiny_corpus: Path, tmp_path: Path) -> None:
    make_tiny_image_variant(tmp_path / "tiny-image")
    encoder = OnnxImageEncoder(tmp_path / "tiny-image", providers="cpu")
    records = read_captions(captions_path(tiny_corpus, "val"))
    version_dir = build_bundle(
        BuildInputs(records=records, images_dir=images_dir(tiny_corpus, "val")),
        text_encoder=None,
        image_encoder=encoder,
        bundles_root=tmp_path / "bundles",
        name="i",
        progress=False,
    )
    images = load_bundle(version_dir).collections["images"]
    assert images.ids == [f"img_{i:012d}.png" for i in range(3)]
    assert images.metadata[1]["captions"] == ["tiny:sentid:10", "tiny:sentid:11"]


def test_an_image_variant_needs_its_images(tiny_corpus: Path, tmp_path: Path) -> None:
    make_tiny_image_variant(tmp_path / "tiny-image")
    encoder = OnnxImageEncoder(tmp_path / "tiny-image", providers="cpu")
    records = read_captions(captions_path(tiny_corpus, "val"))
    with pytest.raises(BundleError, match="give --images-dir"):
        build_bundle(
            BuildInputs(records=records), text_encoder=None, image_encoder=encoder,
            bundles_root=tmp_path / "bundles", name="i", progress=False,
        )  # fmt: skip
    (images_dir(tiny_corpus, "val") / "img_000000000001.png").unlink()
    with pytest.raises(BundleError, match="1 of 3 images are missing"):
        build_bundle(
            BuildInputs(records=records, images_dir=images_dir(tiny_corpus, "val")),
            text_encoder=None, image_encoder=encoder, bundles_root=tmp_path / "bundles",
            name="i", progress=False,
        )  # fmt: skip


def test_nothing_to_embed_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="nothing to embed"):
        build_bundle(
            BuildInputs(records=[]), text_encoder=None, image_encoder=None,
            bundles_root=tmp_path, name="x",
        )  # fmt: skip

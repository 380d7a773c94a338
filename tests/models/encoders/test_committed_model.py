"""The committed scenes dual encoder loads, verifies and embeds into one space."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest, verify_variant_files
from tests.conftest import REPO_ROOT

MODEL = REPO_ROOT / "models" / "scenes-dual-encoder"


def drawn_scene(colour: str) -> Image.Image:
    image = Image.new("RGB", (96, 96), "white")
    ImageDraw.Draw(image).ellipse((20, 20, 76, 76), fill=colour)
    return image


def test_both_towers_load_from_one_verified_folder() -> None:
    text = OnnxTextEncoder(MODEL, providers="cpu")
    image = OnnxImageEncoder(MODEL, providers="cpu")
    assert text.fingerprint == image.fingerprint
    assert text.name == image.name == "scenes-dual-encoder"
    assert text.dim == image.dim
    captions = text.encode_texts(["a large red circle", "a small blue square on the left"])
    pictures = image.encode_images([drawn_scene("red"), drawn_scene("blue")])
    for vectors in (captions, pictures):
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(captions @ pictures.T).all()


def test_its_manifest_verifies_and_names_how_it_was_trained() -> None:
    manifest = load_variant_manifest(MODEL)
    verify_variant_files(MODEL, manifest)
    # Trained before the trainer moved to `python -m training train`; the record keeps the
    # command as it was run (the options are the same).
    assert "train, seed 0" in manifest.source_model.base_model

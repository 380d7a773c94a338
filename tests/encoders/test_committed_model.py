"""The committed scenes dual encoder loads, verifies and embeds into one space."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder

MODEL = Path(__file__).resolve().parents[2] / "models" / "scenes-dual-encoder"


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

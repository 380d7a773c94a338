"""Rendering: objects appear where and in the colour the ground truth says; PNGs decode."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from formats.layout import images_dir
from scenes.render import encode_png, render_scene
from scenes.scene import Scene, SceneObject, bounding_box, sample_scene
from scenes.writer import ground_truth_path

# Pixel noise is at most ±16 levels; anti-aliased edges of small shapes need some slack too.
COLOUR_TOLERANCE = 40


def _covered_by_later(scene: Scene, index: int, size: int) -> bool:
    """Whether the object's centre pixel falls in the box of an object drawn after it."""
    item = scene.objects[index]
    x, y = int(item.x * size), int(item.y * size)
    for later in scene.objects[index + 1 :]:
        x0, y0, x1, y1 = bounding_box(later, size)
        if x0 <= x < x1 and y0 <= y < y1:
            return True
    return False


def _centre_matches(pixels: np.ndarray, item: SceneObject, size: int) -> bool:
    x, y = int(item.x * size), int(item.y * size)
    # The median of the 3×3 neighbourhood is robust to single noisy pixels.
    patch = pixels[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2].reshape(-1, 3)
    median = np.median(patch.astype(np.float64), axis=0)
    return bool(np.abs(median - np.asarray(item.rgb)).max() <= COLOUR_TOLERANCE)


@pytest.mark.parametrize("size", [96, 64])
def test_each_visible_object_has_its_colour_at_its_centre(size: int) -> None:
    checked = 0
    for seed in range(150):
        scene = sample_scene(np.random.default_rng([11, seed]))
        pixels = render_scene(scene, size, np.random.default_rng([12, seed]))
        assert pixels.shape == (size, size, 3)
        assert pixels.dtype == np.uint8
        for index, item in enumerate(scene.objects):
            if _covered_by_later(scene, index, size):
                continue
            assert _centre_matches(pixels, item, size), (seed, index, item)
            checked += 1
    assert checked > 300


def test_written_pngs_match_the_ground_truth(small_corpus: Path) -> None:
    with ground_truth_path(small_corpus, "val").open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle][:40]
    for record in records:
        with Image.open(images_dir(small_corpus, "val") / record["filename"]) as image:
            assert image.mode == "RGB"
            assert image.size == (record["width"], record["height"])
            pixels = np.asarray(image)
        scene = Scene.from_json(record["scene"])
        for index, item in enumerate(scene.objects):
            box = record["scene"]["objects"][index]["bbox"]
            assert box == list(bounding_box(item, image.size[0]))
            if not _covered_by_later(scene, index, image.size[0]):
                assert _centre_matches(pixels, item, image.size[0]), (record["filename"], index)


def test_png_encoding_round_trips() -> None:
    pixels = np.random.default_rng(0).integers(0, 256, size=(40, 56, 3), dtype=np.uint8)
    data = encode_png(pixels)
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        assert image.size == (56, 40)
        assert np.array_equal(np.asarray(image.convert("RGB")), pixels)
    assert encode_png(pixels) == data


def test_background_is_drawn_in_its_named_colour_with_every_pattern() -> None:
    seen = set()
    for seed in range(60):
        scene = sample_scene(np.random.default_rng([21, seed]))
        pixels = render_scene(scene, 96, np.random.default_rng([22, seed])).astype(np.float64)
        corner = pixels[:8, :8].reshape(-1, 3).mean(axis=0)
        assert np.abs(corner - np.asarray(scene.background.rgb)).max() < 80
        seen.add(scene.background.pattern)
    assert len(seen) == 6

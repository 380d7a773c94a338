"""preprocess_images: shapes, normalisation, resize and crop rules against plain references."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image
from pydantic import ValidationError

from encoders.image_preprocess import preprocess_images, resample_image, source_box
from encoders.variant import ImageTower

FILTERS = {
    "bicubic": Image.Resampling.BICUBIC,
    "bilinear": Image.Resampling.BILINEAR,
    "nearest": Image.Resampling.NEAREST,
}


def tower(**overrides: Any) -> ImageTower:
    fields: dict[str, Any] = {
        "height": 224,
        "width": 224,
        "resize": "shorter_side",
        "resize_to": 256,
        "interpolation": "bicubic",
        "crop": "center",
        "mean": (0.485, 0.456, 0.406),
        "std": (0.229, 0.224, 0.225),
    }
    return ImageTower.model_validate(fields | overrides)


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def smooth(width: int, height: int) -> Image.Image:
    """A photo-like image: smooth colour gradients with a few soft blobs."""
    rows, columns = np.mgrid[0:height, 0:width].astype(np.float64)
    red = 127 + 100 * np.sin(columns / 37.0)
    green = 127 + 100 * np.cos(rows / 23.0)
    blue = 255 * (rows + columns) / (rows.max() + columns.max() + 1)
    return Image.fromarray(np.stack([red, green, blue], axis=-1).astype(np.uint8))


def reference(image: Image.Image, spec: ImageTower) -> npt.NDArray[np.float32]:
    """The textbook pipeline: resize the whole image (float, per channel), crop with numpy
    slicing, scale to 0-1, subtract mean, divide by std; [3, H, W]."""
    width, height = image.size
    if spec.resize == "exact":
        resized_width, resized_height = spec.width, spec.height
    elif width <= height:
        resized_width, resized_height = spec.resize_to, int(spec.resize_to * height / width)
    else:
        resized_width, resized_height = int(spec.resize_to * width / height), spec.resize_to
    planes = np.stack(
        [
            np.asarray(
                image.getchannel(channel)
                .convert("F")
                .resize((resized_width, resized_height), FILTERS[spec.interpolation])
            )
            for channel in range(3)
        ]
    )
    top = round((resized_height - spec.height) / 2.0)
    left = round((resized_width - spec.width) / 2.0)
    cropped = np.clip(planes[:, top : top + spec.height, left : left + spec.width], 0, 255)
    mean = np.array(spec.mean).reshape(3, 1, 1)
    std = np.array(spec.std).reshape(3, 1, 1)
    normalised: npt.NDArray[np.float32] = ((cropped / 255.0 - mean) / std).astype(np.float32)
    return normalised


def test_batch_shape_dtype_and_layout() -> None:
    images = [noise(300, 200), noise(64, 500, seed=1), noise(224, 224, seed=2)]
    batch = preprocess_images(images, tower())
    assert batch.shape == (3, 3, 224, 224)
    assert batch.dtype == np.float32
    assert batch.flags.c_contiguous
    assert np.isfinite(batch).all()


def test_empty_input_gives_an_empty_batch() -> None:
    batch = preprocess_images([], tower(height=32, width=48, resize_to=64))
    assert batch.shape == (0, 3, 32, 48)
    assert batch.dtype == np.float32


def test_mean_and_std_are_applied_per_channel() -> None:
    spec = tower(mean=(0.1, 0.5, 0.9), std=(0.5, 0.25, 2.0))
    flat = Image.new("RGB", (400, 300), (51, 102, 204))
    batch = preprocess_images([flat], spec)[0]
    for channel, level in enumerate((51, 102, 204)):
        expected = (level / 255 - spec.mean[channel]) / spec.std[channel]
        np.testing.assert_allclose(batch[channel], expected, atol=1e-5)


def test_channels_stay_in_rgb_order() -> None:
    spec = tower(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    batch = preprocess_images([Image.new("RGB", (256, 256), (255, 0, 0))], spec)[0]
    np.testing.assert_allclose(batch[0], 1.0, atol=1e-6)
    np.testing.assert_allclose(batch[1:], 0.0, atol=1e-6)


@pytest.mark.parametrize(
    ("width", "height"),
    [(451, 300), (300, 451), (640, 480), (333, 500), (257, 256), (224, 224), (100, 37), (5, 3)],
)
@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
def test_shorter_side_resize_and_centre_crop_match_the_reference(
    width: int, height: int, interpolation: str
) -> None:
    spec = tower(interpolation=interpolation)
    image = noise(width, height, seed=width * height)
    np.testing.assert_allclose(
        preprocess_images([image], spec)[0], reference(image, spec), atol=2e-4
    )


@pytest.mark.parametrize(("width", "height"), [(451, 300), (300, 451), (50, 20)])
def test_exact_resize_matches_the_reference(width: int, height: int) -> None:
    spec = tower(resize="exact", height=96, width=128, resize_to=1)
    image = noise(width, height, seed=3)
    assert preprocess_images([image], spec).shape == (1, 3, 96, 128)
    np.testing.assert_allclose(
        preprocess_images([image], spec)[0], reference(image, spec), atol=2e-4
    )


def test_nearest_matches_the_reference_except_at_exact_ties() -> None:
    spec = tower(interpolation="nearest")
    image = noise(640, 480, seed=9)
    np.testing.assert_allclose(
        preprocess_images([image], spec)[0], reference(image, spec), atol=2e-4
    )


def test_close_to_the_usual_8_bit_pil_pipeline_on_smooth_images() -> None:
    """torchvision-style Resize(256) + CenterCrop(224) on uint8 RGB: the float pipeline differs
    only by rounding, which is at most a grey level or two on photo-like content."""
    spec = tower(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    image = smooth(500, 375)
    resized = image.resize((341, 256), Image.Resampling.BICUBIC)
    left, top = round((341 - 224) / 2.0), round((256 - 224) / 2.0)
    eight_bit = np.asarray(resized.crop((left, top, left + 224, top + 224)), dtype=np.float64)
    ours = preprocess_images([image], spec)[0].transpose(1, 2, 0) * 255
    assert np.abs(ours - eight_bit).max() <= 1.0
    assert np.abs(ours - eight_bit).mean() < 0.3


def test_centre_crop_position_on_a_landscape_image() -> None:
    # 400x200, left half red and right half blue → resized to 512x256 (scale 1.28); the crop
    # keeps columns 144..367, so output columns 0..111 come from the red half.
    array = np.zeros((200, 400, 3), dtype=np.uint8)
    array[:, :200] = (255, 0, 0)
    array[:, 200:] = (0, 0, 255)
    spec = tower(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), interpolation="nearest")
    assert source_box((400, 200), spec) == pytest.approx((112.5, 12.5, 287.5, 187.5))
    red = preprocess_images([Image.fromarray(array)], spec)[0, 0]
    np.testing.assert_allclose(red[:, :112], 1.0)
    np.testing.assert_allclose(red[:, 112:], 0.0)


def test_a_portrait_image_is_cropped_vertically() -> None:
    array = np.zeros((400, 200, 3), dtype=np.uint8)
    array[:200] = (0, 255, 0)  # top half green
    spec = tower(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), interpolation="nearest")
    green = preprocess_images([Image.fromarray(array)], spec)[0, 1]
    np.testing.assert_allclose(green[:112], 1.0)
    np.testing.assert_allclose(green[112:], 0.0)


def test_source_box_follows_torchvision_rounding() -> None:
    # 300x451 → shorter side 256 → 256x384 (int(256 * 451 / 300) = 384); offsets (16, 80).
    left, top, right, bottom = source_box((300, 451), tower())
    scale_x, scale_y = 300 / 256, 451 / 384
    assert (left, top) == pytest.approx((16 * scale_x, 80 * scale_y))
    assert (right, bottom) == pytest.approx((240 * scale_x, 304 * scale_y))
    assert source_box((300, 451), tower(resize="exact")) == (0.0, 0.0, 300.0, 451.0)


def test_an_extreme_strip_is_handled_without_a_huge_intermediate() -> None:
    # Resizing the whole 1 x 200,000 strip first would make a 256 x 51,200,000 image (39 GB).
    strip = noise(200_000, 1)
    started = time.perf_counter()
    batch = preprocess_images([strip], tower())
    assert batch.shape == (1, 3, 224, 224)
    assert np.isfinite(batch).all()
    assert time.perf_counter() - started < 5.0


def test_values_are_clipped_to_the_pixel_range_before_normalising() -> None:
    # Bicubic overshoots next to a hard black/white edge; clipping keeps 0-1 inputs.
    array = np.zeros((64, 64, 3), dtype=np.uint8)
    array[:, 32:] = 255
    spec = tower(height=200, width=200, resize_to=200, mean=(0.0,) * 3, std=(1.0,) * 3)
    planes = resample_image(Image.fromarray(array), spec)
    assert planes.min() >= 0.0
    assert planes.max() <= 255.0
    batch = preprocess_images([Image.fromarray(array)], spec)
    assert batch.min() >= 0.0
    assert batch.max() <= 1.0


@pytest.mark.parametrize("mode", ["L", "RGBA", "CMYK", "P"])
def test_non_rgb_images_are_refused(mode: str) -> None:
    with pytest.raises(ValueError, match="decode_image"):
        preprocess_images([Image.new(mode, (10, 10))], tower())


def test_identical_inputs_give_identical_rows() -> None:
    image = noise(320, 240)
    batch = preprocess_images([image, image.copy(), noise(100, 100, seed=1)], tower())
    np.testing.assert_array_equal(batch[0], batch[1])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"crop": "none"}, "needs crop 'center'"),
        ({"resize_to": 200}, "smaller than"),
        ({"interpolation": "lanczos"}, "interpolation"),
        ({"std": (0.0, 1.0, 1.0)}, "std"),
    ],
)
def test_tower_settings_that_cannot_yield_the_input_size_are_refused(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        tower(**overrides)


def test_exact_resize_needs_no_crop_and_ignores_resize_to() -> None:
    spec = tower(resize="exact", crop="none", resize_to=1)
    assert spec.input_size == (224, 224)
    assert preprocess_images([noise(50, 70)], spec).shape == (1, 3, 224, 224)

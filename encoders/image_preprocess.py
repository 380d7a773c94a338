"""RGB images → the image tower's input tensor, exactly as a variant's ``ImageTower`` describes.

One function serves export (parity), training and serving, so the three can never drift apart.

The resize-then-crop of ``ImageTower`` is computed as one resampling of the *source region* that
the crop keeps (Pillow's ``resize(box=...)``), in float32 per channel. That is the same as
resizing the whole image and cropping afterwards (within 0.01 of a grey level for bicubic and
bilinear; "nearest" may take the neighbouring source pixel where a sample falls exactly between
two), but it never materialises the resized whole image: a 1 x 40,000,000 pixel strip would
otherwise become a 256 x 10,240,000,000 intermediate. Float resampling also keeps the sub-level
detail that an 8-bit intermediate would round away; the result is clipped to 0-255 (bicubic
overshoots at sharp edges) before it is scaled to 0-1 and normalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from PIL import Image

from encoders.variant import ImageTower

CHANNELS: Final = 3
_MAX_LEVEL: Final = 255.0

PixelBatch = npt.NDArray[np.float32]


def preprocess_images(images: Sequence[Image.Image], tower: ImageTower) -> PixelBatch:
    """Resize, crop and normalise RGB images into one float32 ``[n, 3, height, width]`` tensor.

    ``images``: mode "RGB" images of any size (``encoders.image_decode.decode_image`` yields
    them); raises ``ValueError`` for any other mode rather than guessing how to drop alpha or
    expand grey. Channel order RGB; each value is ``(v / 255 - mean[c]) / std[c]`` where ``v`` is
    the resampled 0-255 level. The result is C-contiguous; an empty ``images`` gives
    ``[0, 3, height, width]``. See ``ImageTower`` for the resize and crop rules.
    """
    height, width = tower.input_size
    pixels = np.empty((len(images), CHANNELS, height, width), dtype=np.float32)
    for row, image in enumerate(images):
        pixels[row] = resample_image(image, tower)
    # (v / 255 - mean) / std folded into one multiply-add, applied to the whole batch at once.
    std = np.asarray(tower.std, dtype=np.float32)
    scale = (1.0 / (_MAX_LEVEL * std)).reshape(CHANNELS, 1, 1)
    offset = (np.asarray(tower.mean, dtype=np.float32) / std).reshape(CHANNELS, 1, 1)
    pixels *= scale
    pixels -= offset
    return pixels


def resample_image(image: Image.Image, tower: ImageTower) -> npt.NDArray[np.float32]:
    """One RGB image resized and cropped per ``tower``: float32 ``[3, height, width]``, 0-255.

    Not yet normalised; ``preprocess_images`` does that for a batch.
    """
    if image.mode != "RGB":
        raise ValueError(
            f"expected an RGB image, got mode {image.mode!r}; decode uploads with "
            "encoders.image_decode.decode_image, which converts every mode to RGB"
        )
    height, width = tower.input_size
    box = source_box(image.size, tower)
    resample = _resampling_filter(tower.interpolation)
    planes = np.empty((CHANNELS, height, width), dtype=np.float32)
    for channel in range(CHANNELS):
        # One channel at a time: a float copy of the source costs 4 bytes a pixel, so the
        # transient memory stays at one plane rather than three.
        plane = image.getchannel(channel).convert("F")
        planes[channel] = np.asarray(plane.resize((width, height), resample, box=box))
    np.clip(planes, 0.0, _MAX_LEVEL, out=planes)
    return planes


def source_box(size: tuple[int, int], tower: ImageTower) -> tuple[float, float, float, float]:
    """The region ``(left, top, right, bottom)`` of an image of ``size`` = (width, height), in
    source pixels (floats), that resizing and cropping per ``tower`` maps onto the output.

    ``shorter_side``: the image is scaled to ``(w', h')`` with the shorter side ``resize_to`` and
    the longer ``int(resize_to * long / short)`` (torchvision's ``Resize(int)`` rule), then the
    central window is kept with offsets ``int(round((w' - width) / 2))`` and
    ``int(round((h' - height) / 2))`` (torchvision's ``CenterCrop`` rule). ``exact``: the whole
    image.
    """
    source_width, source_height = size
    if source_width <= 0 or source_height <= 0:
        raise ValueError(f"image has an empty size {source_width}x{source_height}")
    if tower.resize == "exact":
        return 0.0, 0.0, float(source_width), float(source_height)
    height, width = tower.input_size
    if source_width <= source_height:
        resized_width = tower.resize_to
        resized_height = int(tower.resize_to * source_height / source_width)
    else:
        resized_height = tower.resize_to
        resized_width = int(tower.resize_to * source_width / source_height)
    # ImageTower guarantees resize_to >= height and width; the int() above can only shrink the
    # longer side, which stays >= resize_to.
    left = round((resized_width - width) / 2.0)
    top = round((resized_height - height) / 2.0)
    x_scale = source_width / resized_width
    y_scale = source_height / resized_height
    # min(): float rounding must not push the box past the image edge, which Pillow refuses.
    return (
        left * x_scale,
        top * y_scale,
        min(float(source_width), (left + width) * x_scale),
        min(float(source_height), (top + height) * y_scale),
    )


def _resampling_filter(interpolation: str) -> Image.Resampling:
    """The Pillow filter for an ``ImageTower.interpolation`` name."""
    match interpolation:
        case "bicubic":
            return Image.Resampling.BICUBIC
        case "bilinear":
            return Image.Resampling.BILINEAR
        case "nearest":
            return Image.Resampling.NEAREST
    raise ValueError(f"unknown interpolation {interpolation!r}")

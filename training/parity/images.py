"""A fixed, varied set of images for checking an exported image tower against its source model.

Built in code, so every export is checked on the same inputs without shipping image files:

- real photographs and scans bundled inside the scikit-image wheel (no download: only files
  listed in ``_PHOTOS`` are used, all of which ship with ``skimage.data``), each in several
  variants: as is, mirrored, upside down, rotated, cropped, shrunk to a thumbnail, blown up from a
  tiny copy, greyscale, and cut into strips of extreme aspect ratio;
- images that stress numerics rather than content: uniform and Gaussian noise, flat colours
  (black, white, saturated primaries), gradients, checkerboards at the pixel pitch, and drawn
  shapes.

The set needs scikit-image (the ``dev`` extra) besides Pillow and numpy.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Final

import numpy as np
import numpy.typing as npt
import skimage.data
from PIL import Image, ImageDraw, ImageOps

from encoders.image_decode import ImageLimits, decode_image

# skimage.data loaders whose files ship inside the scikit-image wheel (checked offline with 0.26;
# loaders such as eagle or lily download on first use and are deliberately absent).
_PHOTOS: Final = (
    "astronaut", "chelsea", "coffee", "rocket", "camera", "hubble_deep_field",
    "immunohistochemistry", "retina", "coins", "moon", "page", "text", "clock", "brick", "grass",
    "gravel", "colorwheel", "logo",
)  # fmt: skip
_SEED: Final = 20261122
# Decoding the RGBA logo through decode_image composites it on white as served uploads are.
_LIMITS: Final = ImageLimits(max_bytes=1 << 26, max_pixels=1 << 26)

NamedImage = tuple[str, Image.Image]


def parity_images() -> list[NamedImage]:
    """The parity set: ``(name, RGB image)`` pairs, at least 100, identical on every call.

    Names say how each image was made (``"chelsea/mirrored"``, ``"noise/uniform-97x203"``) so a
    parity report's worst input can be found again.
    """
    rng = np.random.default_rng(_SEED)
    images: list[NamedImage] = []
    for photo in _PHOTOS:
        original = _load_photo(photo)
        images += [(f"{photo}/{variant}", image) for variant, image in _variants(original, rng)]
    images += list(_generated(rng))
    return images


def _load_photo(name: str) -> Image.Image:
    """One ``skimage.data`` image as RGB (greyscale expanded, alpha composited on white)."""
    loader: Callable[[], npt.NDArray[np.generic]] = getattr(skimage.data, name)
    pixels = np.asarray(loader())
    buffer = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(buffer, "PNG")
    return decode_image(buffer.getvalue(), _LIMITS)


def _variants(image: Image.Image, rng: np.random.Generator) -> Iterator[tuple[str, Image.Image]]:
    """Eleven transformations of one photo that change framing, scale, colour and aspect ratio."""
    width, height = image.size
    yield "original", image
    yield "mirrored", ImageOps.mirror(image)
    yield "upside-down", ImageOps.flip(image)
    yield "rotated-90", image.transpose(Image.Transpose.ROTATE_90)
    yield "centre-half", image.crop((width // 4, height // 4, width * 3 // 4, height * 3 // 4))
    left, top = int(rng.integers(0, width // 3)), int(rng.integers(0, height // 3))
    yield "random-crop", image.crop((left, top, left + width // 2, top + height // 2))
    yield "thumbnail-48", image.resize((48, max(1, 48 * height // width)), Image.Resampling.BOX)
    yield "from-12px", image.resize((12, 12), Image.Resampling.BOX).resize((300, 300))
    yield "greyscale", image.convert("L").convert("RGB")
    yield "wide-strip", image.crop((0, height // 2 - 8, width, height // 2 + 8))
    yield "tall-strip", image.crop((width // 2 - 6, 0, width // 2 + 6, height))


def _generated(rng: np.random.Generator) -> Iterator[NamedImage]:
    """Synthetic images: noise, flat colours, gradients, checkerboards and drawn shapes."""
    for width, height in ((224, 224), (97, 203), (640, 480), (31, 17)):
        uniform = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        yield f"noise/uniform-{width}x{height}", Image.fromarray(uniform)
        gaussian = np.clip(rng.normal(128.0, 40.0, (height, width, 3)), 0, 255).astype(np.uint8)
        yield f"noise/gaussian-{width}x{height}", Image.fromarray(gaussian)
    colours = {
        "black": (0, 0, 0), "white": (255, 255, 255), "grey": (128, 128, 128),
        "red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "teal": (0, 128, 128),
    }  # fmt: skip
    for colour_name, colour in colours.items():
        yield f"flat/{colour_name}", Image.new("RGB", (256, 256), colour)
    ramp = np.linspace(0, 255, 320, dtype=np.float64)
    horizontal = np.broadcast_to(ramp[None, :, None], (240, 320, 3)).astype(np.uint8)
    yield "gradient/horizontal", Image.fromarray(np.ascontiguousarray(horizontal))
    vertical = np.broadcast_to(ramp[:240, None, None], (240, 320, 3)).astype(np.uint8)
    yield "gradient/vertical", Image.fromarray(np.ascontiguousarray(vertical))
    rows, columns = np.mgrid[0:256, 0:256]
    rainbow = np.stack([rows, columns, 255 - (rows + columns) // 2], axis=-1).astype(np.uint8)
    yield "gradient/rgb", Image.fromarray(rainbow)
    for pitch in (1, 2, 8, 32):
        board = (((rows // pitch + columns // pitch) % 2) * 255).astype(np.uint8)
        yield f"checkerboard/{pitch}px", Image.fromarray(board).convert("RGB")
    for index in range(8):
        yield f"shapes/{index}", _drawn_shapes(rng)


def _drawn_shapes(rng: np.random.Generator) -> Image.Image:
    """A random 320x240 scene of filled rectangles, ellipses and lines on a random background."""
    background = tuple(int(value) for value in rng.integers(0, 256, 3))
    canvas = Image.new("RGB", (320, 240), (background[0], background[1], background[2]))
    draw = ImageDraw.Draw(canvas)
    for _ in range(int(rng.integers(3, 9))):
        x0, x1 = sorted(int(value) for value in rng.integers(0, 320, 2))
        y0, y1 = sorted(int(value) for value in rng.integers(0, 240, 2))
        red, green, blue = (int(value) for value in rng.integers(0, 256, 3))
        match int(rng.integers(0, 3)):
            case 0:
                draw.rectangle((x0, y0, x1, y1), fill=(red, green, blue))
            case 1:
                draw.ellipse((x0, y0, x1, y1), fill=(red, green, blue))
            case _:
                draw.line((x0, y0, x1, y1), fill=(red, green, blue), width=int(rng.integers(1, 8)))
    return canvas

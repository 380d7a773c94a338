"""decode_image: formats, orientation, mode conversion, limits and hostile inputs."""

from __future__ import annotations

import io
import pickle
import resource
import struct
import time
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image, ImageFile

from encoders.image_decode import (
    DEFAULT_FORMATS,
    ImageDecodeError,
    ImageLimits,
    decode_image,
)

LIMITS = ImageLimits(max_bytes=10 << 20, max_pixels=40_000_000)
WHITE = (255, 255, 255)


def encode(image: Image.Image, image_format: str, **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, image_format, **options)
    return buffer.getvalue()


def pixels(image: Image.Image) -> npt.NDArray[np.int64]:
    return np.asarray(image).astype(np.int64)


def quadrants(width: int = 60, height: int = 40) -> Image.Image:
    """An RGB image with four flat quadrants of distinct colours (top-left red)."""
    array = np.zeros((height, width, 3), dtype=np.uint8)
    array[: height // 2, : width // 2] = (255, 0, 0)
    array[: height // 2, width // 2 :] = (0, 255, 0)
    array[height // 2 :, : width // 2] = (0, 0, 255)
    array[height // 2 :, width // 2 :] = (255, 255, 0)
    return Image.fromarray(array)


def declared_png(width: int, height: int) -> bytes:
    """A tiny, valid-looking PNG whose header declares width x height RGB and holds 1 KB data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1024))
        + chunk(b"IEND", b"")
    )


def reason_of(data: bytes, limits: ImageLimits = LIMITS) -> str:
    with pytest.raises(ImageDecodeError) as error:
        decode_image(data, limits)
    assert str(error.value)  # every refusal explains itself
    return error.value.reason


# --- formats -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image_format", "options", "tolerance"),
    [
        ("PNG", {}, 0),
        ("WEBP", {"lossless": True}, 0),
        ("GIF", {}, 0),  # four colours fit the palette exactly
        ("JPEG", {"quality": 95}, 12),
    ],
)
def test_every_allowed_format_round_trips(
    image_format: str, options: dict[str, Any], tolerance: int
) -> None:
    original = quadrants()
    decoded = decode_image(encode(original, image_format, **options), LIMITS)
    assert decoded.mode == "RGB"
    assert decoded.size == original.size
    difference = np.abs(pixels(decoded) - pixels(original))
    # JPEG blurs the quadrant edges; compare away from them.
    assert difference[2:18, 2:28].max() <= tolerance
    assert difference[22:38, 32:58].max() <= tolerance


def test_default_formats_are_the_contract_ones() -> None:
    assert DEFAULT_FORMATS == ("JPEG", "PNG", "WEBP", "GIF")
    assert ImageLimits(max_bytes=1, max_pixels=1).formats == DEFAULT_FORMATS


def test_result_is_independent_of_the_input_bytes() -> None:
    data = bytearray(encode(quadrants(), "PNG"))
    decoded = decode_image(bytes(data), LIMITS)
    data[:] = b"\0" * len(data)
    assert decoded.getpixel((0, 0)) == (255, 0, 0)
    assert decoded.copy().size == (60, 40)


@pytest.mark.parametrize(("image_format", "name"), [("BMP", "BMP"), ("TIFF", "TIFF")])
def test_other_image_formats_are_unsupported(image_format: str, name: str) -> None:
    with pytest.raises(ImageDecodeError, match=name) as error:
        decode_image(encode(quadrants(), image_format), LIMITS)
    assert error.value.reason == "unsupported_format"


def test_heif_style_files_are_unsupported() -> None:
    heic_header = struct.pack(">I", 24) + b"ftypheic" + b"\0\0\0\0mif1heic" + b"\0" * 64
    assert reason_of(heic_header) == "unsupported_format"


def test_the_allow_list_is_honoured() -> None:
    png_only = ImageLimits(max_bytes=1 << 20, max_pixels=1 << 20, formats=("PNG",))
    assert decode_image(encode(quadrants(), "PNG"), png_only).size == (60, 40)
    with pytest.raises(ImageDecodeError, match="JPEG is not accepted") as error:
        decode_image(encode(quadrants(), "JPEG"), png_only)
    assert error.value.reason == "unsupported_format"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello, this is plain text and not an image at all",
        np.random.default_rng(0).bytes(4096),
        np.random.default_rng(1).bytes(17),
        b"\x89PNG\r\n\x1a\n",  # a signature and nothing else
        b"\xff\xd8\xff",  # a JPEG start-of-image marker and nothing else
    ],
    ids=["empty", "text", "random-4k", "random-17", "png-signature", "jpeg-soi"],
)
def test_non_images_are_invalid(data: bytes) -> None:
    assert reason_of(data) == "invalid_image"


def test_random_bytes_are_never_taken_for_an_image() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        data = rng.bytes(int(rng.integers(1, 3000)))
        assert reason_of(data) == "invalid_image"


@pytest.mark.parametrize("image_format", ["JPEG", "PNG"])
@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_files_are_invalid(image_format: str, keep: float) -> None:
    noise = np.random.default_rng(3).integers(0, 256, (120, 160, 3), dtype=np.uint8)
    data = encode(Image.fromarray(noise), image_format)
    assert reason_of(data[: int(len(data) * keep)]) == "invalid_image"


def test_truncation_setting_is_left_alone() -> None:
    pillow_pixel_limit = Image.MAX_IMAGE_PIXELS
    data = encode(quadrants(), "JPEG")
    decode_image(data, LIMITS)
    reason_of(data[: len(data) // 2])
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False
    assert pillow_pixel_limit == Image.MAX_IMAGE_PIXELS


def test_malformed_exif_does_not_reject_the_pixels() -> None:
    data = encode(quadrants(), "JPEG", exif=b"Exif\x00\x00this is not a TIFF structure")
    assert decode_image(data, LIMITS).size == (60, 40)


# --- orientation and frames ----------------------------------------------------------------


def test_exif_orientation_is_applied() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: the stored image must be rotated 90° clockwise to display
    data = encode(quadrants(60, 40), "JPEG", exif=exif.tobytes(), quality=95)
    decoded = decode_image(data, LIMITS)
    assert decoded.size == (40, 60)  # width and height swap
    # Clockwise rotation moves the stored top-left (red) quadrant to the top-right, and the
    # stored bottom-left (blue) one to the top-left.
    red, blue = np.array([255, 0, 0]), np.array([0, 0, 255])
    assert np.abs(pixels(decoded)[10, 30] - red).max() < 30
    assert np.abs(pixels(decoded)[10, 10] - blue).max() < 30
    assert "exif" not in decoded.info or decoded.getexif().get(0x0112, 1) == 1


def animated(image_format: str) -> bytes:
    frames = [Image.new("RGB", (20, 10), colour) for colour in ((255, 0, 0), (0, 255, 0))]
    options: dict[str, Any] = {"save_all": True, "append_images": frames[1:], "duration": 100}
    if image_format == "WEBP":
        options["lossless"] = True
    return encode(frames[0], image_format, **options)


@pytest.mark.parametrize("image_format", ["GIF", "PNG", "WEBP"])
def test_animated_images_give_their_first_frame(image_format: str) -> None:
    data = animated(image_format)
    with Image.open(io.BytesIO(data)) as check:
        assert getattr(check, "n_frames", 1) == 2
    decoded = decode_image(data, LIMITS)
    assert decoded.mode == "RGB"
    assert decoded.getpixel((5, 5)) == (255, 0, 0)


# --- modes ---------------------------------------------------------------------------------


def test_cmyk_jpeg_is_converted_to_rgb() -> None:
    cmyk = Image.new("CMYK", (32, 16), (0, 0, 0, 0))
    cmyk.paste((255, 0, 0, 0), (0, 0, 16, 16))  # full cyan on the left
    data = encode(cmyk, "JPEG", quality=95)
    with Image.open(io.BytesIO(data)) as check:
        assert check.mode == "CMYK"
    decoded = decode_image(data, LIMITS)
    assert decoded.mode == "RGB"
    assert np.abs(pixels(decoded)[8, 4] - np.array([0, 255, 255])).max() < 12
    assert np.abs(pixels(decoded)[8, 28] - np.array(WHITE)).max() < 12


def test_palette_transparency_is_composited_on_white() -> None:
    palette_image = Image.new("P", (10, 10), 1)
    palette_image.putpalette([0, 0, 0, 200, 30, 30] + [0, 0, 0] * 254)
    palette_image.paste(0, (0, 0, 5, 10))  # left half uses index 0, the transparent one
    for image_format in ("PNG", "GIF"):
        data = encode(palette_image, image_format, transparency=0)
        with Image.open(io.BytesIO(data)) as check:
            assert check.mode == "P"
            assert "transparency" in check.info
        decoded = decode_image(data, LIMITS)
        assert decoded.getpixel((1, 5)) == WHITE, image_format
        assert decoded.getpixel((8, 5)) == (200, 30, 30), image_format


@pytest.mark.parametrize("mode", ["RGBA", "LA"])
def test_alpha_is_composited_on_white(mode: str) -> None:
    colour = (40, 80, 120) if mode == "RGBA" else (100,)
    image = Image.new(mode, (3, 1))
    image.putpixel((0, 0), (*colour, 0))  # fully transparent: hidden colour must not show
    image.putpixel((1, 0), (*colour, 255))
    image.putpixel((2, 0), (*colour, 128))
    decoded = decode_image(encode(image, "PNG"), LIMITS)
    rgb = np.array(colour * 3 if mode == "LA" else colour, dtype=np.float64)
    assert decoded.getpixel((0, 0)) == WHITE
    assert decoded.getpixel((1, 0)) == tuple(int(value) for value in rgb)
    half = rgb * 128 / 255 + 255 * (1 - 128 / 255)
    assert np.abs(np.array(decoded.getpixel((2, 0))) - half).max() <= 1


def test_sixteen_bit_greyscale_is_scaled_not_clipped() -> None:
    levels = np.array([[0, 257, 32768, 65535, 1000, 60000]], dtype=np.uint16)
    data = encode(Image.fromarray(levels), "PNG")
    with Image.open(io.BytesIO(data)) as check:
        assert check.mode.startswith("I;16")
    decoded = decode_image(data, LIMITS)
    assert decoded.mode == "RGB"
    grey = pixels(decoded)[0, :, 0]
    expected = np.round(levels[0].astype(np.float64) * 255 / 65535).astype(np.int64)
    np.testing.assert_array_equal(grey, expected)
    np.testing.assert_array_equal(pixels(decoded)[0, :, 1], grey)


@pytest.mark.parametrize("mode", ["L", "1"])
def test_greyscale_and_bilevel_become_rgb(mode: str) -> None:
    image = Image.new(mode, (4, 2), 0)
    image.putpixel((3, 1), 255 if mode == "L" else 1)
    decoded = decode_image(encode(image, "PNG"), LIMITS)
    assert decoded.mode == "RGB"
    assert decoded.getpixel((0, 0)) == (0, 0, 0)
    assert decoded.getpixel((3, 1)) == WHITE


# --- limits --------------------------------------------------------------------------------


def test_byte_limit_is_checked_first_and_is_inclusive() -> None:
    data = encode(quadrants(), "PNG")
    exact = ImageLimits(max_bytes=len(data), max_pixels=1 << 20)
    assert decode_image(data, exact).size == (60, 40)
    smaller = ImageLimits(max_bytes=len(data) - 1, max_pixels=1 << 20)
    with pytest.raises(ImageDecodeError, match=f"{len(data)} bytes") as error:
        decode_image(data, smaller)
    assert error.value.reason == "too_many_bytes"
    # Even garbage is refused for its size before anyone looks at it.
    assert reason_of(b"x" * 100, ImageLimits(max_bytes=99, max_pixels=1)) == "too_many_bytes"


def test_pixel_limit_is_inclusive() -> None:
    data = encode(quadrants(60, 40), "PNG")
    assert decode_image(data, ImageLimits(max_bytes=1 << 20, max_pixels=2400)).size == (60, 40)
    with pytest.raises(ImageDecodeError, match="60x40 = 2400 pixels") as error:
        decode_image(data, ImageLimits(max_bytes=1 << 20, max_pixels=2399))
    assert error.value.reason == "too_many_pixels"


def refuse_without_loading(
    monkeypatch: pytest.MonkeyPatch, data: bytes, limits: ImageLimits
) -> tuple[str, float, int]:
    """Decode ``data``; return (reason, seconds, growth of peak RSS in bytes), asserting that
    Pillow never started decoding pixels."""
    loads: list[object] = []
    real_load: Callable[[ImageFile.ImageFile], Any] = ImageFile.ImageFile.load

    def spying_load(self: ImageFile.ImageFile) -> Any:
        loads.append(self)
        return real_load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", spying_load)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with pytest.raises(ImageDecodeError) as error:
        decode_image(data, limits)
    elapsed = time.perf_counter() - started
    growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert loads == [], "pixels were decoded before the pixel limit was checked"
    return error.value.reason, elapsed, growth_kib * 1024


@pytest.mark.parametrize(
    ("width", "height"),
    [
        (9_000, 9_000),  # 81 M: under Pillow's own bomb threshold, so our check must catch it
        (10_000, 9_000),  # 90 M: Pillow warns (an error under this test suite's filters)
        (50_000, 50_000),  # 2.5 G: Pillow's DecompressionBombError
    ],
)
def test_decompression_bomb_is_refused_without_allocating(
    monkeypatch: pytest.MonkeyPatch, width: int, height: int
) -> None:
    data = declared_png(width, height)
    assert len(data) < 2_000
    reason, elapsed, growth = refuse_without_loading(monkeypatch, data, LIMITS)
    assert reason == "too_many_pixels"
    assert elapsed < 1.0
    declared_bytes = width * height * 3
    assert growth < 50 << 20 < declared_bytes


def test_pillows_bomb_warning_is_refused_whatever_the_warning_filters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = declared_png(10_000, 9_000)
    for action in ("error", "ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter(action)
            reason, _, _ = refuse_without_loading(monkeypatch, data, LIMITS)
        assert reason == "too_many_pixels", action


def test_a_huge_allowance_still_refuses_pillows_bombs() -> None:
    generous = ImageLimits(max_bytes=1 << 20, max_pixels=10**12)
    assert reason_of(declared_png(50_000, 50_000), generous) == "too_many_pixels"


def test_a_declared_size_within_limits_but_missing_data_is_invalid() -> None:
    assert reason_of(declared_png(2_000, 2_000)) == "invalid_image"


# --- the API itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_bytes": 0, "max_pixels": 1}, "positive"),
        ({"max_bytes": 1, "max_pixels": -1}, "positive"),
        ({"max_bytes": 1, "max_pixels": 1, "formats": ()}, "at least one"),
        ({"max_bytes": 1, "max_pixels": 1, "formats": ("JPG",)}, "JPG"),
        ({"max_bytes": 1, "max_pixels": 1, "formats": ("png",)}, "png"),
    ],
)
def test_impossible_limits_are_refused(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ImageLimits(**arguments)


def test_decode_errors_pickle_and_check_their_reason() -> None:
    error = ImageDecodeError("too_many_pixels", "too big")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.reason, str(copy)) == ("too_many_pixels", "too big")
    with pytest.raises(ValueError, match="reason"):
        ImageDecodeError("bad", "x")  # type: ignore[arg-type]

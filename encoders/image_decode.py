"""Turning untrusted image file bytes into an RGB ``PIL.Image``, with limits checked first.

Every failure is an ``ImageDecodeError`` whose ``reason`` says which client mistake it was, so a
caller (the HTTP service, an index build) can map it to a status code and never to a crash:

- ``too_many_bytes``: the file is larger than ``ImageLimits.max_bytes`` (checked before parsing);
- ``too_many_pixels``: the header declares more than ``ImageLimits.max_pixels`` (width x height),
  checked after the header is parsed and *before* any pixel is decoded, so a decompression bomb
  (a tiny file declaring a huge canvas) never allocates its canvas;
- ``unsupported_format``: an image in a format outside ``ImageLimits.formats`` (BMP, TIFF, ...);
- ``invalid_image``: not an image, or a corrupt or truncated one.

Pillow's own bomb guard (``Image.MAX_IMAGE_PIXELS``, a process-wide global this module never
reads or writes) still runs inside ``Image.open``: its ``DecompressionBombError``, and its
``DecompressionBombWarning`` when warnings are turned into errors, become ``too_many_pixels``
too. So the effective limit is the smaller of ``max_pixels`` and ``2 * Image.MAX_IMAGE_PIXELS``
(about 179 M pixels by default). Where warnings stay warnings, Pillow's is merely reported by the
``warnings`` module (once per location by default) and ``max_pixels`` refuses the image as usual;
silencing it here would need ``warnings.catch_warnings``, which is not thread-safe.
``ImageFile.LOAD_TRUNCATED_IMAGES`` is left alone (False), so a truncated file is refused instead
of being padded with grey.

What the returned image looks like:

- the first frame of an animated GIF / WebP / PNG;
- EXIF orientation applied (``ImageOps.exif_transpose``), so a phone photo stands upright;
- mode RGB. Transparent images (RGBA, LA, P or L with a transparent colour, ...) are composited
  over white: the colour under fully transparent pixels is arbitrary (often black), and a cut-out
  or logo is drawn on white far more often than on black, so white is what a viewer saw. 16-bit
  greyscale (``I;16*``, and ``I`` which Pillow uses for 16-bit samples) is scaled to 8 bits by
  ``round(v * 255 / 65535)``, not clipped. CMYK uses Pillow's plain conversion; no ICC colour
  management is applied to any mode.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from typing import Final, Literal, get_args

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

DecodeFailure = Literal["too_many_bytes", "too_many_pixels", "unsupported_format", "invalid_image"]
DECODE_FAILURES: Final[tuple[str, ...]] = get_args(DecodeFailure)
DEFAULT_FORMATS: Final = ("JPEG", "PNG", "WEBP", "GIF")

# Formats Pillow recognises by an unambiguous signature. Bytes in one of these that the
# allow-list refuses are "unsupported_format". Formats without a magic number (TGA, IM, SPIDER,
# PCD, IPTC) are deliberately absent: arbitrary bytes can pass for them and must stay
# "invalid_image".
_SIGNED_FORMATS: Final = (
    "JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF", "ICO", "ICNS", "JPEG2000", "PSD", "PPM", "QOI",
    "AVIF", "DDS", "PCX", "SGI", "EPS", "XBM", "XPM", "SUN",
)  # fmt: skip
# ISO base media files (HEIC/HEIF, AVIF, MP4) carry "ftyp" at byte 4; Pillow cannot read HEIC
# without a plugin, yet such an upload is an image in a refused format, not garbage.
_ISO_BMFF_BRAND_OFFSET: Final = slice(4, 8)
_ISO_BMFF_MARKER: Final = b"ftyp"
_SIXTEEN_BIT_MODES: Final = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})
_ALPHA_MODES: Final = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
_WHITE: Final = (255, 255, 255, 255)
_SIXTEEN_BIT_MAX: Final = 65535

logger = logging.getLogger(__name__)


class ImageDecodeError(Exception):
    """Image bytes were refused; ``reason`` is one of ``DECODE_FAILURES``."""

    def __init__(self, reason: DecodeFailure, message: str) -> None:
        """``reason``: the machine-readable cause; ``message``: what a client should be told."""
        if reason not in DECODE_FAILURES:
            raise ValueError(f"reason must be one of {DECODE_FAILURES}, got {reason!r}")
        super().__init__(message)
        self.reason: DecodeFailure = reason
        self.message = message

    def __reduce__(self) -> tuple[type[ImageDecodeError], tuple[DecodeFailure, str]]:
        # Keeps the error picklable (decoding may run in worker processes) despite two arguments.
        return type(self), (self.reason, self.message)


@dataclass(frozen=True)
class ImageLimits:
    """What ``decode_image`` accepts.

    ``max_bytes``: largest file in bytes. ``max_pixels``: largest width x height of the image as
    declared by its header. ``formats``: Pillow format names allowed, upper case.
    """

    max_bytes: int
    max_pixels: int
    formats: tuple[str, ...] = DEFAULT_FORMATS

    def __post_init__(self) -> None:
        """Refuse limits that could never work, rather than failing on every request later."""
        if self.max_bytes <= 0 or self.max_pixels <= 0:
            raise ValueError(
                f"max_bytes and max_pixels must be positive, got {self.max_bytes}, "
                f"{self.max_pixels}"
            )
        if not self.formats:
            raise ValueError("formats must name at least one image format")
        # A name Pillow does not register would make Image.open raise KeyError on every call.
        known = set(Image.registered_extensions().values())
        unknown = [name for name in self.formats if name not in known]
        if unknown:
            raise ValueError(f"formats {unknown} are not Pillow format names ({sorted(known)})")


def decode_image(data: bytes, limits: ImageLimits) -> Image.Image:
    """Decode one image file's bytes into an RGB image, refusing what ``limits`` excludes.

    Returns a fully loaded ``PIL.Image.Image`` of mode "RGB" (8 bits per channel), independent
    of ``data``; its size is the oriented size (width and height swap for EXIF rotations).
    Raises ``ImageDecodeError``; checks run in this order: byte count, format, declared pixel
    count (before decoding), then the decode itself. Thread-safe: no global state is changed.
    """
    if len(data) > limits.max_bytes:
        raise ImageDecodeError(
            "too_many_bytes", f"image file is {len(data)} bytes; the limit is {limits.max_bytes}"
        )
    if not data:
        raise ImageDecodeError("invalid_image", "image file is empty")
    try:
        with Image.open(io.BytesIO(data), formats=limits.formats) as opened:
            _check_pixels(opened.size, limits.max_pixels)
            # load() decodes the pixels; it raises on truncated data because
            # ImageFile.LOAD_TRUNCATED_IMAGES is False.
            opened.load()
            # Both steps return new images detached from the file, which closes on exit.
            return _to_rgb(_apply_exif_orientation(opened))
    except ImageDecodeError:
        raise
    except UnidentifiedImageError as error:
        raise _classify_unidentified(data, limits.formats) from error
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise ImageDecodeError(
            "too_many_pixels", f"image declares too many pixels for this decoder: {error}"
        ) from error
    except MemoryError:
        raise
    except Exception as error:
        # Pillow's plugins raise a wide, version-dependent range of exceptions on malformed data
        # (OSError, SyntaxError, ValueError, EOFError, struct.error, zlib.error, ...). Whatever
        # bytes a client sends must end as a client error, never as a server crash.
        raise ImageDecodeError(
            "invalid_image", f"image data is corrupt or truncated: {type(error).__name__}: {error}"
        ) from error


def _check_pixels(size: tuple[int, int], max_pixels: int) -> None:
    """Refuse a declared ``(width, height)`` that is empty or above ``max_pixels``."""
    width, height = size
    if width <= 0 or height <= 0:
        raise ImageDecodeError("invalid_image", f"image declares an empty size {width}x{height}")
    if width * height > max_pixels:
        raise ImageDecodeError(
            "too_many_pixels",
            f"image is {width}x{height} = {width * height} pixels; the limit is {max_pixels}",
        )


def _classify_unidentified(data: bytes, allowed: tuple[str, ...]) -> ImageDecodeError:
    """The error for bytes no allowed format accepted: another image format, or not an image."""
    refused = f"allowed formats are {', '.join(allowed)}"
    if data[_ISO_BMFF_BRAND_OFFSET] == _ISO_BMFF_MARKER:
        return ImageDecodeError(
            "unsupported_format", f"HEIF/AVIF/MP4-style files are not accepted; {refused}"
        )
    known = set(Image.registered_extensions().values())
    candidates: list[str] = [
        name for name in _SIGNED_FORMATS if name not in allowed and name in known
    ]
    try:
        # Only the header is parsed (no load()), to name the format in the message.
        with Image.open(io.BytesIO(data), formats=candidates) as other:
            found = other.format or "unknown"
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # The bomb check runs only after a format plugin accepted the header.
        found = "unknown"
    except MemoryError:
        raise
    except Exception:
        return ImageDecodeError("invalid_image", f"data is not a recognised image; {refused}")
    return ImageDecodeError(
        "unsupported_format", f"image format {found} is not accepted; {refused}"
    )


def _apply_exif_orientation(image: Image.Image) -> Image.Image:
    """A copy of ``image`` rotated/flipped as its EXIF orientation tag says (copy if none)."""
    try:
        return ImageOps.exif_transpose(image)
    except MemoryError:
        raise
    except Exception as error:
        # Broken EXIF metadata does not make the pixels unusable: keep them as stored.
        logger.debug("ignoring unreadable EXIF orientation: %s", error)
        return image.copy()


def _to_rgb(image: Image.Image) -> Image.Image:
    """Convert any Pillow mode to 8-bit RGB (see the module docstring for each mode's rule)."""
    if image.mode in _SIXTEEN_BIT_MODES:
        image = _sixteen_bit_to_greyscale(image)
    if image.mode in _ALPHA_MODES or "transparency" in image.info:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, _WHITE)
        return Image.alpha_composite(background, rgba).convert("RGB")
    if image.mode != "RGB":
        return image.convert("RGB")
    return image


def _sixteen_bit_to_greyscale(image: Image.Image) -> Image.Image:
    """16-bit samples (0-65535) → mode "L" by ``round(v * 255 / 65535)``.

    Pillow's own ``convert("L")`` clips at 255, which turns most 16-bit images white.
    """
    samples = np.clip(np.asarray(image).astype(np.int64), 0, _SIXTEEN_BIT_MAX)
    scaled = (samples * 255 + _SIXTEEN_BIT_MAX // 2) // _SIXTEEN_BIT_MAX
    return Image.fromarray(scaled.astype(np.uint8))

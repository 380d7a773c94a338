"""Image payloads of requests: size checks, strict base64, and decoding to RGB pixels.

An image reaches the service either as base64 text in a JSON body (``query.image``, the sides of
``/v1/score``, ``images`` of ``/v1/embed``) or as the file part of ``POST /v1/search/upload``.
The checks run cheapest first, each before the work it protects:

1. the base64 text's length against ``max_image_bytes`` (4/3 of it, rounded up to whole
   4-character groups) — a longer string is refused with 413 before it is decoded;
2. strict base64 decoding (standard alphabet, padding required, no whitespace, no ``data:``
   prefix) — malformed text is 422;
3. ``encoders.image_decode.decode_image``: file bytes, format, the pixel count the header
   declares (before any pixel is decoded), then the decode itself; its ``reason`` maps to a
   status through :data:`service.http.errors.CODE_OF_IMAGE_REFUSAL`.

Every refusal is an :class:`service.exceptions.ImageRefusedError` with its reason. The functions
here are blocking and pure; :mod:`service.engine.search.searcher` runs them off the event loop.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass

from PIL.Image import Image

from encoders.image_decode import ImageDecodeError, ImageLimits, decode_image
from service.exceptions import ImageRefusedError
from service.settings import Settings


@dataclass(frozen=True)
class ImagePayload:
    """One image of a request as the client sent it.

    ``where`` names it in error messages (``query.image``, ``pairs.0.left.image``,
    ``images.3``, ``file``); ``data`` is base64 text (JSON routes) or the file bytes (upload).
    """

    where: str
    data: str | bytes


def image_limits(settings: Settings) -> ImageLimits:
    """What ``decode_image`` accepts under ``settings``: ``max_image_bytes``,
    ``max_image_pixels`` and the contract's formats (JPEG, PNG, WEBP, GIF)."""
    return ImageLimits(max_bytes=settings.max_image_bytes, max_pixels=settings.max_image_pixels)


def max_base64_chars(max_bytes: int) -> int:
    """Longest padded base64 text (characters) whose decoded bytes can be ``max_bytes``:
    ``4 * ceil(max_bytes / 3)``."""
    return 4 * ((max_bytes + 2) // 3)


def check_base64_length(where: str, text: str, settings: Settings) -> None:
    """Raise :class:`ImageRefusedError` too_many_bytes when ``text`` is too long to decode to at
    most ``max_image_bytes``; nothing is decoded. (A text within the bound may still decode to one
    or two bytes more; ``decode_image`` refuses those.)"""
    limit = max_base64_chars(settings.max_image_bytes)
    if len(text) > limit:
        raise ImageRefusedError(
            "too_many_bytes",
            f"{where}: {len(text)} base64 characters, more than the {limit} that "
            f"max_image_bytes={settings.max_image_bytes} allows",
            param=where,
        )


def decode_base64(where: str, text: str) -> bytes:
    """The bytes of strict, padded, standard-alphabet base64 ``text``.

    Raises :class:`ImageRefusedError` invalid_base64 for anything else: whitespace, URL-safe
    characters, missing padding, a ``data:`` URL prefix, non-ASCII characters.
    """
    if text.startswith("data:"):
        raise ImageRefusedError(
            "invalid_base64",
            f"{where}: send the base64 of the file bytes, not a data: URL",
            param=where,
        )
    try:
        return binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (UnicodeEncodeError, binascii.Error) as error:
        reason = "non-ASCII character" if isinstance(error, UnicodeEncodeError) else str(error)
        raise ImageRefusedError(
            "invalid_base64",
            f"{where}: not valid base64 ({reason}); use the standard alphabet with padding and "
            "no whitespace",
            param=where,
        ) from None


def payload_bytes(payload: ImagePayload) -> bytes:
    """The file bytes of ``payload``: base64-decoded text, or the bytes as given."""
    if isinstance(payload.data, bytes):
        return payload.data
    return decode_base64(payload.where, payload.data)


def decode_payload(where: str, data: bytes, limits: ImageLimits) -> Image:
    """Decode one image file's bytes into an RGB image (EXIF-oriented, first frame).

    Raises :class:`ImageRefusedError` with the decoder's reason (status: the error table): 413 over
    ``max_bytes`` or ``max_pixels``, 415 for a format outside ``limits.formats``, 422 for bytes
    that are not a (complete) image. Blocking.
    """
    try:
        return decode_image(data, limits)
    except ImageDecodeError as error:
        raise ImageRefusedError(error.reason, f"{where}: {error.message}", param=where) from error


def refuse_oversized_file(where: str, size: int, settings: Settings) -> None:
    """Raise :class:`ImageRefusedError` too_many_bytes when an uploaded file of ``size``
    bytes is over ``max_image_bytes`` (checked before the file is read into memory)."""
    if size > settings.max_image_bytes:
        raise ImageRefusedError(
            "too_many_bytes",
            f"{where}: image file is {size} bytes; the limit is "
            f"max_image_bytes={settings.max_image_bytes}",
            param=where,
        )

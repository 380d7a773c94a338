"""Image payloads (service.engine.query.images), cheapest check first: the base64 length bound,
strict base64, then decoding; each refusal an ImageRefusedError with its reason and the payload's
place in the request."""

from __future__ import annotations

from pathlib import Path

import pytest

from encoders.image_decode import ImageLimits
from service.engine.query.images import (
    ImagePayload,
    check_base64_length,
    decode_base64,
    decode_payload,
    image_limits,
    max_base64_chars,
    payload_bytes,
    refuse_oversized_file,
)
from service.exceptions import ImageRefusedError
from service.settings import Settings
from tests.fakes.image_files import b64, png_declaring, solid, truncated_jpeg

LIMITS = ImageLimits(max_bytes=100_000, max_pixels=250_000)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        bundles_root=tmp_path, variants_root=tmp_path, max_image_bytes=30, max_image_pixels=400
    )


def test_base64_length_bound_is_exact() -> None:
    # 4 characters per 3 bytes, rounded up to whole groups: the longest text that can still
    # decode to max_bytes or fewer.
    assert [max_base64_chars(n) for n in (1, 2, 3, 4, 100_000)] == [4, 4, 4, 8, 133_336]


def test_a_text_too_long_for_max_image_bytes_is_refused_undecoded(settings: Settings) -> None:
    check_base64_length("query.image", "A" * 40, settings)
    with pytest.raises(ImageRefusedError) as refused:
        check_base64_length("query.image", "A" * 44, settings)
    assert refused.value.reason == "too_many_bytes"
    assert refused.value.message == (
        "query.image: 44 base64 characters, more than the 40 that max_image_bytes=30 allows"
    )


def test_image_limits_follow_the_settings(settings: Settings) -> None:
    limits = image_limits(settings)
    assert (limits.max_bytes, limits.max_pixels) == (30, 400)


def test_strict_base64_decodes() -> None:
    assert decode_base64("images.0", "aGVsbG8=") == b"hello"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("aGVsbG8", "not valid base64"),  # padding missing
        ("aGVs bG8=", "not valid base64"),  # whitespace
        ("aGVsbG8_", "not valid base64"),  # URL-safe alphabet
        ("aGVsbG8é", "not valid base64 (non-ASCII character)"),
        ("data:image/png;base64,aGVsbG8=", "not a data: URL"),
    ],
    ids=["unpadded", "whitespace", "url-safe", "non-ascii", "data-url"],
)
def test_anything_but_strict_base64_is_refused(text: str, message: str) -> None:
    with pytest.raises(ImageRefusedError) as refused:
        decode_base64("images.0", text)
    assert refused.value.reason == "invalid_base64"
    assert refused.value.message.startswith("images.0: ")
    assert message in refused.value.message


def test_payload_bytes_decode_text_and_pass_bytes_through() -> None:
    data = solid("red")
    assert payload_bytes(ImagePayload("query.image", b64(data))) == data
    assert payload_bytes(ImagePayload("file", data)) == data


def test_a_good_image_decodes_to_rgb() -> None:
    image = decode_payload("query.image", solid("blue", "GIF", size=(10, 6)), LIMITS)
    assert (image.mode, image.size) == ("RGB", (10, 6))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (png_declaring(100_000, 100_000), "too_many_pixels"),
        (solid("red", "BMP"), "unsupported_format"),
        (truncated_jpeg(), "invalid_image"),
        (b"\x00" * 200_000, "too_many_bytes"),
    ],
    ids=["bomb", "bmp", "truncated", "too-big"],
)
def test_a_refused_image_names_its_reason_and_place(data: bytes, reason: str) -> None:
    with pytest.raises(ImageRefusedError) as refused:
        decode_payload("pairs.1.right.image", data, LIMITS)
    assert refused.value.reason == reason
    assert refused.value.message.startswith("pairs.1.right.image: ")


def test_an_oversized_upload_is_refused_before_it_is_read(settings: Settings) -> None:
    refuse_oversized_file("file", 30, settings)
    with pytest.raises(ImageRefusedError, match=r"file: image file is 31 bytes") as refused:
        refuse_oversized_file("file", 31, settings)
    assert refused.value.reason == "too_many_bytes"

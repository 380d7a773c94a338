"""Every bad image input answers its documented 4xx in the one error shape — never a 500 — and
is refused before anything is encoded.

Runs on the multimodal deployment (tests/fakes/service_app.py) with small image limits:
max_image_bytes 100,000, max_image_pixels 250,000, max_images_per_request 4.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from service.engine.query.images import max_base64_chars
from service.http.errors import STATUS_OF, ErrorCode, error_kind
from tests.api.test_errors_api import BadRequest, send
from tests.fakes.fake_bundles import PIXELS_VARIANT, caption_id
from tests.fakes.fake_encoders import FAKE_VARIANT
from tests.fakes.image_files import (
    b64,
    field,
    file_part,
    multipart,
    png_declaring,
    solid,
    truncated_jpeg,
    upload,
)
from tests.fakes.service_app import TEST_IMAGE_LIMITS, Multimodal

MAX_BYTES = TEST_IMAGE_LIMITS["max_image_bytes"]
MAX_CHARS = max_base64_chars(MAX_BYTES)
RED = b64(solid("red"))
UPLOAD = "/v1/search/upload"


def image_search(image: Any, **changes: Any) -> dict[str, Any]:
    return {"query": {"image": image}, "collection": "images", "k": 3, **changes}


def image_pair(left: Any, right: Any = None) -> dict[str, Any]:
    return {"left": {"image": left}, "right": {"image": RED if right is None else right}}


def upload_case(code: ErrorCode, body: tuple[bytes, dict[str, str]], part: str = "") -> BadRequest:
    content, headers = body
    return BadRequest(code, path=UPLOAD, raw_body=content, headers=headers, message_part=part)


BAD_IMAGES = {
    # -- base64 ------------------------------------------------------------------------------------
    "invalid base64 characters": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=image_search("!!not*base64!!"),
        message_part="query.image: not valid base64",
    ),
    "base64 without padding": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=image_search("aGVsbG8"), message_part="padding"
    ),
    "base64 with a newline": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=image_search(RED[:40] + "\n" + RED[40:]),
        message_part="base64",
    ),
    "url-safe base64": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=image_search(RED.replace("+", "-").replace("/", "_") + "-_"),
    ),
    "data URL": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=image_search("data:image/png;base64," + RED),
        message_part="data: URL",
    ),
    "non-ASCII base64": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=image_search("ÿÿÿÿ"), message_part="non-ASCII"
    ),
    "empty image string": BadRequest(ErrorCode.INVALID_INPUT, json_body=image_search("")),
    "image not a string": BadRequest(ErrorCode.INVALID_INPUT, json_body=image_search(12345)),
    "image as a list of bytes": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=image_search([137, 80, 78, 71])
    ),
    # -- size --------------------------------------------------------------------------------------
    "base64 longer than max_image_bytes allows": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE,
        json_body=image_search("A" * (MAX_CHARS + 4)),
        message_part=f"max_image_bytes={MAX_BYTES}",
    ),
    "overlong base64 is refused before it is decoded": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE, json_body=image_search("@" * (MAX_CHARS + 1))
    ),
    "decodes to one byte over max_image_bytes": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE,
        json_body=image_search(b64(b"\0" * (MAX_BYTES + 1))),
        message_part=f"{MAX_BYTES + 1} bytes",
    ),
    "exactly max_image_bytes passes the size checks (then is no image)": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=image_search(b64(b"\0" * MAX_BYTES)),
        message_part="not a recognised image",
    ),
    "decompression bomb PNG (10^10 pixels declared)": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE, json_body=image_search(b64(png_declaring(100_000, 100_000)))
    ),
    "PNG declaring more than max_image_pixels": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE,
        json_body=image_search(b64(png_declaring(1000, 1000))),
        message_part="250000",
    ),
    # -- content -----------------------------------------------------------------------------------
    "bytes that are not an image": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=image_search(b64(b"%PDF-1.7 this is certainly not a picture")),
        message_part="query.image",
    ),
    "truncated JPEG": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=image_search(b64(truncated_jpeg()))
    ),
    "BMP (format not accepted)": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        json_body=image_search(b64(solid("red", "BMP"))),
        message_part="BMP",
    ),
    "TIFF (format not accepted)": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        json_body=image_search(b64(solid("red", "TIFF"))),
        message_part="TIFF",
    ),
    # -- query shape and towers --------------------------------------------------------------------
    "image and text together": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body={"query": {"image": RED, "text": "red"}, "collection": "images"},
        message_part="exactly one",
    ),
    "image query on a text-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        json_body=image_search(RED, collection="captions", variant=FAKE_VARIANT),
        message_part="query.image: variant 'fake-bow' has no image tower",
    ),
    "text query on an image-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        json_body={"query": {"text": "red"}, "collection": "images", "variant": PIXELS_VARIANT},
        message_part="has no text tower",
    ),
    "image query into a collection the variant lacks": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=image_search(RED, collection="captions", variant="fake-pixels"),
    ),
    # -- score -------------------------------------------------------------------------------------
    "score: more image sides than max_images_per_request": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [image_pair(RED)] * 3},
        message_part="max_images_per_request=4",
    ),
    "score: bad base64 on a right side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [image_pair(RED), image_pair(RED, "%%%")]},
        message_part="pairs.1.right.image",
    ),
    "score: image side on a text-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        path="/v1/score",
        json_body={
            "pairs": [{"left": {"text": "red"}, "right": {"image": RED}}],
            "variant": FAKE_VARIANT,
        },
        message_part="pairs.0.right.image",
    ),
    "score: text side on an image-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        path="/v1/score",
        json_body={
            "pairs": [{"left": {"text": "red"}, "right": {"image": RED}}],
            "variant": PIXELS_VARIANT,
        },
        message_part="pairs.0.left.text",
    ),
    "score: overlong base64": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE,
        path="/v1/score",
        json_body={"pairs": [image_pair(RED, "A" * (MAX_CHARS + 4))]},
        message_part="pairs.0.right.image",
    ),
    # -- embed -------------------------------------------------------------------------------------
    "embed: more images than max_images_per_request": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"images": [RED] * 5},
        message_part="max_images_per_request=4",
    ),
    "embed: texts and images": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"texts": ["red"], "images": [RED]},
        message_part="exactly one",
    ),
    "embed: neither texts nor images": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/embed", json_body={}, message_part="exactly one"
    ),
    "embed: no images": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/embed", json_body={"images": []}
    ),
    "embed: a bad image among good ones": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"images": [RED, b64(b"nope, not an image")]},
        message_part="images.1",
    ),
    "embed: a BMP among good ones": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        path="/v1/embed",
        json_body={"images": [RED, RED, b64(solid("blue", "BMP"))]},
        message_part="images.2",
    ),
    "embed: images on a text-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        path="/v1/embed",
        json_body={"images": [RED], "variant": FAKE_VARIANT},
        message_part="has no image tower",
    ),
    "embed: texts on an image-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        path="/v1/embed",
        json_body={"texts": ["red"], "variant": PIXELS_VARIANT},
        message_part="has no text tower",
    ),
    # -- upload ------------------------------------------------------------------------------------
    "upload: missing file field": upload_case(
        ErrorCode.INVALID_INPUT, multipart([field("collection", "images")]), "file: missing"
    ),
    "upload: file sent as a plain field": upload_case(
        ErrorCode.INVALID_INPUT,
        multipart([field("file", "not a file"), field("collection", "images")]),
        "file part",
    ),
    "upload: two files": upload_case(
        ErrorCode.INVALID_INPUT,
        multipart(
            [file_part(solid("red")), file_part(solid("blue")), field("collection", "images")]
        ),
        "Too many files",
    ),
    "upload: file under another name": upload_case(
        ErrorCode.INVALID_INPUT,
        multipart([file_part(solid("red"), name="image"), field("collection", "images")]),
    ),
    "upload: JSON content type": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        path=UPLOAD,
        json_body=image_search(RED),
        message_part="multipart/form-data",
    ),
    "upload: urlencoded form": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        path=UPLOAD,
        raw_body=b"collection=images",
        headers={"content-type": "application/x-www-form-urlencoded"},
    ),
    "upload: raw image body": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        path=UPLOAD,
        raw_body=solid("red"),
        headers={"content-type": "image/png"},
    ),
    "upload: multipart without a boundary": BadRequest(
        ErrorCode.INVALID_INPUT,
        path=UPLOAD,
        raw_body=b"--x\r\n",
        headers={"content-type": "multipart/form-data"},
        message_part="boundary",
    ),
    "upload: garbage multipart body": BadRequest(
        ErrorCode.INVALID_INPUT,
        path=UPLOAD,
        raw_body=b"\x00\x01 definitely not multipart",
        headers={"content-type": "multipart/form-data; boundary=abc"},
    ),
    "upload: missing collection": upload_case(
        ErrorCode.INVALID_INPUT, upload(solid("red")), "collection"
    ),
    "upload: k not a number": upload_case(
        ErrorCode.INVALID_INPUT, upload(solid("red"), ("collection", "images"), ("k", "ten")), "k"
    ),
    "upload: k over max_k": upload_case(
        ErrorCode.INVALID_INPUT,
        upload(solid("red"), ("collection", "images"), ("k", "1001")),
        "max_k=1000",
    ),
    "upload: include_metadata not a boolean": upload_case(
        ErrorCode.INVALID_INPUT,
        upload(solid("red"), ("collection", "images"), ("include_metadata", "perhaps")),
        "include_metadata",
    ),
    "upload: unknown field": upload_case(
        ErrorCode.INVALID_INPUT,
        upload(solid("red"), ("collection", "images"), ("top_k", "3")),
        "top_k",
    ),
    "upload: collection given twice": upload_case(
        ErrorCode.INVALID_INPUT,
        upload(solid("red"), ("collection", "images"), ("collection", "captions")),
        "more than once",
    ),
    "upload: exclude over max_exclude": upload_case(
        ErrorCode.INVALID_INPUT,
        upload(
            solid("red"), ("collection", "images"), *[("exclude", f"x{n}") for n in range(1001)]
        ),
        "max_exclude=1000",
    ),
    "upload: unknown collection": upload_case(
        ErrorCode.NOT_FOUND, upload(solid("red"), ("collection", "videos")), "videos"
    ),
    "upload: unknown variant": upload_case(
        ErrorCode.NOT_FOUND,
        upload(solid("red"), ("collection", "images"), ("variant", "nope")),
        "nope",
    ),
    "upload: text-only variant": upload_case(
        ErrorCode.TOWER_MISSING,
        upload(solid("red"), ("collection", "captions"), ("variant", FAKE_VARIANT)),
        "file: variant 'fake-bow' has no image tower",
    ),
    "upload: bytes that are not an image": upload_case(
        ErrorCode.INVALID_INPUT, upload(b"GIF? no.", ("collection", "images")), "file"
    ),
    "upload: truncated JPEG": upload_case(
        ErrorCode.INVALID_INPUT, upload(truncated_jpeg(), ("collection", "images"))
    ),
    "upload: TIFF": upload_case(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        upload(solid("red", "TIFF"), ("collection", "images")),
        "TIFF",
    ),
    "upload: decompression bomb": upload_case(
        ErrorCode.PAYLOAD_TOO_LARGE, upload(png_declaring(60_000, 60_000), ("collection", "images"))
    ),
    "upload: file over max_image_bytes": upload_case(
        ErrorCode.PAYLOAD_TOO_LARGE,
        upload(b"\0" * (MAX_BYTES + 1), ("collection", "images")),
        f"max_image_bytes={MAX_BYTES}",
    ),
    "upload: file of exactly max_image_bytes passes the size checks": upload_case(
        ErrorCode.INVALID_INPUT,
        upload(b"\0" * MAX_BYTES, ("collection", "images")),
        "not a recognised image",
    ),
    "upload: body over max_upload_body_bytes": upload_case(
        ErrorCode.PAYLOAD_TOO_LARGE,
        upload(b"\0" * (MAX_BYTES + 300_000), ("collection", "images")),
        "max_upload_body_bytes",
    ),
    "upload: empty file": upload_case(
        ErrorCode.INVALID_INPUT, upload(b"", ("collection", "images")), "empty"
    ),
}


@pytest.mark.parametrize("case", BAD_IMAGES.values(), ids=BAD_IMAGES.keys())
def test_bad_image_input_gets_its_documented_error(
    multimodal: Multimodal, case: BadRequest
) -> None:
    response = send(multimodal.client, case)
    assert response.status_code == STATUS_OF[case.code], response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert response.json() == {
        "error": {
            "code": case.code.value,
            "message": error["message"],
            "request_id": "bad-input-test.1",
            "type": error_kind(case.code),
            "param": error["param"],
        }
    }
    assert error["message"]
    assert case.message_part in error["message"]
    assert response.headers["x-request-id"] == "bad-input-test.1"
    # Refused before the expensive work: no encoder ran.
    assert multimodal.clip_image.calls == []
    assert multimodal.pixels_image.calls == []
    assert multimodal.clip_text.calls == []
    assert multimodal.bow_text.calls == []


def test_errors_never_echo_the_image(multimodal: Multimodal) -> None:
    secret = b64(b"private bytes " * 20)
    response = multimodal.client.post("/v1/search", json=image_search(secret))
    assert response.status_code == 422
    assert secret[:24] not in response.text


def test_a_bad_image_in_score_is_refused_before_texts_are_encoded(multimodal: Multimodal) -> None:
    pairs = [
        {
            "left": {"text": "red"},
            "right": {"item": {"collection": "captions", "id": caption_id(0)}},
        },
        {"left": {"text": "blue"}, "right": {"image": b64(solid("red", "BMP"))}},
    ]
    response = multimodal.client.post(
        "/v1/score",
        content=json.dumps({"pairs": pairs}),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 415
    assert multimodal.clip_text.calls == []

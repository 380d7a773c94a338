"""Teaches schemathesis the one request format of the OpenAPI document that JSON Schema cannot
check: ``crisscross-image-base64``, the base64 of an image file. Loaded by the schemathesis CLI
through ``tests/contract/schemathesis.toml`` (its ``hooks``, from the repository root) or
``SCHEMATHESIS_HOOKS=tests.contract.schemathesis_hooks`` (see ``make contract``).

Every other rule the service enforces is stated in the document itself, so schemathesis draws
all else from the schema as it is.
"""

from __future__ import annotations

import base64
import io

import schemathesis
from hypothesis import strategies as st
from PIL import Image

IMAGE_FORMAT = "crisscross-image-base64"
_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")


def _image_base64(size: int, colour: tuple[int, int, int], file_format: str) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format=file_format)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


IMAGES = st.builds(
    _image_base64,
    st.integers(min_value=1, max_value=48),
    st.tuples(*(st.integers(min_value=0, max_value=255) for _ in range(3))),
    st.sampled_from(_FORMATS),
)

schemathesis.openapi.format(IMAGE_FORMAT, IMAGES)


UPLOAD_PATH = "/v1/search/upload"


def _image_bytes(seed: bytes) -> bytes:
    """A small image file made from ``seed`` (its size, colour and format follow the bytes)."""
    digest = sum(seed) + len(seed)
    buffer = io.BytesIO()
    colour = (digest % 256, (digest // 7) % 256, (digest // 49) % 256)
    Image.new("RGB", (1 + digest % 48, 1 + len(seed) % 48), colour).save(
        buffer, format=_FORMATS[digest % len(_FORMATS)]
    )
    return buffer.getvalue()


@schemathesis.hook
def map_body(context: schemathesis.HookContext, body: object) -> object:
    """The upload's ``file`` part (OpenAPI ``format: binary``, which schemathesis fills with
    arbitrary bytes) becomes an image file; every other part stays as generated."""
    operation = context.operation
    if operation is None or operation.path != UPLOAD_PATH or not isinstance(body, dict):
        return body
    value = body.get("file")
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return {**body, "file": _image_bytes(value)}
    return body

"""Images as the client takes them: a file path, the file's bytes, or a PIL image.

The service takes image *files* (JPEG, PNG, WEBP or GIF): bytes and files are sent as they are;
a PIL image is encoded as PNG first. Pillow is imported only when a PIL image is given (it is
the ``pillow`` extra; paths and bytes need nothing).
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from PIL import Image as PILImage

ImageInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, "PILImage.Image"]
"""An image: a path (``str`` or ``os.PathLike``), the file's bytes, or a ``PIL.Image.Image``."""

_TYPES = {
    b"\xff\xd8\xff": ("image/jpeg", "jpg"),
    b"\x89PNG\r\n\x1a\n": ("image/png", "png"),
    b"GIF87a": ("image/gif", "gif"),
    b"GIF89a": ("image/gif", "gif"),
}


@dataclass(frozen=True)
class ImageFile:
    """An image file's bytes, with a file name and content type for a multipart upload."""

    data: bytes
    filename: str
    content_type: str

    def base64(self) -> str:
        """Standard, padded base64 of the bytes (what JSON image fields take)."""
        return base64.b64encode(self.data).decode("ascii")


def _is_pil_image(value: Any) -> bool:
    # Checked by module name so Pillow is imported only when the value comes from it.
    module = type(value).__module__
    return module.startswith("PIL.") and hasattr(value, "save")


def _kind(data: bytes) -> tuple[str, str]:
    for magic, kind in _TYPES.items():
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp", "webp"
    return "application/octet-stream", "bin"


def image_file(image: ImageInput) -> ImageFile:
    """The file behind ``image``.

    Raises:
        OSError: a path that cannot be read.
        TypeError: not an image input.
    """
    if isinstance(image, bytes | bytearray | memoryview):
        data = bytes(image)
        content_type, extension = _kind(data)
        return ImageFile(data, f"image.{extension}", content_type)
    if isinstance(image, str | os.PathLike):
        path = Path(image)
        data = path.read_bytes()
        content_type, _ = _kind(data)
        return ImageFile(data, path.name, content_type)
    if _is_pil_image(image):
        from PIL import Image  # the pillow extra: imported only when one is given

        picture: Image.Image = image
        if picture.mode not in ("RGB", "RGBA", "L", "LA", "P"):
            picture = picture.convert("RGB")
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        return ImageFile(buffer.getvalue(), "image.png", "image/png")
    raise TypeError(f"an image is a path, bytes or a PIL image, not {type(image).__name__}")


def image_base64(image: ImageInput) -> str:
    """``image``'s file as standard base64."""
    return image_file(image).base64()


def is_image_input(value: object) -> bool:
    """Whether ``value`` is an image given as a path object, bytes or a PIL image (a ``str``
    is not: a bare string is a text wherever both are taken)."""
    return isinstance(value, bytes | bytearray | memoryview | os.PathLike) or _is_pil_image(value)

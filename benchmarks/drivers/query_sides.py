"""How a query or a ``/v1/score`` pair side is written on the wire: text, a stored item, an upload.

``{"text": ...}`` (:func:`text_query`), ``{"item": {"collection", "id"}}`` (:func:`item_ref`) or
``{"image": <base64>}`` (:func:`upload_file`). An image side of a query or score pair is, in
order of preference:

1. an *item reference* ``{"item": {"collection": "images", "id": filename}}`` when the image is
   in the service's ``images`` collection (its stored vector is used);
2. an *upload* ``{"image": <base64 of the file bytes>}`` when the file exists under the images
   folder and the variant has an image tower (the pixel path: decode, preprocess, encode);
3. unavailable — the row or pair is skipped and counted.

Uploads are represented by :class:`ImageFile` until the request is built, so that a run over
tens of thousands of pairs never holds more than one request's worth of base64 in memory.
"""

from __future__ import annotations

import base64
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from benchmarks.drivers.http_client import JsonObject


def text_query(text: str) -> JsonObject:
    """A text query/pair side: ``{"text": text}``."""
    return {"text": text}


def item_ref(collection: str, item_id: str) -> JsonObject:
    """An item query/pair side: ``{"item": {"collection": ..., "id": ...}}``."""
    return {"item": {"collection": collection, "id": item_id}}


@dataclass(frozen=True, slots=True)
class ImageFile:
    """An image to be sent as an upload: its file and the file's size.

    Attributes:
        path: the image file.
        size: the file size, bytes (its base64 form is :attr:`encoded_size` bytes).
    """

    path: Path
    size: int

    @property
    def encoded_size(self) -> int:
        """Length in bytes of the file's base64 encoding (``4 × ceil(size / 3)``)."""
        return 4 * ((self.size + 2) // 3)

    def upload(self) -> JsonObject:
        """The request side ``{"image": <base64 of the file bytes>}`` (reads the file now)."""
        return upload_file(self.path)


def upload_file(path: Path) -> JsonObject:
    """The query/pair side ``{"image": <base64 of the file's bytes>}`` of an image file."""
    return {"image": base64.b64encode(path.read_bytes()).decode("ascii")}


PairSide = JsonObject | ImageFile
"""One side of a ``/v1/score`` pair before the request is built: JSON, or a pending upload."""


def resolve_side(side: PairSide) -> JsonObject:
    """The JSON request side of ``side`` (an :class:`ImageFile` is read and base64-encoded)."""
    return side.upload() if isinstance(side, ImageFile) else side


@dataclass(frozen=True)
class ImageSides:
    """The rule that turns an image file name into a request side.

    Attributes:
        collection: the service's images collection name.
        served: the file names held by that collection (empty when the service has none).
        images_dir: folder holding the image files by file name, or ``None``.
        can_upload: whether the variant has an image tower (uploads are possible at all).
    """

    collection: str
    served: Collection[str]
    images_dir: Path | None
    can_upload: bool

    def file(self, filename: str) -> ImageFile | None:
        """The upload of ``filename`` if uploads are possible and the file exists, else None."""
        if not self.can_upload or self.images_dir is None:
            return None
        path = self.images_dir / filename
        try:
            size = path.stat().st_size
        except OSError:
            return None
        return ImageFile(path=path, size=size) if path.is_file() else None

    def side(self, filename: str) -> PairSide | None:
        """Item reference if served, else the pending upload if possible, else ``None``."""
        if filename in self.served:
            return item_ref(self.collection, filename)
        return self.file(filename)

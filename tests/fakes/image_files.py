"""Image files for the service tests, made in memory: good ones, broken ones, hostile ones, and
multipart bodies built byte by byte (so a test controls every part and header)."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from tests.fakes.fake_encoders import COLOURS

BOUNDARY = "crisscross-test-boundary"


def solid(colour: str, fmt: str = "PNG", size: tuple[int, int] = (16, 12)) -> bytes:
    """A file of ``fmt`` holding one solid colour of :data:`COLOURS`, ``size`` = (w, h)."""
    buffer = io.BytesIO()
    Image.new("RGB", size, COLOURS[colour]).save(buffer, format=fmt)
    return buffer.getvalue()


def b64(data: bytes) -> str:
    """Standard padded base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


def png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` RGB pixels — a decompression
    bomb when the declared size is huge (its data would not even fill it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * 256)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def truncated_jpeg() -> bytes:
    """The first half of a real JPEG: its header parses, its pixels do not."""
    whole = solid("red", "JPEG", size=(64, 48))
    return whole[: len(whole) // 2]


@dataclass(frozen=True)
class Part:
    """One multipart part: a plain field when ``filename`` is None, else a file."""

    name: str
    content: bytes
    filename: str | None = None
    content_type: str | None = None


def file_part(content: bytes, filename: str = "query.png", name: str = "file") -> Part:
    """The image file part of an upload."""
    return Part(name, content, filename, "application/octet-stream")


def field(name: str, value: str) -> Part:
    """A plain form field."""
    return Part(name, value.encode("utf-8"))


def multipart(parts: Sequence[Part], boundary: str = BOUNDARY) -> tuple[bytes, dict[str, str]]:
    """A ``multipart/form-data`` body of ``parts`` and the headers that declare it."""
    lines = bytearray()
    for part in parts:
        disposition = f'form-data; name="{part.name}"'
        if part.filename is not None:
            disposition += f'; filename="{part.filename}"'
        lines += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()
        if part.content_type is not None:
            lines += f"Content-Type: {part.content_type}\r\n".encode()
        lines += b"\r\n" + part.content + b"\r\n"
    lines += f"--{boundary}--\r\n".encode()
    return bytes(lines), {"content-type": f"multipart/form-data; boundary={boundary}"}


def upload(
    content: bytes, *fields: tuple[str, str], filename: str = "query.png"
) -> tuple[bytes, dict[str, str]]:
    """An upload body: the file part, then ``(name, value)`` fields in order."""
    return multipart([file_part(content, filename), *(field(n, v) for n, v in fields)])

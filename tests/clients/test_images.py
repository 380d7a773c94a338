"""Images from a path, bytes or a PIL image: what is sent, and that Pillow is imported only
for a PIL image."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from PIL import Image

import crisscross_client as cc
from crisscross_client.images import image_file

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EMBEDDED = {"embeddings": [[1.0, 0.0]], "dim": 2, "variant": "scenes"}


def _png(colour: tuple[int, int, int] = (200, 10, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_each_kind_of_image_input(tmp_path: Path) -> None:
    data = _png()
    path = tmp_path / "red.png"
    path.write_bytes(data)
    assert image_file(data).data == data
    assert image_file(bytearray(data)).content_type == "image/png"
    from_path = image_file(str(path))
    assert (from_path.data, from_path.filename) == (data, "red.png")
    assert image_file(path).data == data
    jpeg = io.BytesIO()
    Image.new("RGB", (2, 2)).save(jpeg, format="JPEG")
    assert image_file(jpeg.getvalue()).content_type == "image/jpeg"
    from_pil = image_file(Image.new("RGB", (5, 5), (0, 0, 255)))
    assert from_pil.data.startswith(PNG_MAGIC)
    with Image.open(io.BytesIO(from_pil.data)) as decoded:
        assert decoded.size == (5, 5)
    cmyk = image_file(Image.new("CMYK", (2, 2)))
    assert cmyk.content_type == "image/png"
    with pytest.raises(TypeError, match="path, bytes or a PIL image"):
        image_file(3.5)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match=r"missing\.png"):
        image_file(tmp_path / "missing.png")


def test_embed_images_sends_base64_files(tmp_path: Path) -> None:
    data = _png()
    path = tmp_path / "a.png"
    path.write_bytes(data)
    bodies: list[dict[str, list[str]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        return httpx.Response(
            200, json={**EMBEDDED, "embeddings": [[1.0, 0.0]] * len(body["images"])}
        )

    with cc.Client("http://svc", transport=httpx.MockTransport(handler)) as client:
        answer = client.embed_images([path, str(path), data, Image.open(io.BytesIO(data))])
    assert len(answer.embeddings) == 4
    sent = [base64.b64decode(image) for image in bodies[0]["images"]]
    assert sent[:3] == [data, data, data]
    assert sent[3].startswith(PNG_MAGIC)


def test_pillow_is_imported_only_for_a_pil_image() -> None:
    script = (
        "import sys, httpx, crisscross_client as cc\n"
        "from crisscross_client.images import image_file\n"
        "image_file(b'\\x89PNG\\r\\n\\x1a\\n')\n"
        "cc.Client('http://svc').close()\n"
        "print('PIL' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"

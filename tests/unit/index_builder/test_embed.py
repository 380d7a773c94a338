"""The embedding job: texts and image files in batches; images that fail reported one by one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from encoders.image_decode import ImageDecodeError
from index_builder.embed import embed_image_files, embed_images, embed_texts
from tests.fakes.fake_encoders import COLOURS, FakeImageEncoder, FakeTextEncoder
from tests.fakes.user_corpora import truncated_png, write_image


def test_texts_are_embedded_in_batches_in_order() -> None:
    encoder = FakeTextEncoder()
    texts = [f"red {i}" for i in range(5)]
    vectors = embed_texts(encoder, texts, batch_size=2, progress=False)
    assert [len(call) for call in encoder.calls] == [2, 2, 1]
    np.testing.assert_array_equal(vectors, encoder.encode_texts(texts))
    with pytest.raises(ValueError, match="batch_size"):
        embed_texts(encoder, texts, batch_size=0)


def _folder(tmp_path: Path) -> list[Path]:
    paths = []
    for index, colour in enumerate(["red", "green", "blue", "yellow", "white"]):
        paths.append(write_image(tmp_path / f"{index}.png", colour, "PNG"))
    return paths


def _expected(colours: list[str]) -> np.ndarray:
    images = [Image.new("RGB", (16, 12), COLOURS[colour]) for colour in colours]
    return FakeImageEncoder().encode_images(images)


def test_images_that_decode_are_embedded_and_the_others_reported(tmp_path: Path) -> None:
    paths = _folder(tmp_path)
    paths[1].write_bytes(truncated_png())
    paths[3].unlink()
    embedding = embed_images(
        FakeImageEncoder(), paths, batch_size=2, decode_workers=1, progress=False
    )
    assert embedding.embedded == [0, 2, 4]
    assert [position for position, _ in embedding.failures] == [1, 3]
    assert isinstance(embedding.failures[0][1], ImageDecodeError)
    assert isinstance(embedding.failures[1][1], FileNotFoundError)
    assert not embedding.stopped
    np.testing.assert_allclose(embedding.vectors, _expected(["red", "blue", "white"]), atol=1e-6)


def test_embedding_can_stop_at_the_first_failing_batch(tmp_path: Path) -> None:
    paths = _folder(tmp_path)
    paths[2].write_bytes(b"not an image")
    encoder = FakeImageEncoder()
    embedding = embed_images(
        encoder, paths, batch_size=2, decode_workers=1, stop_at_failure=True, progress=False
    )
    assert embedding.stopped
    assert embedding.embedded == [0, 1, 3]  # batch [2, 3] still embeds 3
    assert [position for position, _ in embedding.failures] == [2]
    assert embedding.vectors.shape == (3, encoder.dim)


def test_all_images_failing_gives_no_vectors(tmp_path: Path) -> None:
    path = tmp_path / "x.png"
    path.write_bytes(b"")
    embedding = embed_images(FakeImageEncoder(), [path], progress=False)
    assert embedding.embedded == []
    assert embedding.vectors.shape == (0, FakeImageEncoder().dim)


def test_embed_image_files_still_fails_on_the_first_bad_file(tmp_path: Path) -> None:
    paths = _folder(tmp_path)
    vectors = embed_image_files(FakeImageEncoder(), paths, batch_size=2, progress=False)
    np.testing.assert_allclose(
        vectors, _expected(["red", "green", "blue", "yellow", "white"]), atol=1e-6
    )
    paths[4].write_bytes(b"x")
    with pytest.raises(ImageDecodeError):
        embed_image_files(FakeImageEncoder(), paths, batch_size=2, progress=False)

"""Deterministic fake encoders behind the real protocols, and encoder factories serving them.

The fake text encoder embeds a text as a hashed bag of words: each lower-cased word adds ±1 to
one of ``dim`` coordinates chosen by a stable hash, and the sum is L2-normalised. Equal texts get
equal vectors (bit for bit), texts sharing words get positive cosine — enough to test ranking
exactly.

The fake image encoder embeds an image by its mean colour into the same space: the bag-of-words
vector of the nearest colour name (so the text "red" finds red images, and a red image finds
captions saying "red"), plus a small shade term from the mean RGB itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image

from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from service.engine.collection.catalog import VariantEncoders
from service.lifecycle.loading import EncoderFactory
from service.settings import Settings

FAKE_VARIANT = "fake-bow"
FAKE_FINGERPRINT = "ab" * 32
FAKE_DIM = 64
_WORD = re.compile(r"[a-z0-9]+")


def _bucket(word: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 32) & 1 else -1.0)


def embed_bag_of_words(text: str, dim: int = FAKE_DIM) -> npt.NDArray[np.float32]:
    """float32 ``[dim]``, L2-normalised; a text without words maps to a fixed unit vector."""
    vector = np.zeros(dim, dtype=np.float64)
    for word in _WORD.findall(text.lower()):
        index, sign = _bucket(word, dim)
        vector[index] += sign
    if not vector.any():
        vector[0] = 1.0
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@dataclass
class FakeTextEncoder:
    """Implements ``TextEncoderProtocol``; records every call's texts in ``calls``.

    ``nan_texts``: texts embedded as NaN rows (a broken encoder). ``fail_texts``: texts that make
    the call raise (an encoder bug). ``gate``: when set, ``encode_texts`` waits for it.
    """

    name: str = FAKE_VARIANT
    dim: int = FAKE_DIM
    max_tokens: int = 128
    precision: str = "fp32"
    fingerprint: str = FAKE_FINGERPRINT
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    matryoshka_dims: tuple[int, ...] = ()
    nan_texts: frozenset[str] = frozenset()
    fail_texts: frozenset[str] = frozenset()
    calls: list[list[str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        texts = list(texts)
        with self._lock:
            self.calls.append(texts)
        if any(text in self.fail_texts for text in texts):
            raise RuntimeError("fake encoder failure")
        rows = [
            np.full(self.dim, np.nan, dtype=np.float32)
            if text in self.nan_texts
            else embed_bag_of_words(text, self.dim)
            for text in texts
        ]
        return np.ascontiguousarray(np.stack(rows), dtype=np.float32).reshape(len(texts), self.dim)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Words of each text plus two (a [CLS] and a [SEP]), at most ``max_tokens``."""
        return [min(len(_WORD.findall(text.lower())) + 2, self.max_tokens) for text in texts]


def in_event_loop() -> bool:
    """Whether the calling thread is running an asyncio event loop (blocking work must not)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# Named colours of the fake image corpus (RGB 0-255); an image is embedded by the nearest one.
COLOURS: Mapping[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 60, 200),
    "yellow": (230, 210, 40),
    "white": (245, 245, 245),
    "black": (15, 15, 15),
}
_SHADE_WEIGHT = 0.1


def colour_name(rgb: Sequence[float]) -> str:
    """The name in :data:`COLOURS` nearest to ``rgb`` (0-255 per channel)."""
    point = np.asarray(rgb, dtype=np.float64)
    return min(COLOURS, key=lambda name: float(np.sum((np.asarray(COLOURS[name]) - point) ** 2)))


def embed_colour(rgb: Sequence[float], dim: int = FAKE_DIM) -> npt.NDArray[np.float32]:
    """float32 ``[dim]``, L2-normalised: the bag of words of the nearest colour name plus
    ``0.1 * rgb / 255`` in the last three coordinates."""
    vector = embed_bag_of_words(colour_name(rgb), dim).astype(np.float64)
    vector[-3:] += _SHADE_WEIGHT * np.asarray(rgb, dtype=np.float64) / 255.0
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def mean_colour(image: Image.Image) -> tuple[float, float, float]:
    """Mean R, G, B (0-255) of an RGB image."""
    pixels = np.asarray(image, dtype=np.float64).reshape(-1, 3)
    red, green, blue = pixels.mean(axis=0)
    return float(red), float(green), float(blue)


@dataclass
class FakeImageEncoder:
    """Implements ``ImageEncoderProtocol`` by mean colour (:func:`embed_colour`).

    Records the ``(width, height)`` of every call's images in ``calls`` and whether any call
    ran on an event loop thread in ``on_event_loop``. Refuses non-RGB images like the real one.
    ``nan_colours``: colour names embedded as NaN rows (a broken encoder).
    """

    name: str = FAKE_VARIANT
    dim: int = FAKE_DIM
    precision: str = "fp32"
    fingerprint: str = FAKE_FINGERPRINT
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    input_size: tuple[int, int] = (8, 8)
    matryoshka_dims: tuple[int, ...] = ()
    nan_colours: frozenset[str] = frozenset()
    calls: list[list[tuple[int, int]]] = field(default_factory=list)
    on_event_loop: list[bool] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def encode_images(self, images: Sequence[Image.Image]) -> npt.NDArray[np.float32]:
        images = list(images)
        with self._lock:
            self.calls.append([image.size for image in images])
            self.on_event_loop.append(in_event_loop())
        rows = []
        for image in images:
            if image.mode != "RGB":
                raise ValueError(f"expected an RGB image, got mode {image.mode!r}")
            rgb = mean_colour(image)
            nan = colour_name(rgb) in self.nan_colours
            rows.append(
                np.full(self.dim, np.nan, dtype=np.float32) if nan else embed_colour(rgb, self.dim)
            )
        return np.ascontiguousarray(np.stack(rows), dtype=np.float32).reshape(-1, self.dim)


def fake_factory(
    encoder: TextEncoderProtocol | None = None, *, image: ImageEncoderProtocol | None = None
) -> EncoderFactory:
    """An ``encoder_factory`` for ``create_app`` that always returns these towers (and checks
    it is asked for the variant folder under ``variants_root``)."""

    def factory(variant_dir: Path, settings: Settings) -> VariantEncoders:
        assert variant_dir.is_dir()
        assert variant_dir.parent == settings.variants_root
        return VariantEncoders(text=encoder, image=image)

    return factory


def factory_by_name(towers: Mapping[str, VariantEncoders]) -> EncoderFactory:
    """An ``encoder_factory`` serving several variants: the towers of each folder's name."""

    def factory(variant_dir: Path, settings: Settings) -> VariantEncoders:
        assert variant_dir.parent == settings.variants_root
        return towers[variant_dir.name]

    return factory

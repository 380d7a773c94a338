"""A deterministic fake text encoder behind the real protocol, and small real bundles.

The fake embeds a text as a hashed bag of words: each lower-cased word adds ±1 to one of ``dim``
coordinates chosen by a stable hash, and the sum is L2-normalised. Equal texts get equal vectors
(bit for bit), texts sharing words get positive cosine — enough to test ranking exactly.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from encoders.protocols import TextEncoderProtocol
from index_builder.bundle import CollectionInput, write_bundle
from service.settings import Settings
from service.store import EncoderFactory

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


def fake_factory(encoder: TextEncoderProtocol) -> EncoderFactory:
    """An ``encoder_factory`` for ``create_app`` that always returns ``encoder`` (and checks it
    is asked for the variant folder under ``variants_root``)."""

    def factory(variant_dir: Path, settings: Settings) -> TextEncoderProtocol:
        assert variant_dir.is_dir()
        assert variant_dir.parent == settings.variants_root
        return encoder

    return factory


# Row order matters: duplicates sit at rows 1, 4 and 6 so the tie rule (row ascending) is
# visible, and two images share captions as in COCO.
CAPTIONS: list[str] = [
    "a dog sleeping on a red couch",
    "a man riding a wave on top of a surfboard",
    "two cats playing with a ball of yarn",
    "a bowl of fruit on a wooden table",
    "a man riding a wave on top of a surfboard",
    "a red double decker bus on a city street",
    "a man riding a wave on top of a surfboard",
    "a plate of pasta with tomato sauce",
    "a child flying a kite on the beach",
    "an airplane parked at the airport gate",
    "a cat sleeping on a couch",
    "a train crossing a bridge over a river",
]


def caption_id(row: int) -> str:
    """The CxC caption key of the fake caption at ``row`` (sentid = 1000 + row)."""
    return f"COCO_val2014:sentid:{1000 + row}"


def captions_input(texts: Sequence[str] = CAPTIONS, dim: int = FAKE_DIM) -> CollectionInput:
    """A captions collection embedded with the fake encoder, metadata as the real builder's."""
    return CollectionInput(
        name="captions",
        ids=[caption_id(row) for row in range(len(texts))],
        metadata=[
            {
                "text": text,
                "image_id": 42 + row // 2,
                "filename": f"COCO_val2014_{42 + row // 2:012d}.jpg",
                "sentid": 1000 + row,
            }
            for row, text in enumerate(texts)
        ],
        vectors=np.stack([embed_bag_of_words(text, dim) for text in texts]),
    )


def write_fake_bundle(
    bundles_root: Path,
    name: str = "coco-captions",
    *,
    version: str = "20260101T000000Z",
    variant_name: str = FAKE_VARIANT,
    fingerprint: str = FAKE_FINGERPRINT,
    texts: Sequence[str] = CAPTIONS,
    dim: int = FAKE_DIM,
) -> Path:
    """Write a real faiss bundle of fake-encoded captions; returns its version folder."""
    return write_bundle(
        bundles_root,
        name,
        [captions_input(texts, dim)],
        variant_name=variant_name,
        variant_fingerprint=fingerprint,
        version=version,
    )

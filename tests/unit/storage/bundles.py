"""Small bundles the storage tests write: unit vectors, a captions collection, a version."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from storage.writer import CollectionInput, FactoryIndex, write_bundle


def unit_vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, d)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def captions(n: int = 20, d: int = 8, seed: int = 0, factory: str = "Flat") -> CollectionInput:
    return CollectionInput(
        name="captions",
        ids=[f"COCO_val2014:sentid:{i}" for i in range(n)],
        metadata=[{"text": f"caption {i}", "image_id": i // 5} for i in range(n)],
        vectors=unit_vectors(n, d, seed),
        index=FactoryIndex(factory),
    )


def write(root: Path, version: str, **kwargs: object) -> Path:
    return write_bundle(
        root,
        "demo",
        [captions()],
        variant_name="fake",
        variant_fingerprint="f" * 64,
        version=version,
        **kwargs,  # type: ignore[arg-type]
    )

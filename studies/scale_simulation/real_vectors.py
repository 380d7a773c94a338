"""The real caption embeddings the generator is fit to, or a seeded stand-in when missing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from studies.scale_simulation.locations import BUNDLE, REPO
from studies.scale_simulation.vectors import DIM, F32, normalise


def load_real(path: Path | None, seed: int, bundle: Path = BUNDLE) -> tuple[F32, str]:
    """The real caption embeddings (C-contiguous float32), or a seeded stand-in when missing."""
    if path is None:
        current = bundle / "CURRENT"
        if current.is_file():
            folder = bundle / current.read_text().strip()
            manifest = json.loads((folder / "manifest.json").read_text())
            name = manifest["collections"]["captions"]["vectors_file"]
            path = folder / name
    if path is not None and path.is_file():
        real = np.ascontiguousarray(np.load(path), dtype=np.float32)
        return normalise(real), str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    # Stand-in: a mixture of 200 random directions with low-rank spread (not the real data), as
    # tight as the captions (neighbour cosine p50 ~0.6-0.7 on a few thousand rows).
    rng = np.random.default_rng([seed, 7])
    centres = normalise(rng.standard_normal((200, DIM), dtype=np.float32))
    basis = rng.standard_normal((200, 16, DIM), dtype=np.float32) * 0.012
    labels = rng.integers(0, 200, size=25_000)
    z = rng.standard_normal((25_000, 16), dtype=np.float32)
    x = centres[labels] + np.einsum("nr,nrd->nd", z, basis[labels])
    x += rng.standard_normal(x.shape, dtype=np.float32) * 0.008
    return normalise(x.astype(np.float32)), "seeded stand-in (bundle missing)"

"""The real vectors: a given .npy, L2-normalised, or the seeded stand-in when none is found."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studies.scale_simulation.real_vectors import load_real


def test_a_given_file_is_read_and_normalised(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npy"
    np.save(path, np.full((3, 4), 2.0, np.float64))
    real, source = load_real(path, 0, tmp_path / "no-bundle")
    assert source == str(path)
    assert real.dtype == np.float32
    assert real.flags.c_contiguous
    assert np.allclose(real, 0.5)


def test_the_stand_in_depends_on_the_seed_only(tmp_path: Path) -> None:
    a, source = load_real(None, 5, tmp_path / "no-bundle")
    b, _ = load_real(tmp_path / "missing.npy", 5, tmp_path / "other")
    assert source == "seeded stand-in (bundle missing)"
    assert a.shape == (25_000, 384)
    assert np.array_equal(a, b)
    assert not np.array_equal(a[:10], load_real(None, 6, tmp_path)[0][:10])

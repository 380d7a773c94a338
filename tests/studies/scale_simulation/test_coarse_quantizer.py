"""The two-level coarse quantizer."""

from __future__ import annotations

import numpy as np

from studies.scale_simulation.coarse_quantizer import assign_two_level, spherical_kmeans
from studies.scale_simulation.vectors import normalise


def test_rows_go_to_the_best_sub_centroid_of_their_best_top_cell() -> None:
    top = np.array([[1, 0], [0, 1]], np.float32)
    sub = np.array([[1, 0.2], [1, -0.2], [0.2, 1], [-0.2, 1]], np.float32)
    x = np.array([[1, 0.1], [1, -0.3], [0.1, 1], [-0.5, 1], [0.9, 0.8]], np.float32)
    assert assign_two_level(x, top, sub).tolist() == [0, 1, 2, 3, 0]


def test_too_few_points_are_padded_with_jittered_copies() -> None:
    x = normalise(np.random.default_rng(0).standard_normal((3, 4), dtype=np.float32))
    centroids = spherical_kmeans(x, 5, seed=1, niter=5)
    assert centroids.shape == (5, 4)
    assert np.allclose(centroids[:3], x)
    assert np.allclose(np.linalg.norm(centroids, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(centroids, spherical_kmeans(x, 5, seed=1, niter=5))

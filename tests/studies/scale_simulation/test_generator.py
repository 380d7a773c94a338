"""The seeded generator: deterministic samples on the unit sphere, and its file round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from studies.scale_simulation.generator import Generator
from studies.scale_simulation.real_vectors import load_real


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Generator:
    missing = tmp_path_factory.mktemp("bundle") / "missing"
    real, source = load_real(None, 1, missing)
    assert source == "seeded stand-in (bundle missing)"
    with threadpool_limits(1):  # BLAS threads spin on a busy 2-vCPU machine
        return Generator.fit(np.ascontiguousarray(real[:3000]), 16, 4, 7)


def test_the_generator_is_seeded(generator: Generator) -> None:
    a = generator.sample(500, np.random.default_rng(3))
    b = generator.sample(500, np.random.default_rng(3))
    c = generator.sample(500, np.random.default_rng(4))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_the_fit_has_one_component_set_per_cluster(generator: Generator) -> None:
    assert generator.means.shape == (16, 384)
    assert generator.comps.shape == (16, 4, 384)
    assert generator.noise.shape == (16,)
    assert generator.weights.sum() == pytest.approx(1.0)
    assert (generator.noise > 0).all()


def test_a_saved_generator_samples_the_same(generator: Generator, tmp_path: Path) -> None:
    path = tmp_path / "generator.npz"
    generator.save(path)
    loaded = Generator.load(path)
    assert np.array_equal(
        loaded.sample(50, np.random.default_rng(9)), generator.sample(50, np.random.default_rng(9))
    )

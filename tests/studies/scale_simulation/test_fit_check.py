"""The statistics of the fit check."""

from __future__ import annotations

import numpy as np
import pytest

from studies.scale_simulation.fit_check import nn_cosines, pair_cosines, spectrum
from studies.scale_simulation.vectors import normalise


def test_a_duplicated_row_is_its_twin_s_nearest_neighbour() -> None:
    x = normalise(np.random.default_rng(0).standard_normal((50, 8), dtype=np.float32))
    x[1] = x[0]
    nn = nn_cosines(x)
    assert nn.shape == (50,)
    assert nn[0] == pytest.approx(1.0, abs=1e-5)
    assert nn[1] == pytest.approx(1.0, abs=1e-5)
    assert (nn <= 1.0 + 1e-5).all()


def test_random_pairs_leave_out_a_row_with_itself() -> None:
    x = normalise(np.random.default_rng(0).standard_normal((3, 64), dtype=np.float32))
    pc = pair_cosines(x, np.random.default_rng(1), pairs=1000)
    assert 0 < len(pc) < 1000
    assert (pc < 0.99).all()


def test_the_spectrum_is_the_explained_variance() -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((500, 6)) * [10, 5, 1, 1, 1, 1]).astype(np.float32)
    s = spectrum(x, top=4)
    assert len(s) == 4
    assert s == sorted(s, reverse=True)
    assert s[0] > 0.6
    assert sum(spectrum(x)) == pytest.approx(1.0)

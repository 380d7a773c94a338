"""The parity image set: size, variety and determinism."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow

parity_images_module = pytest.importorskip(
    "training.parity.images", reason="the parity images need scikit-image"
)


def test_at_least_100_varied_rgb_images_identical_on_every_call() -> None:
    first = parity_images_module.parity_images()
    second = parity_images_module.parity_images()
    names = [name for name, _ in first]
    assert len(first) >= 100
    assert len(set(names)) == len(names)
    assert names == [name for name, _ in second]
    for (name, image), (_, again) in zip(first, second, strict=True):
        assert image.mode == "RGB", name
        np.testing.assert_array_equal(np.asarray(image), np.asarray(again), err_msg=name)
    groups = {name.split("/")[0] for name in names}
    assert {"chelsea", "coffee", "astronaut", "noise", "flat", "gradient", "shapes"} <= groups
    sizes = {image.size for _, image in first}
    assert any(width > 4 * height for width, height in sizes)  # wide strips
    assert any(height > 4 * width for width, height in sizes)  # tall strips
    assert any(width * height < 100 * 100 for width, height in sizes)  # thumbnails, tiny noise

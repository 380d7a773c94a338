"""Fixtures for the encoders tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.tiny_variant import TinyWeights, make_tiny_variant


@pytest.fixture
def tiny_variant(tmp_path: Path) -> tuple[Path, TinyWeights]:
    """A tiny normalising text variant folder and the weights its graph uses."""
    variant_dir = tmp_path / "tiny"
    return variant_dir, make_tiny_variant(variant_dir)

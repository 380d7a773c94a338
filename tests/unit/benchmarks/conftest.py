"""Fixtures of the benchmark tests: a tiny generated dataset on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.tiny_data import TinyDataset, write_tiny_dataset


@pytest.fixture
def tiny(tmp_path: Path) -> TinyDataset:
    """A small Karpathy/CxC-format dataset (12 images × 5 captions, STS ratings) on disk."""
    return write_tiny_dataset(tmp_path / "data", split="val")

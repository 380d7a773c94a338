"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real evaluation data (``../shared/data`` beside the repository by default)."""
    path = Path(os.environ.get("CRISSCROSS_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
    if not (path / "cxc").is_dir():
        pytest.fail(f"evaluation data not found at {path}: set CRISSCROSS_DATA_DIR")
    return path

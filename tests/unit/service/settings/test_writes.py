"""The live collection settings: off by default, one owner per log, limits within bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from service.settings import Settings


def test_writes_are_off_by_default() -> None:
    settings = Settings()
    assert settings.collections_dir is None
    assert settings.max_write_items == 1000


def test_collections_need_one_server_process(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="one owner"):
        Settings(collections_dir=tmp_path, workers=2)
    assert Settings(collections_dir=tmp_path, workers=1).workers == 1
    assert Settings(collections_dir=tmp_path).workers == 0  # automatic: serve runs one


@pytest.mark.parametrize(
    "overrides",
    [{"max_write_items": 0}, {"max_live_rows": 0}, {"max_pending_writes": 0}, {"max_log_bytes": 0}],
)
def test_values_out_of_bounds_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**overrides)

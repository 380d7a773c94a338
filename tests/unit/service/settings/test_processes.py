"""The process settings: worker counts and drain bounds within their limits."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.settings import Settings


def test_defaults() -> None:
    settings = Settings()
    assert settings.workers == 0  # automatic
    assert (settings.intra_op_threads, settings.blas_threads, settings.faiss_threads) == (1, 1, 1)
    assert settings.flat_scan == "onnxruntime"


@pytest.mark.parametrize(
    "overrides",
    [
        {"workers": 65},
        {"worker_heartbeat_timeout_s": 0.5},
        {"flat_scan": "gpu"},
        {"blas_threads": -1},
    ],
)
def test_values_out_of_bounds_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**overrides)

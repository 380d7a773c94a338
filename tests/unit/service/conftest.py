"""Fixtures of the service's unit tests."""

from __future__ import annotations

import pytest

from tests.fakes.service_app import clear_service_env


@pytest.fixture(autouse=True)
def _no_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read CRISSCROSS_* variables; a developer's shell must not change test results."""
    clear_service_env(monkeypatch)

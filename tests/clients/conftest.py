"""Fixtures of the client tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client without ``base_url`` or ``api_key`` reads CRISSCROSS_URL and CRISSCROSS_API_KEY;
    a developer's shell must not change test results."""
    monkeypatch.delenv("CRISSCROSS_URL", raising=False)
    monkeypatch.delenv("CRISSCROSS_API_KEY", raising=False)

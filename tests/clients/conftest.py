"""Fixtures of the client tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client without ``base_url``, ``api_key`` or ``acks`` reads CRISSCROSS_URL,
    CRISSCROSS_API_KEY and CRISSCROSS_ACKS; a developer's shell must not change test results."""
    monkeypatch.delenv("CRISSCROSS_URL", raising=False)
    monkeypatch.delenv("CRISSCROSS_API_KEY", raising=False)
    monkeypatch.delenv("CRISSCROSS_ACKS", raising=False)

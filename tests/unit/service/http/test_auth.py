"""API keys (service.http.auth) without HTTP: every key compared in constant time whatever matched,
the keys a request presents, and the role each path needs."""

from __future__ import annotations

import hmac

import pytest
from pydantic import SecretStr
from starlette.datastructures import Headers

from service.http.auth import KeyRing, presented_keys, required_role

READ_KEY = "read-key-0123456789abcdef"
OTHER_READ_KEY = "read-key-fedcba9876543210"
ADMIN_KEY = "admin-key-0123456789abcdef"
WRONG_KEY = "wrong-key-0123456789abcdef"


def test_every_key_is_compared_whatever_matched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(left: bytes, right: bytes) -> bool:
        calls.append((left, right))
        return real(left, right)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    ring = KeyRing([SecretStr(READ_KEY), SecretStr(OTHER_READ_KEY)], [SecretStr(ADMIN_KEY)])
    assert ring.role_of(READ_KEY) == "read"
    assert ring.role_of(ADMIN_KEY) == "admin"
    assert ring.role_of(WRONG_KEY) is None
    assert ring.role_of("") is None
    assert len(calls) == 12  # 3 keys for each of 4 lookups, first match or not
    # Digests of equal length: the comparison's time says nothing about the key's length.
    assert {len(left) for left, _ in calls} == {32}


def test_presented_keys_and_required_roles() -> None:
    assert presented_keys(Headers({"authorization": "Bearer abc"})) == ["abc"]
    assert presented_keys(Headers({"authorization": "Bearer "})) == []
    assert presented_keys(Headers({"authorization": "Token abc"})) == []
    assert presented_keys(Headers({"x-api-key": " k "})) == ["k"]
    assert required_role("/healthz") is None
    assert required_role("/v1/search") == "read"
    assert required_role("/v1/admin/reload") == "admin"
    assert required_role("/v1/admin") == "admin"
    assert required_role("/anything") == "read"


@pytest.mark.parametrize(
    ("method", "path", "role"),
    [
        ("POST", "/v1/collections", "manage"),
        ("GET", "/v1/collections", "read"),
        ("DELETE", "/v1/collections/c", "manage"),
        ("POST", "/v1/collections/c/compact", "manage"),
        ("POST", "/v1/collections/c/snapshots", "manage"),
        ("PATCH", "/v1/collections/c/items/snapshots", "write"),
        ("GET", "/v1/collections/c", "read"),
        ("POST", "/v1/collections/c/items", "write"),
        ("POST", "/v1/collections/c/items/delete", "write"),
        ("PATCH", "/v1/collections/c/items/x", "write"),
        ("POST", "/v1/collections/c/items/get", "read"),
        ("POST", "/v1/collections/c/items/scroll", "read"),
        ("POST", "/v1/collections/c/items/count", "read"),
        ("PATCH", "/v1/collections/c/items/get", "write"),
        ("PATCH", "/v1/collections/c/items/scroll", "write"),
        ("PATCH", "/v1/collections/c", "write"),
    ],
)
def test_live_collection_routes_need_their_roles(method: str, path: str, role: str) -> None:
    assert required_role(path, method) == role


def test_a_write_key_grants_write_and_not_admin() -> None:
    ring = KeyRing([SecretStr(READ_KEY)], [SecretStr(ADMIN_KEY)], [SecretStr(WRONG_KEY)])
    assert ring.role_of(WRONG_KEY) == "write"
    assert ring.role_of(ADMIN_KEY) == "admin"
    assert ring.role_of(READ_KEY) == "read"

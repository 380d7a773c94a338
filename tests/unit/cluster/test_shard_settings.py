"""The shard settings: refusals when made, the environment, the map's shard count."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from cluster.shard_settings import ShardSettings


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"missing_shards": "fail", "min_shards_answered": 2}, "applies to missing_shards"),
        ({"shard_deadline_ms": 10, "health_timeout_ms": 101}, "ten times"),
        ({"missing_shards": "maybe"}, "missing_shards"),
        ({"shard_deadline_ms": 0}, "shard_deadline_ms"),
        ({"replicas_per_shard": 0}, "replicas_per_shard"),
        ({"max_k": 10}, "max_k"),
    ],
)
def test_shard_settings_refuse_bad_values(settings: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        ShardSettings(**settings)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_SHARDS_MISSING_SHARDS", "partial")
    monkeypatch.setenv("CRISSCROSS_SHARDS_SHARD_DEADLINE_MS", "250")
    settings = ShardSettings()
    assert (settings.missing_shards, settings.shard_deadline_s) == ("partial", 0.25)


def test_a_map_with_fewer_shards_than_the_policy_needs_is_refused() -> None:
    settings = ShardSettings(missing_shards="partial", min_shards_answered=4)
    with pytest.raises(ValueError, match="more than the 3 shards"):
        settings.check_shard_count(3)
    settings.check_shard_count(4)

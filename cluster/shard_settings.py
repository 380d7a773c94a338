"""Settings of sharded serving: what a search does when shards do not answer, and how Serve
places the shards' and the front door's replicas.

Environment variables with the prefix ``CRISSCROSS_SHARDS_`` set them (``CRISSCROSS_SHARDS_
MISSING_SHARDS=partial``); ``python -m cluster serve-shards`` flags override them. The front
door is the service's own app: its HTTP limits, keys and timeouts are the service's settings
(``CRISSCROSS_*``, :class:`service.settings.Settings`), the same in every layout. Every limit
has a default and says what hitting it does; combinations that cannot work are refused when
the settings are made (:class:`pydantic.ValidationError`), never at the first request.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MissingShardsPolicy = Literal["fail", "partial"]
"""What a search gets when a shard does not answer in time: ``fail`` → 503 ``shards_unavailable``
naming the missing shards; ``partial`` → 200 from the shards that answered, the answer's
``missing_shards`` listing the others."""


class ShardSettings(BaseSettings):
    """The missing-shards policy and the Serve deployment's shape."""

    model_config = SettingsConfigDict(env_prefix="CRISSCROSS_SHARDS_", extra="forbid", frozen=True)

    missing_shards: MissingShardsPolicy = Field(
        default="fail",
        description="A shard that errs or misses its deadline is missing: 'fail' answers 503 "
        "shards_unavailable (with Retry-After) naming it; 'partial' answers 200 from the shards "
        "that answered, its missing_shards listing the others.",
    )
    min_shards_answered: int = Field(
        default=1,
        ge=1,
        description="Under 'partial', fewer shards answering than this is a 503 "
        "shards_unavailable all the same (an answer from too little of the collection).",
    )
    shard_deadline_ms: int = Field(
        default=1000,
        ge=1,
        le=600_000,
        description="Each shard's answer must arrive within this many milliseconds of the "
        "fan-out; a later one is abandoned and the shard counts as missing for that request.",
    )
    health_timeout_ms: int = Field(
        default=1000,
        ge=1,
        le=600_000,
        description="/readyz and GET /v1/collections wait this long for each shard's health "
        "answer; a shard that takes longer is reported down (and /readyz answers 503 "
        "not_ready).",
    )
    retry_after_s: int = Field(
        default=1,
        ge=0,
        description="Retry-After seconds sent with 503 shards_unavailable.",
    )
    connect_timeout_s: float = Field(
        default=120.0,
        gt=0.0,
        le=3600.0,
        description="Seconds the front door waits at start for every shard to say what it "
        "holds (shards may still be loading); past it the service stays not ready (503 on "
        "/readyz, saying why).",
    )
    proxy_request_timeout_s: float = Field(
        default=120.0,
        gt=0.0,
        le=3600.0,
        description="Seconds Ray Serve's HTTP proxy gives one request end to end (head, body, "
        "fan-out, answer) before it answers 408; the proxy has no deadline of its own for a "
        "request head, nor header or connection limits: put the front door behind an ingress "
        "that has them (docs/sharded-serving.md).",
    )
    keep_alive_timeout_s: int = Field(
        default=5,
        ge=1,
        le=600,
        description="Seconds Ray Serve's HTTP proxy keeps an idle kept-alive connection open.",
    )
    replicas_per_shard: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Serve replicas of each shard: Serve spreads a shard's calls over them and "
        "replaces one that dies; a call that reaches a dying replica makes the shard missing "
        "for that search.",
    )
    shard_replica_cpus: float = Field(
        default=0.5,
        ge=0.0,
        description="Logical CPUs each shard replica reserves; replicas that do not fit the "
        "cluster wait unplaced (Serve reports the deployment as not running).",
    )
    front_replicas: int = Field(
        default=1, ge=1, le=64, description="Serve replicas of the front door (the service app)."
    )
    front_cpus: float = Field(
        default=1.0, ge=0.0, description="Logical CPUs each front-door replica reserves."
    )
    max_ongoing_requests: int = Field(
        default=32,
        ge=1,
        description="Requests one replica (front door or shard) works on at once; Serve queues "
        "more at the caller, which a shard's deadline then bounds.",
    )

    @model_validator(mode="after")
    def _combinations(self) -> Self:
        if self.missing_shards == "fail" and self.min_shards_answered != 1:
            raise ValueError(
                "min_shards_answered applies to missing_shards='partial' only; under 'fail' "
                "every shard must answer"
            )
        if self.health_timeout_ms > self.shard_deadline_ms * 10:
            raise ValueError(
                "health_timeout_ms is more than ten times shard_deadline_ms: a shard could be "
                "reported ready while answering searches too slowly to ever be used"
            )
        return self

    def check_shard_count(self, shards: int) -> None:
        """Refuse settings that cannot work with ``shards`` shards (ValueError)."""
        if self.min_shards_answered > shards:
            raise ValueError(
                f"min_shards_answered={self.min_shards_answered} is more than the {shards} "
                "shards of the map"
            )

    @property
    def shard_deadline_s(self) -> float:
        """:attr:`shard_deadline_ms` in seconds."""
        return self.shard_deadline_ms / 1000.0

    @property
    def health_timeout_s(self) -> float:
        """:attr:`health_timeout_ms` in seconds."""
        return self.health_timeout_ms / 1000.0

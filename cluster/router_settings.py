"""Settings of sharded serving: the router's limits and policy, and how Serve places replicas.

Environment variables with the prefix ``CRISSCROSS_SHARDS_`` set them (``CRISSCROSS_SHARDS_
MISSING_SHARDS=partial``); ``python -m cluster serve-shards`` flags override them. Every limit
has a default and says what hitting it does; combinations that cannot work are refused when
the settings are made (:class:`pydantic.ValidationError`), never at the first request.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MissingShardsPolicy = Literal["fail", "partial"]
"""What a query gets when a shard does not answer in time: ``fail`` → 503 ``shards_unavailable``
naming the missing shards; ``partial`` → 200 with the merged top-k of the shards that answered,
``partial: true`` and ``missing_shards`` listing the others."""


class RouterSettings(BaseSettings):
    """The router's limits and policy and the Serve deployment's shape."""

    model_config = SettingsConfigDict(env_prefix="CRISSCROSS_SHARDS_", extra="forbid", frozen=True)

    missing_shards: MissingShardsPolicy = Field(
        default="fail",
        description="A shard that errs or misses its deadline is missing: 'fail' answers 503 "
        "shards_unavailable (with Retry-After) naming it; 'partial' answers 200 from the shards "
        "that answered, flagged partial: true with missing_shards listing the others.",
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
        description="/readyz and /v1/shards wait this long for each shard's health answer; a "
        "shard that takes longer is reported down (and /readyz answers 503 not_ready).",
    )
    retry_after_s: int = Field(
        default=1,
        ge=0,
        description="Retry-After seconds sent with 503 shards_unavailable and not_ready.",
    )
    max_k: int = Field(
        default=1000, ge=1, description="A search asking for more results is refused (422)."
    )
    max_offset: int = Field(
        default=10_000, ge=0, description="A search skipping more results is refused (422)."
    )
    max_text_chars: int = Field(
        default=2000, ge=1, description="A longer text query is refused (422) before encoding."
    )
    max_body_bytes: int = Field(
        default=1 << 20,
        ge=1024,
        description="A request body larger than this is refused (413) while it is read.",
    )
    body_timeout_s: float = Field(
        default=60.0,
        gt=0.0,
        le=3600.0,
        description="Seconds a request's whole body may take to arrive once its head is in; "
        "past it the client gets 408 request_timeout and the connection is closed. Bodies are "
        "read whole before any shard is asked.",
    )
    request_timeout_s: float = Field(
        default=120.0,
        gt=0.0,
        le=3600.0,
        description="Seconds Ray Serve's HTTP proxy gives one request end to end (head, body, "
        "fan-out, answer) before it answers 408; the proxy has no deadline of its own for a "
        "request head, nor header or connection limits: put the router behind an ingress that "
        "has them (docs/sharded-serving.md).",
    )
    keep_alive_timeout_s: int = Field(
        default=5,
        ge=1,
        le=600,
        description="Seconds Ray Serve's HTTP proxy keeps an idle kept-alive connection open.",
    )
    max_request_id_chars: int = Field(
        default=128,
        ge=8,
        description="A longer x-request-id from the client is replaced by a fresh one.",
    )
    replicas_per_shard: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Serve replicas of each shard; a shard is missing only when none answers.",
    )
    shard_replica_cpus: float = Field(
        default=0.5,
        ge=0.0,
        description="Logical CPUs each shard replica reserves; replicas that do not fit the "
        "cluster wait unplaced (Serve reports the deployment as not running).",
    )
    router_replicas: int = Field(
        default=1, ge=1, le=64, description="Serve replicas of the HTTP router."
    )
    router_cpus: float = Field(
        default=1.0, ge=0.0, description="Logical CPUs each router replica reserves."
    )
    max_ongoing_requests: int = Field(
        default=32,
        ge=1,
        description="Requests one replica (router or shard) works on at once; Serve queues "
        "more at the caller, which a shard's deadline then bounds.",
    )

    @model_validator(mode="after")
    def _combinations(self) -> Self:
        if self.missing_shards == "fail" and self.min_shards_answered != 1:
            raise ValueError(
                "min_shards_answered applies to missing_shards='partial' only; under 'fail' "
                "every shard must answer"
            )
        if self.max_k + self.max_offset > 1_000_000:
            raise ValueError(
                "max_k + max_offset is over 1,000,000: every shard would send that many hits "
                "per query to the router"
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

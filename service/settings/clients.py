"""What one connection may cost before it is a request: head and body deadlines, header sizes,
open connections (service.http.protocol, service.http.middleware.BodyGateMiddleware)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from service.settings.names import (
    KIB,
    MIB,
)


class ClientLimitSettings(BaseModel):
    """What one connection may cost before it is a request: head and body deadlines, header
    sizes,"""

    head_timeout_s: float = Field(
        default=10.0,
        gt=0.0,
        le=600.0,
        description=(
            "Seconds a client has from opening a connection (or from the first byte of its next "
            "request on a kept-alive one) to the end of the request line and headers; past it "
            "the client gets 408 request_timeout and the connection is closed (slow heads, "
            "connections that send nothing)."
        ),
    )
    body_timeout_s: float = Field(
        default=60.0,
        gt=0.0,
        le=3600.0,
        description=(
            "Seconds a request's whole body may take to arrive once its head is in; past it the "
            "client gets 408 request_timeout and the connection is closed. Bodies are read whole "
            "before admission, so a slow one holds no in-flight slot meanwhile."
        ),
    )
    keep_alive_timeout_s: int = Field(
        default=5,
        ge=1,
        le=600,
        description=(
            "Seconds an idle kept-alive connection stays open after its last answer before the "
            "server closes it."
        ),
    )
    max_header_bytes: int = Field(
        default=16 * KIB,
        ge=1024,
        le=1 * MIB,
        description=(
            "Largest request line plus headers in bytes; larger gets 431 headers_too_large and "
            "the connection is closed, counted as the bytes arrive (never buffered beyond it)."
        ),
    )
    max_header_count: int = Field(
        default=100,
        ge=8,
        le=10_000,
        description=(
            "Most header lines one request may have; more gets 431 headers_too_large and the "
            "connection is closed."
        ),
    )
    max_connections: int = Field(
        default=2048,
        ge=16,
        le=1_000_000,
        description=(
            "Most open connections per server process (each worker has its own); one more is "
            "answered 503 overloaded with Retry-After and closed as it is accepted. The process "
            "raises its open-file limit to this plus 256 at start, and refuses to start when "
            "the hard limit is lower."
        ),
    )
    max_request_id_chars: int = Field(
        default=64,
        ge=8,
        le=256,
        description=(
            "Longest x-request-id echoed back; a longer (or non [A-Za-z0-9._-]) one is replaced "
            "by a generated id."
        ),
    )

"""What the service tells operators about each request: traces and the access log's format."""

from __future__ import annotations

from typing import Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, field_validator, model_validator

AccessLogFormat = Literal["text", "json"]


class TelemetrySettings(BaseModel):
    """What the service tells operators about each request: traces and access lines."""

    otlp_endpoint: str | None = Field(
        default=None,
        description=(
            "OpenTelemetry collector to send traces to over OTLP/HTTP (protobuf), e.g. "
            "http://collector:4318; a URL without a path gets /v1/traces. Set: every request "
            "gets a server span (a child of an incoming W3C traceparent) with a span per stage "
            "(queue, decode, encode, search, write, fsync: the x-timing-* headers' own "
            "intervals), exported in batches by each server process; a collector that is down "
            "loses spans (logged), never requests. Unset: no tracing at all (no tracer, no "
            "spans). Headers and timeouts of the export follow the OTEL_EXPORTER_OTLP_* "
            "variables."
        ),
    )
    trace_service_name: str = Field(
        default="crisscross",
        min_length=1,
        max_length=128,
        description=(
            "service.name of the exported spans; another name without otlp_endpoint is "
            "refused at start (it would do nothing)."
        ),
    )
    trace_sample_ratio: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description=(
            "Fraction of traces started here that are recorded and exported (by trace id); a "
            "request with a traceparent follows its caller's sampling decision. Unsampled "
            "requests cost a span id and no export. Another ratio than 1 without otlp_endpoint "
            "is refused at start."
        ),
    )
    access_log_format: AccessLogFormat = Field(
        default="text",
        description=(
            "The access log's lines (logger crisscross.access, one per request): text "
            "(key=value after the log prefix) or json (one JSON object per line and nothing "
            "else: time, method, path, route, status, duration_ms, stage times, request_id, "
            "trace_id and span_id (of the request's server span when it is traced and sampled, "
            "else of an incoming traceparent), client, bytes)."
        ),
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _endpoint_is_a_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"otlp_endpoint {value!r} must be an http:// or https:// URL with a host, e.g. "
                "http://collector:4318"
            )
        return value.strip()

    @model_validator(mode="after")
    def _tracing_options_need_an_endpoint(self) -> Self:
        if self.otlp_endpoint is None:
            # Values other than the defaults (a settings object re-made from a dump of another
            # passes the defaults too, which is no mistake).
            given = [
                name
                for name in ("trace_service_name", "trace_sample_ratio")
                if getattr(self, name) != TelemetrySettings.model_fields[name].default
            ]
            if given:
                raise ValueError(
                    f"{' and '.join(given)} set but otlp_endpoint is unset: tracing is off, so "
                    "they would do nothing; set CRISSCROSS_OTLP_ENDPOINT or leave them out"
                )
        return self


def traces_url(endpoint: str) -> str:
    """The URL spans are posted to: ``endpoint`` itself when it has a path, else its
    ``/v1/traces`` (the OTLP/HTTP convention for a collector's base address)."""
    parts = urlsplit(endpoint)
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint

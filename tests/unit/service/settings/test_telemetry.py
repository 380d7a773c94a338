"""The telemetry settings: tracing off unless an endpoint is set, tracing options refused
without one, the endpoint a URL, the OTLP traces path added to a bare address."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.settings import Settings, traces_url


def test_tracing_is_off_and_access_lines_are_text_by_default() -> None:
    settings = Settings()
    assert settings.otlp_endpoint is None
    assert settings.access_log_format == "text"


def test_the_environment_turns_tracing_and_json_lines_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRISSCROSS_OTLP_ENDPOINT", " http://collector:4318 ")
    monkeypatch.setenv("CRISSCROSS_TRACE_SAMPLE_RATIO", "0.25")
    monkeypatch.setenv("CRISSCROSS_ACCESS_LOG_FORMAT", "json")
    settings = Settings()
    assert settings.otlp_endpoint == "http://collector:4318"
    assert settings.trace_sample_ratio == 0.25
    assert settings.access_log_format == "json"


@pytest.mark.parametrize("option", [{"trace_sample_ratio": 0.5}, {"trace_service_name": "x"}])
def test_tracing_options_without_an_endpoint_are_refused(option: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="otlp_endpoint is unset"):
        Settings(**option)  # type: ignore[arg-type]


@pytest.mark.parametrize("endpoint", ["collector:4318", "ftp://collector", "http://"])
def test_an_endpoint_must_be_an_http_url(endpoint: str) -> None:
    with pytest.raises(ValidationError, match="must be an http"):
        Settings(otlp_endpoint=endpoint)


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("https://otel.example/custom/traces", "https://otel.example/custom/traces"),
    ],
)
def test_a_bare_address_gets_the_otlp_traces_path(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        Settings(otlp_endpoint="http://c:4318", trace_sample_ratio=1.5)
    with pytest.raises(ValidationError):
        Settings(access_log_format="xml")  # type: ignore[arg-type]

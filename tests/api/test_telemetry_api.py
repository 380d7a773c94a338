"""Traces and JSON access lines over HTTP: a search carrying a ``traceparent`` is a server span
in the caller's trace whose stage children last what its ``x-timing-*`` headers say; a write
has write and fsync children; JSON access lines carry the request and trace ids; with tracing
off nothing is traced."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, format_span_id, format_trace_id

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
# The headers print milliseconds with 3 decimals; the spans are the same intervals.
TOLERANCE_MS = 1.0


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced_settings(settings: Settings, tmp_path: Path) -> Settings:
    return settings.model_copy(
        update={"otlp_endpoint": "http://127.0.0.1:9", "collections_dir": tmp_path / "live"}
    )


def _serve(settings: Settings, exporter: InMemorySpanExporter | None) -> Iterator[TestClient]:
    app = create_app(
        settings, encoder_factory=fake_factory(FakeTextEncoder()), span_exporter=exporter
    )
    with TestClient(app) as client:
        wait_ready(client)
        if exporter is not None:
            exporter.clear()  # the readiness polls
        yield client


@pytest.fixture
def traced(traced_settings: Settings, exporter: InMemorySpanExporter) -> Iterator[TestClient]:
    yield from _serve(traced_settings, exporter)


def _server_span(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.kind == SpanKind.SERVER and s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _children(spans: Sequence[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    parent_id = parent.context.span_id
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent_id]


def _duration_ms(span: ReadableSpan) -> float:
    assert span.start_time is not None
    assert span.end_time is not None
    return (span.end_time - span.start_time) / 1e6


def _assert_stages_match_headers(
    spans: Sequence[ReadableSpan],
    server: ReadableSpan,
    headers: Mapping[str, str],
    stages: set[str],
) -> None:
    children = _children(spans, server)
    assert {child.name for child in children} == stages
    assert server.start_time is not None
    assert server.end_time is not None
    for stage in stages:
        mine = [child for child in children if child.name == stage]
        header = float(headers[f"x-timing-{stage}-ms"])
        assert sum(map(_duration_ms, mine)) == pytest.approx(header, abs=TOLERANCE_MS), stage
        for child in mine:  # inside the request's span, on the same clock
            assert child.start_time is not None
            assert child.end_time is not None
            assert server.start_time <= child.start_time <= child.end_time <= server.end_time


def test_a_search_with_a_traceparent_is_a_server_span_in_that_trace_with_its_stages(
    traced: TestClient, exporter: InMemorySpanExporter
) -> None:
    body = {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 3}
    response = traced.post("/v1/search", json=body, headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200, response.text
    spans = exporter.get_finished_spans()
    server = _server_span(spans, "POST /v1/search")
    assert format_trace_id(server.context.trace_id) == TRACE_ID
    assert server.parent is not None
    assert server.parent.is_remote
    assert format_span_id(server.parent.span_id) == PARENT_ID
    attributes = dict(server.attributes or {})
    assert attributes["http.request.method"] == "POST"
    assert attributes["http.route"] == "/v1/search"
    assert attributes["http.response.status_code"] == 200
    assert attributes["crisscross.request_id"] == response.headers["x-request-id"]
    assert all(s.context.trace_id == server.context.trace_id for s in spans)
    _assert_stages_match_headers(spans, server, response.headers, {"queue", "encode", "search"})
    assert _duration_ms(server) >= float(response.headers["x-timing-total-ms"])


def test_a_request_without_a_traceparent_starts_a_trace_and_errors_are_marked(
    traced: TestClient, exporter: InMemorySpanExporter
) -> None:
    missing = traced.get("/v1/items/captions/no-such-item")
    assert missing.status_code == 404
    unknown = traced.get("/no/such/route")
    spans = exporter.get_finished_spans()
    server = _server_span(spans, "GET /v1/items/{collection}/{id}")
    assert server.parent is None  # a root span: no caller's trace
    assert server.status.status_code == StatusCode.UNSET  # a 4xx is the client's, not an error
    assert dict(server.attributes or {})["url.path"] == "/v1/items/captions/no-such-item"
    assert unknown.status_code == 404
    assert _server_span(spans, "GET").parent is None  # no route: the method alone names it


def test_a_write_has_write_and_fsync_spans_matching_its_headers(
    traced: TestClient, exporter: InMemorySpanExporter
) -> None:
    created = traced.post("/v1/collections", json={"name": "things", "dim": 4})
    assert created.status_code == 201, created.text
    item = {"id": "a", "vector": [1.0, 0.0, 0.0, 0.0]}
    response = traced.post(
        "/v1/collections/things/items", json={"items": [item]}, headers={"traceparent": TRACEPARENT}
    )
    assert response.status_code == 200, response.text
    spans = exporter.get_finished_spans()
    server = _server_span(spans, "POST /v1/collections/{name}/items")
    assert format_trace_id(server.context.trace_id) == TRACE_ID
    _assert_stages_match_headers(spans, server, response.headers, {"write", "fsync"})
    write = next(child for child in _children(spans, server) if child.name == "write")
    fsync = next(child for child in _children(spans, server) if child.name == "fsync")
    assert write.start_time is not None
    assert fsync.start_time is not None
    assert write.end_time is not None
    assert fsync.end_time is not None
    assert write.start_time <= fsync.start_time <= fsync.end_time <= write.end_time


def test_an_unsampled_caller_is_followed_and_nothing_is_exported(
    traced: TestClient, exporter: InMemorySpanExporter
) -> None:
    body = {"query": {"text": "a cat"}, "collection": "captions", "k": 1}
    unsampled = f"00-{TRACE_ID}-{PARENT_ID}-00"
    response = traced.post("/v1/search", json=body, headers={"traceparent": unsampled})
    assert response.status_code == 200
    assert exporter.get_finished_spans() == ()


def _access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    lines = [r.getMessage() for r in caplog.records if r.name == "crisscross.access"]
    return [json.loads(line) for line in lines]


def test_json_access_lines_carry_the_request_and_trace_ids(
    traced_settings: Settings, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    settings = traced_settings.model_copy(update={"access_log_format": "json"})
    body = {"query": {"text": "a dog"}, "collection": "captions", "k": 2}
    for client in _serve(settings, exporter):
        caplog.set_level(logging.INFO, logger="crisscross.access")
        response = client.post("/v1/search", json=body, headers={"traceparent": TRACEPARENT})
    [line] = _access_lines(caplog)
    server = _server_span(exporter.get_finished_spans(), "POST /v1/search")
    assert line["request_id"] == response.headers["x-request-id"]
    assert line["trace_id"] == TRACE_ID
    assert line["span_id"] == format_span_id(server.context.span_id)
    assert line["method"] == "POST"
    assert line["path"] == line["route"] == "/v1/search"
    assert line["status"] == 200
    assert line["bytes"] == len(response.content)
    assert line["client"] == "testclient"
    assert isinstance(line["duration_ms"], float)
    assert line["duration_ms"] > 0
    assert line["encode_ms"] == pytest.approx(float(response.headers["x-timing-encode-ms"]))
    assert str(line["time"]).endswith("Z")


def test_with_tracing_off_a_json_line_names_the_callers_trace_and_nothing_is_traced(
    settings: Settings, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings.model_copy(update={"access_log_format": "json"})
    assert settings.otlp_endpoint is None
    for client in _serve(settings, exporter):  # an exporter, but tracing is off: unused
        caplog.set_level(logging.INFO, logger="crisscross.access")
        response = client.post(
            "/v1/search",
            json={"query": {"text": "a dog"}, "collection": "captions", "k": 2},
            headers={"traceparent": TRACEPARENT},
        )
        untraced = client.get("/v1/variants")
    assert response.status_code == untraced.status_code == 200
    assert exporter.get_finished_spans() == ()
    traced_line, plain_line = _access_lines(caplog)
    assert traced_line["trace_id"] == TRACE_ID
    assert traced_line["span_id"] == PARENT_ID
    assert plain_line["trace_id"] is None
    assert plain_line["span_id"] is None
    assert plain_line["request_id"] == untraced.headers["x-request-id"]


def test_with_tracing_off_stage_times_record_no_spans(client: TestClient) -> None:
    """The default settings: the middleware holds no tracer and the headers are as before."""
    middleware = client.app.middleware_stack  # type: ignore[attr-defined]
    while middleware is not None and type(middleware).__name__ != "RequestContextMiddleware":
        middleware = getattr(middleware, "app", None)
    assert middleware is not None
    assert middleware.tracing is None
    body = {"query": {"text": "a dog"}, "collection": "captions", "k": 1}
    response = client.post("/v1/search", json=body)
    assert response.status_code == 200
    assert {"x-timing-queue-ms", "x-timing-encode-ms", "x-timing-total-ms"} <= set(response.headers)


def test_an_unsampled_requests_json_line_names_its_callers_span(
    traced_settings: Settings, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    """Not the unexported server span's id: a log line names only spans that exist."""
    settings = traced_settings.model_copy(update={"access_log_format": "json"})
    unsampled = f"00-{TRACE_ID}-{PARENT_ID}-00"
    for client in _serve(settings, exporter):
        caplog.set_level(logging.INFO, logger="crisscross.access")
        client.get("/v1/variants", headers={"traceparent": unsampled})
        client.get("/v1/variants")
    assert exporter.get_finished_spans() != ()  # the second one, sampled at ratio 1
    caller, own = _access_lines(caplog)
    assert (caller["trace_id"], caller["span_id"]) == (TRACE_ID, PARENT_ID)
    [server] = exporter.get_finished_spans()
    assert own["span_id"] == format_span_id(server.context.span_id)

"""Request traces (service.telemetry.tracing): none without an endpoint; a server span that
joins the caller's traceparent, stage children placed from the context's own readings, the
route and status recorded at the end, and the caller's sampling decision followed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, format_span_id, format_trace_id
from starlette.types import Scope

from service.request_context import RequestContext
from service.settings import Settings
from service.telemetry.tracing import Tracing, start_tracing
from tests.conftest import REPO_ROOT

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"


def _scope(traceparent: str | None = None, method: str = "POST") -> Scope:
    headers = [] if traceparent is None else [(b"traceparent", traceparent.encode())]
    return {
        "type": "http",
        "method": method,
        "path": "/v1/search",
        "scheme": "http",
        "http_version": "1.1",
        "headers": headers,
        "client": ("10.0.0.7", 51000),
        "server": ("127.0.0.1", 8000),
    }


def _tracing(tmp_path: Path, exporter: InMemorySpanExporter, ratio: float = 1.0) -> Tracing:
    settings = Settings(
        bundles_root=tmp_path,
        variants_root=tmp_path,
        otlp_endpoint="http://127.0.0.1:9",
        trace_sample_ratio=ratio,
        trace_service_name="search-eu",
    )
    tracing = start_tracing(settings, exporter)
    assert tracing is not None
    return tracing


def test_without_an_endpoint_there_is_no_tracing(tmp_path: Path) -> None:
    assert start_tracing(Settings(bundles_root=tmp_path, variants_root=tmp_path)) is None


def test_an_untraced_service_never_loads_the_sdk() -> None:
    """The default settings, an app built and a request answered: the SDK is not imported."""
    script = textwrap.dedent(
        """
        import sys
        from fastapi.testclient import TestClient
        from service.http.app import create_app
        from service.settings import Settings
        with TestClient(create_app(Settings(bundles_root="/nonexistent"))) as client:
            client.get("/healthz", headers={"traceparent": sys.argv[1]})
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk"))
        print(loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, f"00-{TRACE_ID}-{PARENT_ID}-01"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_request_joins_its_callers_trace_and_its_stages_are_its_children(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    tracing = _tracing(tmp_path, exporter)
    context = RequestContext("req-1")
    trace = tracing.begin(_scope(f"00-{TRACE_ID}-{PARENT_ID}-01"), context)
    assert context.spans is trace
    assert trace.trace_id == TRACE_ID
    started = time.perf_counter()
    context.add_queue_ms(1.5, started)
    context.add_encode_ms(2.25, started + 0.0015)
    context.add_search_ms(0.125)  # no start given: timed, but no span
    trace.end("/v1/search", 200, "req-1", started + 0.01)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"queue", "encode", "POST /v1/search"}
    server = spans["POST /v1/search"]
    assert server.kind == SpanKind.SERVER
    assert server.parent is not None
    assert server.parent.is_remote
    assert format_span_id(server.parent.span_id) == PARENT_ID
    assert format_trace_id(server.context.trace_id) == TRACE_ID
    assert format_span_id(server.context.span_id) == trace.span_id
    assert server.resource.attributes["service.name"] == "search-eu"
    assert dict(server.attributes or {}) == {
        "http.request.method": "POST",
        "url.path": "/v1/search",
        "url.scheme": "http",
        "client.address": "10.0.0.7",
        "http.route": "/v1/search",
        "http.response.status_code": 200,
        "crisscross.request_id": "req-1",
    }
    for name, ms, offset_s in (("queue", 1.5, 0.0), ("encode", 2.25, 0.0015)):
        child = spans[name]
        assert child.parent is not None
        assert child.parent.span_id == server.context.span_id
        assert child.start_time is not None
        assert child.end_time is not None
        assert (child.end_time - child.start_time) / 1e6 == pytest.approx(ms, abs=1e-5)
        assert child.start_time == trace.wall_ns(started + offset_s)


def test_a_server_error_marks_the_span_and_an_unknown_method_is_other(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    tracing = _tracing(tmp_path, exporter)
    context = RequestContext("req-2")
    trace = tracing.begin(_scope(method="BREW"), context)
    trace.end(None, 500, "req-2", time.perf_counter())
    [span] = exporter.get_finished_spans()
    assert span.parent is None
    assert span.name == "_OTHER"
    assert span.status.status_code == StatusCode.ERROR
    attributes = dict(span.attributes or {})
    assert attributes["http.request.method_original"] == "BREW"
    assert attributes["error.type"] == "500"
    assert "http.route" not in attributes


@pytest.mark.parametrize(
    ("traceparent", "ratio"),
    [(f"00-{TRACE_ID}-{PARENT_ID}-00", 1.0), (None, 0.0)],
    ids=["caller-unsampled", "ratio-zero"],
)
def test_an_unsampled_request_records_no_spans(
    tmp_path: Path, traceparent: str | None, ratio: float
) -> None:
    exporter = InMemorySpanExporter()
    tracing = _tracing(tmp_path, exporter, ratio)
    context = RequestContext("req-3")
    trace = tracing.begin(_scope(traceparent), context)
    assert context.spans is None  # stages cost nothing more
    context.add_encode_ms(1.0, time.perf_counter())
    trace.end("/v1/search", 200, "req-3", time.perf_counter())
    assert exporter.get_finished_spans() == ()
    assert len(trace.trace_id) == 32
    assert len(trace.span_id) == 16


def test_the_otlp_exporter_is_made_for_the_endpoint_and_shuts_down(tmp_path: Path) -> None:
    settings = Settings(
        bundles_root=tmp_path, variants_root=tmp_path, otlp_endpoint="http://127.0.0.1:9"
    )
    tracing = start_tracing(settings)
    assert tracing is not None
    tracing.shutdown()  # nothing queued: nothing is sent

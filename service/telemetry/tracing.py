"""OpenTelemetry traces of the service's requests: one server span per HTTP request, a child of
the caller's W3C ``traceparent`` when it sends one, and one child span per timed stage.

Tracing exists only where ``otlp_endpoint`` is set (:func:`start_tracing` returns None
otherwise, and the middleware then takes its untraced branch: no provider, no tracer, no span
object, and the OpenTelemetry SDK is not even imported). Each server process makes its own
provider when it builds its app — a single server, and each worker of several (spawned, so
nothing of the supervisor's is inherited) — and exports in batches from a thread of its own.

The stage spans are not timed twice. The request's :class:`~service.request_context.RequestContext`
hands :meth:`RequestTrace.stage` the very ``perf_counter`` readings its ``x-timing-*`` times come
from, and this module places them on the wall clock through one anchor per request (the server
span's start, read next to the context's own start): a stage span's duration is its header's
time, to the nanosecond's rounding.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.datastructures import Headers
from starlette.types import Scope

from service.request_context import RequestContext, Stage
from service.settings import Settings, traces_url

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

logger = logging.getLogger("crisscross.service")

TRACER_NAME: Final = "crisscross.service"
REQUEST_ID_ATTRIBUTE: Final = "crisscross.request_id"
_TRACEPARENT: Final = b"traceparent"
_OTHER_METHOD: Final = "_OTHER"  # the semantic conventions' name for a method they do not know
_KNOWN_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestTrace:
    """One request's server span and its stage spans (a
    :class:`~service.request_context.StageSpans`)."""

    def __init__(
        self, tracer: trace.Tracer, span: trace.Span, method: str, anchor_ns: int, anchor_s: float
    ) -> None:
        self._tracer = tracer
        self.span = span
        self._method = method
        self._anchor_ns = anchor_ns
        self._anchor_s = anchor_s
        self._parent: Context | None = None

    def wall_ns(self, perf_s: float) -> int:
        """The wall-clock time (ns since the epoch) of a ``perf_counter`` reading."""
        return self._anchor_ns + round((perf_s - self._anchor_s) * 1e9)

    @property
    def trace_id(self) -> str:
        """The trace's id, 32 lowercase hex characters."""
        return trace.format_trace_id(self.span.get_span_context().trace_id)

    @property
    def span_id(self) -> str:
        """The server span's id, 16 lowercase hex characters."""
        return trace.format_span_id(self.span.get_span_context().span_id)

    def stage(self, name: Stage, started_s: float, ended_s: float) -> None:
        """A child span ``name`` from ``started_s`` to ``ended_s`` (``perf_counter``)."""
        if self._parent is None:
            self._parent = trace.set_span_in_context(self.span)
        child = self._tracer.start_span(
            name,
            context=self._parent,
            kind=SpanKind.INTERNAL,
            start_time=self.wall_ns(started_s),
        )
        child.end(end_time=self.wall_ns(ended_s))

    def end(self, route: str | None, status: int, request_id: str, ended_s: float) -> None:
        """Name the span for its route (``POST /v1/search``; the method alone when no route
        matched), record the answer and end it at ``ended_s`` (``perf_counter``)."""
        span = self.span
        if span.is_recording():
            if route is not None:
                span.update_name(f"{self._method} {route}")
                span.set_attribute("http.route", route)
            span.set_attribute("http.response.status_code", status)
            span.set_attribute(REQUEST_ID_ATTRIBUTE, request_id)
            if status >= 500:
                span.set_attribute("error.type", str(status))
                span.set_status(StatusCode.ERROR)
        span.end(end_time=self.wall_ns(ended_s))


class Tracing:
    """One server process's tracer (see the module docstring)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer(TRACER_NAME)
        self._propagator = TraceContextTextMapPropagator()

    def begin(self, scope: Scope, context: RequestContext) -> RequestTrace:
        """Start the server span of the request of ``scope`` (a child of its ``traceparent``),
        anchored at ``context``'s start; a sampled one also receives the context's stages."""
        parent = self._parent_of(scope)
        anchor_ns = time.time_ns()
        original = str(scope.get("method", ""))
        method = original if original in _KNOWN_METHODS else _OTHER_METHOD
        # The semantic conventions' required attributes and the client; each attribute costs
        # the SDK microseconds per span, so the recommended rest is left out.
        attributes: dict[str, str] = {
            "http.request.method": method,
            "url.path": str(scope.get("path", "")),
            "url.scheme": str(scope.get("scheme", "http")),
        }
        if method != original:
            attributes["http.request.method_original"] = original
        client = scope.get("client")
        if client:
            attributes["client.address"] = str(client[0])
        span = self._tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            start_time=anchor_ns,
            attributes=attributes,
        )
        request_trace = RequestTrace(self._tracer, span, method, anchor_ns, context.started_s)
        if span.is_recording():
            context.spans = request_trace
        return request_trace

    def _parent_of(self, scope: Scope) -> Context | None:
        """The caller's context from the ``traceparent`` (and ``tracestate``) headers; None,
        without asking the propagator, when there is no traceparent (most requests)."""
        raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
        if not any(name == _TRACEPARENT for name, _ in raw):
            return None
        return self._propagator.extract(Headers(scope=scope))

    def shutdown(self) -> None:
        """Export what is still queued (bounded by the exporter's timeout) and stop."""
        self.provider.shutdown()


def start_tracing(settings: Settings, exporter: SpanExporter | None = None) -> Tracing | None:
    """This process's :class:`Tracing` for ``settings``: None when ``otlp_endpoint`` is unset.

    Spans go to ``exporter`` when one is given, each as it ends (tests and in-process
    collectors), else in batches over OTLP/HTTP to ``otlp_endpoint``. Sampling follows the
    caller's decision, else ``trace_sample_ratio`` of the trace ids."""
    if settings.otlp_endpoint is None:
        return None
    # Imported only here: a service without tracing never loads the SDK or the exporter.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        sampler=ParentBased(TraceIdRatioBased(settings.trace_sample_ratio)),
        resource=Resource.create({"service.name": settings.trace_service_name}),
    )
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        url = traces_url(settings.otlp_endpoint)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
        logger.info(
            "tracing: exporting to %s as %r (sample ratio %g)",
            url,
            settings.trace_service_name,
            settings.trace_sample_ratio,
        )
    return Tracing(provider)

"""What the service tells operators about each request besides its metrics: OpenTelemetry traces
(:mod:`.tracing`), the W3C ``traceparent`` header read without a tracer (:mod:`.traceparent`)
and the access log line (:mod:`.access_log`)."""

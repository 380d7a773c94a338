"""Request and response models of the HTTP API v1 (docs/contracts.md), one module per route.

Requests are strict (``k`` must be a JSON Schema integer: ``5`` or ``5.0``, not ``5.5``, ``"5"``
or ``true``) and refuse unknown fields; each query side is a tagged union the OpenAPI document
states as ``oneOf``. Rules that do not depend on settings live in the models; the limits that do
(``max_k``, ``max_text_chars``, ...) are checked once, by :func:`service.http.limits.check_limits`,
before any decoding or encoding, so one request model serves every configuration.
"""

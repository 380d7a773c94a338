"""The service's per-request limits, cutting long inputs into requests that fit them, and how
a bulk upsert reports a batch that failed (:class:`UpsertError`).

:class:`ServiceLimits` defaults to the service's own defaults (``service/settings/limits.py``,
``service/settings/writes.py``); a server configured otherwise states its limits in its OpenAPI
document (``GET /openapi.json``), which :meth:`ServiceLimits.from_openapi` reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from crisscross_client.errors import CrisscrossError

T = TypeVar("T")

MIB = 1024 * 1024
JSON_OVERHEAD_BYTES = 4096
"""Room left in a body limit for what surrounds the items (keys, variant, brackets)."""


@dataclass(frozen=True)
class ServiceLimits:
    """How much one request may carry.

    Attributes:
        max_bulk_searches: searches per ``POST /v1/search/bulk``.
        max_embed_inputs: texts per ``POST /v1/embed`` (and ``POST /v1/embeddings``).
        max_images_per_request: images per request (searches of a bulk request together, the
            sides of a score request, the images of an embed request).
        max_score_pairs: pairs per ``POST /v1/score``.
        max_write_items: items (or ids) per upsert, delete or get.
        max_body_bytes: a JSON body (search, score, embed).
        max_bulk_body_bytes: a bulk search body.
        max_write_body_bytes: a body under ``/v1/collections/``.
    """

    max_bulk_searches: int = 256
    max_embed_inputs: int = 2048
    max_images_per_request: int = 32
    max_score_pairs: int = 1024
    max_write_items: int = 1000
    max_body_bytes: int = 1 * MIB
    max_bulk_body_bytes: int = 32 * MIB
    max_write_body_bytes: int = 32 * MIB

    @classmethod
    def from_openapi(cls, document: Mapping[str, Any]) -> ServiceLimits:
        """The count limits a served OpenAPI document states (``maxItems`` of the request
        schemas); the defaults for what it does not state."""
        schemas = document.get("components", {}).get("schemas", {})

        def max_items(schema: str, field: str) -> int | None:
            value = schemas.get(schema, {}).get("properties", {}).get(field, {}).get("maxItems")
            return int(value) if isinstance(value, int) else None

        found = {
            "max_bulk_searches": max_items("BulkSearchRequest", "searches"),
            "max_embed_inputs": max_items("EmbedTexts", "texts"),
            "max_score_pairs": max_items("ScoreRequest", "pairs"),
            "max_write_items": max_items("UpsertRequest", "items"),
        }
        return replace(cls(), **{key: value for key, value in found.items() if value})

    def as_dict(self) -> dict[str, int]:
        """The limits by name."""
        return {entry.name: getattr(self, entry.name) for entry in fields(self)}


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON (about what it adds to a body)."""
    return len(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def cut(
    items: Sequence[T],
    *,
    max_count: int,
    max_bytes: int | None = None,
    size: Callable[[T], int] | None = None,
    max_images: int | None = None,
    images: Callable[[T], int] | None = None,
) -> Iterator[list[T]]:
    """``items`` in order, cut into runs of at most ``max_count`` items, ``max_bytes`` bytes
    (by ``size``, leaving :data:`JSON_OVERHEAD_BYTES` spare) and ``max_images`` images (by
    ``images``). An item too large alone still makes a run of its own (the service then says
    why it refuses it)."""
    run: list[T] = []
    run_bytes = 0
    run_images = 0
    budget = None if max_bytes is None else max(1, max_bytes - JSON_OVERHEAD_BYTES)
    for item in items:
        item_bytes = size(item) if size is not None and budget is not None else 0
        item_images = images(item) if images is not None and max_images is not None else 0
        full = len(run) >= max_count
        if budget is not None and run_bytes + item_bytes > budget:
            full = True
        if max_images is not None and run_images + item_images > max_images:
            full = True
        if run and full:
            yield run
            run, run_bytes, run_images = [], 0, 0
        run.append(item)
        run_bytes += item_bytes + 1
        run_images += item_images
    if run:
        yield run


class UpsertError(CrisscrossError):
    """A batch of an upsert failed: the service acknowledged ``acknowledged`` of ``total``
    items before it (in other batches, each all or nothing, every acknowledged item durable),
    and ``pending_ids`` (in input order) are the rest, to send again. Upserts replace by id,
    so sending all the items again is harmless too.

    It carries the failed batch's ``status``, ``code``, ``message``, ``request_id``, ...;
    ``error`` (also its ``__cause__``) is that batch's own :class:`CrisscrossError`
    (``NotFoundError``, ``InvalidInputError``, ...).
    """

    def __init__(
        self, error: CrisscrossError, *, acknowledged: int, total: int, pending_ids: list[str]
    ) -> None:
        super().__init__(
            f"upsert stopped after {acknowledged} of {total} items were acknowledged: "
            f"{error.message}",
            status=error.status,
            code=error.code,
            request_id=error.request_id,
            retry_after=error.retry_after,
            method=error.method,
            url=error.url,
            param=error.param,
            error_type=error.error_type,
        )
        self.error = error
        self.acknowledged = acknowledged
        self.total = total
        self.pending_ids = pending_ids

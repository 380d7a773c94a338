"""A fake service that takes the search levers, for the compare run's lever settings.

It wraps :class:`tests.fakes.fake_variants.MultiVariantService`: every search (single or in a
bulk) is first read with the API client's own request model (an unknown field or value is 422,
as the service's strict models answer), a ``window`` under ``offset + k`` is 422, and a
``rerank`` by a variant that is not served is 409. A ``lexical`` or ``hybrid`` search of a variant
is ranked by that variant's *keyword* fake (another :class:`FakeService` over the same ids: its
own texts), a dense one as before; hybrid searches take :data:`HYBRID_DELAY_S` longer. Every
answer names its ``mode``. It records ``(variant, search body)`` of every search and the variant
of every ``POST /v1/score``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import ValidationError

from crisscross_client import models as m
from tests.fakes.fake_service import FakeService, dual_tower_service
from tests.fakes.fake_variants import FakeVariant, MultiVariantService, degraded, two_variants
from tests.fakes.tiny_data import TinyDataset

HYBRID_DELAY_S = 0.01


def _error(status: int, code: str, message: str) -> dict[str, Any]:
    return {"status": status, "error": {"code": code, "message": message}}


@dataclass
class LeverService:
    """:class:`MultiVariantService` plus the levers (see the module)."""

    base: MultiVariantService
    keyword: dict[str, FakeService]
    searches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    scores: list[str] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def _one(self, search: dict[str, Any]) -> dict[str, Any]:
        """One search's ``{"status", "result"|"error"}`` as a bulk answer holds it."""
        try:
            request = m.SearchRequest.model_validate(search)
        except ValidationError as error:
            return _error(422, "invalid_input", str(error).splitlines()[0])
        variant = request.variant or self.base.default
        self.searches.append((variant, search))
        if variant not in self.base.variants:
            return _error(404, "not_found", "unknown variant")
        needed = (request.offset or 0) + (request.k or 10)
        if request.window is not None and request.window < needed:
            return _error(422, "invalid_input", f"window {request.window} < offset + k {needed}")
        if isinstance(request.rerank, m.VariantRerank) and (
            request.rerank.variant not in self.base.variants
        ):
            return _error(409, "lever_not_applicable", "no such variant serves the collection")
        mode = request.mode or "dense"
        service = (
            self.keyword[variant]
            if mode in ("lexical", "hybrid")
            else self.base.variants[variant].service
        )
        plain = {key: value for key, value in search.items() if key in ("query", "collection")}
        plain |= {key: search[key] for key in ("k", "offset", "exclude") if key in search}
        answer = service.handle(httpx.Request("POST", "http://fake/v1/search", json=plain))
        if answer.status_code != 200:
            return {"status": answer.status_code, "error": answer.json()["error"]}
        return {"status": 200, "result": {**answer.json(), "mode": mode}}

    def _delay(self, searches: list[dict[str, Any]]) -> float:
        first = searches[0]
        variant = self.base.variants.get(first.get("variant") or self.base.default)
        extra = HYBRID_DELAY_S if first.get("mode") == "hybrid" else 0.0
        return (variant.search_delay_s if variant is not None else 0.0) + extra

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/score":
            self.scores.append(json.loads(request.content).get("variant") or self.base.default)
        if path not in ("/v1/search", "/v1/search/bulk"):
            return await self.base.handle(request)
        body = json.loads(request.content)
        searches = body["searches"] if path == "/v1/search/bulk" else [body]
        await asyncio.sleep(self._delay(searches))
        answers = [self._one(search) for search in searches]
        if path == "/v1/search/bulk":
            return httpx.Response(200, json={"responses": answers, "timings_ms": {"total": 0.1}})
        (answer,) = answers
        if answer["status"] != 200:
            return httpx.Response(answer["status"], json={"error": answer["error"]})
        return httpx.Response(200, json=answer["result"])


def caption_levers(tiny: TinyDataset) -> LeverService:
    """The two caption variants of :func:`two_variants` (``full``, ``short``); their keyword
    fakes rank by each caption's first two words."""
    base = two_variants(tiny)
    keyword = {
        name: FakeService(degraded(tiny.captions, 2), variant=name, bundle_version=f"v-{name}")
        for name in base.variants
    }
    return LeverService(base, keyword)


def scenes_levers(tiny: TinyDataset) -> LeverService:
    """One dual-tower variant ``dual`` with ``captions`` and ``images`` (an image *is* its toy
    description); its keyword fake matches an image by the text of its captions, as keywords
    on an image collection's ``captions`` field would."""
    dense = dual_tower_service(tiny, variant="dual", bundle_version="v-dual")
    base = MultiVariantService({"dual": FakeVariant(dense)})
    texts: dict[str, list[str]] = {}
    for caption in tiny.captions:
        texts.setdefault(caption.filename, []).append(caption.text)
    images = [(name, " ".join(texts.get(name, []))) for name in tiny.filenames]
    keyword = dual_tower_service(tiny, images=images, variant="dual", bundle_version="v-dual")
    return LeverService(base, {"dual": keyword})

"""A fake Crisscross service serving several variants at once, for ``httpx.MockTransport``.

Each variant is a :class:`tests.fakes.fake_service.FakeService` of its own (its own
captions collection, its own bundle), with a fixed search delay so that variants differ in cost
as well as quality. Requests are routed by their ``variant`` field (the first variant is the
default; a bulk search by its first search's); ``/v1/variants`` and ``/v1/collections`` list
them all, as the real service does. It records ``(variant, body)`` of every search (single or in
a bulk) so tests can check what was sent where.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from formats.karpathy import CaptionRecord
from tests.fakes.fake_service import FakeService
from tests.fakes.tiny_data import TinyDataset


@dataclass
class FakeVariant:
    """One served variant: its service, search delay (s), and what ``/v1/variants`` says."""

    service: FakeService
    search_delay_s: float = 0.0
    precision: str = "fp32"
    providers: tuple[str, ...] = ("CPUExecutionProvider",)


def degraded(captions: list[CaptionRecord], words: int) -> list[CaptionRecord]:
    """The captions as a worse encoder "sees" them: only their first ``words`` words (same keys
    and row order), so its rankings and scores differ from the full-text variant's."""
    return [
        dataclasses.replace(caption, text=" ".join(caption.text.split()[:words]))
        for caption in captions
    ]


@dataclass
class MultiVariantService:
    """Several :class:`FakeVariant` behind one transport."""

    variants: dict[str, FakeVariant]
    searches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        """A MockTransport routing requests to :meth:`handle` (async: delays do not block)."""
        return httpx.MockTransport(self.handle)

    @property
    def default(self) -> str:
        return next(iter(self.variants))

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/variants":
            return httpx.Response(200, json={"variants": self._variant_entries()})
        if path == "/v1/collections":
            entries = []
            for name, variant in self.variants.items():
                answer = variant.service.handle(request).json()
                for entry in answer["collections"]:
                    entries.append({**entry, "bundle": f"tiny-{name}"})
            return httpx.Response(200, json={"collections": entries})
        if path in ("/v1/search", "/v1/search/bulk", "/v1/score"):
            body = json.loads(request.content)
            searches = body["searches"] if path == "/v1/search/bulk" else [body]
            name = searches[0].get("variant") or self.default
            variant = self.variants.get(name)
            if variant is None:
                error = {"code": "not_found", "message": "unknown variant", "request_id": "x"}
                return httpx.Response(404, json={"error": error})
            if path != "/v1/score":
                self.searches.extend((name, search) for search in searches)
                await asyncio.sleep(variant.search_delay_s)
            return variant.service.handle(request)
        return self.variants[self.default].service.handle(request)

    def _variant_entries(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "dim": 8,
                "precision": variant.precision,
                "towers": list(variant.service.towers or ()),
                "providers": list(variant.providers),
                "tower_providers": {"text": list(variant.providers)},
                "fingerprint": "ab" * 32,
                "bundle_versions": {f"tiny-{name}": variant.service.bundle_version},
                "default": name == self.default,
            }
            for name, variant in self.variants.items()
        ]


FAST_DELAY_S = 0.001
SLOW_DELAY_S = 0.02


def two_variants(tiny: TinyDataset) -> MultiVariantService:
    """``full`` ranks on the whole caption text and answers fast; ``short`` (int8, say) sees
    only each stored caption's first three words and answers 20 ms later."""
    full = FakeVariant(
        FakeService(tiny.captions, variant="full", bundle_version="v-full"),
        search_delay_s=FAST_DELAY_S,
    )
    short = FakeVariant(
        FakeService(degraded(tiny.captions, 3), variant="short", bundle_version="v-short"),
        search_delay_s=SLOW_DELAY_S,
        precision="int8",
    )
    return MultiVariantService({"full": full, "short": short})

"""An in-process fake of the Crisscross v1 API for ``httpx.MockTransport``.

It serves one ``captions`` collection and ranks by a deterministic toy similarity (Jaccard
overlap of lower-cased word sets, which ties often) with the contract's tie rule: score
descending, then row ascending. It records every request so tests can check what was sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.datasets import Caption

_WORD = re.compile(r"[a-z0-9]+")


def toy_similarity(left: str, right: str) -> float:
    """Jaccard overlap of the two texts' lower-cased word sets, in [0, 1]."""
    a = set(_WORD.findall(left.lower()))
    b = set(_WORD.findall(right.lower()))
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def _error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "request_id": "fake-req"}}
    return httpx.Response(status, json=body, headers=headers)


@dataclass
class FakeService:
    """The fake service's state and its request handler."""

    captions: Sequence[Caption]
    max_k: int = 1000
    max_score_pairs: int = 1024
    variant: str = "toy-jaccard"
    bundle_version: str = "20260101T000000Z"
    not_ready_polls: int = 0
    overloaded_searches: int = 0
    has_variants_route: bool = True
    requests: list[tuple[str, str, Any]] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        """A MockTransport routing requests to :meth:`handle`."""
        return httpx.MockTransport(self.handle)

    def _text_of(self, side: dict[str, Any]) -> str | None:
        if "text" in side:
            return str(side["text"])
        item = side.get("item") or {}
        if item.get("collection") != "captions":
            return None
        for caption in self.captions:
            if caption.key == item.get("id"):
                return caption.text
        return None

    def handle(self, request: httpx.Request) -> httpx.Response:
        body: dict[str, Any] = json.loads(request.content) if request.content else {}
        path = request.url.path
        self.requests.append((request.method, path, body))
        if path == "/readyz":
            if self.not_ready_polls > 0:
                self.not_ready_polls -= 1
                return _error(503, "not_ready", "loading", {"Retry-After": "1"})
            return httpx.Response(200, json={"status": "ready"})
        if path == "/v1/collections":
            return httpx.Response(
                200,
                json={
                    "collections": [
                        {
                            "name": "captions",
                            "count": len(self.captions),
                            "dim": 8,
                            "variant": self.variant,
                            "bundle": "tiny",
                            "bundle_version": self.bundle_version,
                            "factory": "Flat",
                            "metric": "ip",
                        }
                    ]
                },
            )
        if path == "/v1/variants":
            if not self.has_variants_route:
                return _error(404, "not_found", "no such route")
            return httpx.Response(200, json={"variants": [{"name": self.variant, "dim": 8}]})
        if path == "/v1/search" and request.method == "POST":
            return self._search(body)
        if path == "/v1/score" and request.method == "POST":
            return self._score(body)
        return _error(404, "not_found", f"no route {path}")

    def _search(self, body: dict[str, Any]) -> httpx.Response:
        if self.overloaded_searches > 0:
            self.overloaded_searches -= 1
            return _error(503, "overloaded", "queue full", {"Retry-After": "0"})
        k = body.get("k")
        if not isinstance(k, int) or not 1 <= k <= self.max_k:
            return _error(422, "invalid_input", f"k must be in 1..{self.max_k}")
        if body.get("collection") != "captions":
            return _error(404, "not_found", "unknown collection")
        text = self._text_of(body["query"])
        if text is None:
            return _error(404, "not_found", "unknown item")
        excluded = set(body.get("exclude") or [])
        scored = [
            (-toy_similarity(text, caption.text), caption.row, caption)
            for caption in self.captions
            if caption.key not in excluded
        ]
        scored.sort(key=lambda entry: (entry[0], entry[1]))
        results = [
            {
                "id": caption.key,
                "score": -negative,
                "rank": rank,
                "metadata": {"text": caption.text, "image_id": caption.image_id},
            }
            for rank, (negative, _, caption) in enumerate(scored[:k], start=1)
        ]
        return httpx.Response(
            200,
            json={
                "results": results,
                "collection": "captions",
                "variant": self.variant,
                "bundle": "tiny",
                "bundle_version": self.bundle_version,
                "timings_ms": {"encode": 0.1, "search": 0.1, "total": 0.2},
            },
        )

    def _score(self, body: dict[str, Any]) -> httpx.Response:
        pairs = body.get("pairs") or []
        if not 1 <= len(pairs) <= self.max_score_pairs:
            return _error(422, "invalid_input", f"1..{self.max_score_pairs} pairs")
        scores = []
        for pair in pairs:
            left, right = self._text_of(pair["left"]), self._text_of(pair["right"])
            if left is None or right is None:
                return _error(404, "not_found", "unknown item")
            scores.append(toy_similarity(left, right))
        return httpx.Response(
            200,
            json={
                "scores": scores,
                "variant": self.variant,
                "bundle_version": self.bundle_version,
                "timings_ms": {"total": 0.1},
            },
        )

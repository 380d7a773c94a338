"""An in-process fake of the Crisscross v1 API for ``httpx.MockTransport``.

It serves a ``captions`` collection and, optionally, an ``images`` collection, and ranks by a
deterministic toy similarity (Jaccard overlap of lower-cased word sets, which ties often) with
the contract's tie rule: score descending, then row ascending. An image "is" its toy
description text: a stored image item is its description, an uploaded image is looked up by its
bytes. Text sides need the ``text`` tower and uploads the ``image`` tower (409 otherwise), as in
the contract. It records every request so tests can check what was sent; a bulk search
(``/v1/search/bulk``) answers each of its searches as ``/v1/search`` would.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from formats.karpathy import CaptionRecord
from tests.fakes.tiny_data import TinyDataset

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


class _SideError(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__("bad side")
        self.response = response


@dataclass
class FakeService:
    """The fake service's state and its request handler.

    Attributes:
        captions: the ``captions`` collection (row order); empty → no such collection.
        images: the ``images`` collection as (file name, description) in row order; ``None`` →
            no such collection.
        uploads: uploaded file bytes → description (what "decoding" an upload yields).
        towers: the variant's towers; ``None`` → ``/v1/variants`` omits the field.
        max_images_per_request: most image uploads in one request (413 beyond).
    """

    captions: Sequence[CaptionRecord]
    images: Sequence[tuple[str, str]] | None = None
    uploads: Mapping[bytes, str] = field(default_factory=dict)
    towers: tuple[str, ...] | None = ("text",)
    max_k: int = 1000
    max_score_pairs: int = 1024
    max_bulk_searches: int = 1024
    max_images_per_request: int = 32
    variant: str = "toy-jaccard"
    bundle_version: str = "20260101T000000Z"
    not_ready_polls: int = 0
    overloaded_searches: int = 0
    has_variants_route: bool = True
    requests: list[tuple[str, str, Any]] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        """A MockTransport routing requests to :meth:`handle`."""
        return httpx.MockTransport(self.handle)

    def _collection(self, name: object) -> list[tuple[str, str]] | None:
        """(id, content) in row order of a served collection, or ``None``."""
        if name == "captions" and self.captions:
            return [(caption.key, caption.text) for caption in self.captions]
        if name == "images" and self.images is not None:
            return list(self.images)
        return None

    def _content_of(self, side: dict[str, Any]) -> str:
        """The text a query/pair side stands for; raises :class:`_SideError` with the answer."""
        if "text" in side:
            if self.towers is not None and "text" not in self.towers:
                raise _SideError(_error(409, "tower_missing", "variant has no text tower"))
            return str(side["text"])
        if "image" in side:
            if self.towers is not None and "image" not in self.towers:
                raise _SideError(_error(409, "tower_missing", "variant has no image tower"))
            try:
                data = base64.b64decode(str(side["image"]), validate=True)
            except (binascii.Error, ValueError) as error:
                raise _SideError(_error(422, "invalid_input", "bad base64")) from error
            if data not in self.uploads:
                raise _SideError(_error(422, "invalid_input", "not an image"))
            return self.uploads[data]
        item = side.get("item") or {}
        entries = self._collection(item.get("collection"))
        for identifier, content in entries or []:
            if identifier == item.get("id"):
                return content
        raise _SideError(_error(404, "not_found", "unknown item"))

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
            served = [("captions", len(self.captions))] if self.captions else []
            if self.images is not None:
                served.append(("images", len(self.images)))
            return httpx.Response(
                200,
                json={
                    "collections": [
                        {
                            "name": name,
                            "count": count,
                            "dim": 8,
                            "variant": self.variant,
                            "bundle": "tiny",
                            "bundle_version": self.bundle_version,
                            "factory": "Flat",
                            "metric": "ip",
                        }
                        for name, count in served
                    ]
                },
            )
        if path == "/v1/variants":
            if not self.has_variants_route:
                return _error(404, "not_found", "no such route")
            variant: dict[str, Any] = {"name": self.variant, "dim": 8, "default": True}
            if self.towers is not None:
                variant["towers"] = list(self.towers)
            return httpx.Response(200, json={"variants": [variant]})
        if path == "/v1/search" and request.method == "POST":
            return self._search(body)
        if path == "/v1/search/bulk" and request.method == "POST":
            return self._search_bulk(body)
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
        offset = body.get("offset", 0)
        if not isinstance(offset, int) or offset < 0:
            return _error(422, "invalid_input", "offset must be a non-negative integer")
        entries = self._collection(body.get("collection"))
        if entries is None:
            return _error(404, "not_found", "unknown collection")
        try:
            text = self._content_of(body["query"])
        except _SideError as error:
            return error.response
        excluded = set(body.get("exclude") or [])
        scored = [
            (-toy_similarity(text, content), row, identifier)
            for row, (identifier, content) in enumerate(entries)
            if identifier not in excluded
        ]
        scored.sort(key=lambda entry: (entry[0], entry[1]))
        results = [
            {"id": identifier, "score": -negative, "rank": rank, "metadata": {}}
            for rank, (negative, _, identifier) in enumerate(
                scored[offset : offset + k], start=offset + 1
            )
        ]
        return httpx.Response(
            200,
            json={
                "results": results,
                "collection": body["collection"],
                "variant": self.variant,
                "bundle": "tiny",
                "bundle_version": self.bundle_version,
                "timings_ms": {"encode": 0.1, "search": 0.1, "total": 0.2},
            },
        )

    def _search_bulk(self, body: dict[str, Any]) -> httpx.Response:
        """Each search as ``/v1/search`` would answer it, in order, each with its own status."""
        searches = body.get("searches")
        if not isinstance(searches, list) or not 1 <= len(searches) <= self.max_bulk_searches:
            return _error(422, "invalid_input", f"1..{self.max_bulk_searches} searches")
        if self.overloaded_searches > 0:
            self.overloaded_searches -= 1
            return _error(503, "overloaded", "queue full", {"Retry-After": "0"})
        responses = []
        for search in searches:
            answer = self._search(search)
            ok = answer.status_code == 200
            responses.append(
                {
                    "status": answer.status_code,
                    "result": answer.json() if ok else None,
                    "error": None if ok else answer.json()["error"],
                }
            )
        return httpx.Response(200, json={"responses": responses, "timings_ms": {"total": 0.1}})

    def _score(self, body: dict[str, Any]) -> httpx.Response:
        pairs = body.get("pairs") or []
        if not 1 <= len(pairs) <= self.max_score_pairs:
            return _error(422, "invalid_input", f"1..{self.max_score_pairs} pairs")
        uploads = sum("image" in pair[side] for pair in pairs for side in ("left", "right"))
        if uploads > self.max_images_per_request:
            return _error(413, "payload_too_large", f"{uploads} images in one request")
        scores = []
        for pair in pairs:
            try:
                left, right = self._content_of(pair["left"]), self._content_of(pair["right"])
            except _SideError as error:
                return error.response
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


def dual_tower_service(tiny: TinyDataset, **overrides: Any) -> FakeService:
    """A fake service of the tiny dataset with both towers, an ``images`` collection (each image
    is its description) and every image file uploadable; ``overrides`` replace any setting."""
    settings: dict[str, Any] = {
        "images": [(name, tiny.descriptions[name]) for name in tiny.filenames],
        "uploads": {content: tiny.descriptions[name] for name, content in tiny.image_bytes.items()},
        "towers": ("text", "image"),
    }
    settings.update(overrides)
    return FakeService(tiny.captions, **settings)

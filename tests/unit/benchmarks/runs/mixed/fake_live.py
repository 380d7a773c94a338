"""A fake of the service's live-collection routes for the mixed run, in memory behind
:class:`httpx.MockTransport`: exact search over the stored vectors, and faults to switch on
(writes unavailable, 503s to retry, reads that miss a fresh write, deletes that keep their ids,
searches that fail)."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


def _error(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"code": code, "message": code}}
    return httpx.Response(status, json=body, headers=headers)


@dataclass
class FakeCollection:
    dim: int
    fields: dict[str, str]
    items: dict[str, tuple[Vector, dict[str, Any]]] = field(default_factory=dict)
    seq: int = 0
    rows: int = 0


@dataclass
class FakeLive:
    """The routes the mixed run calls. Faults:

    Attributes:
        writes_unavailable: ``POST /v1/collections`` answers 409 ``writes_unavailable``.
        busy_every: every n-th upsert is first answered 503 with ``Retry-After: 0`` (0: never).
        stale_reads: per written id, this many gets and this many k=1 searches that would
            return it first miss it (the searchers' own searches, k > 1, always see it).
        keep_deleted: deletes answer as if they deleted but keep the items.
        search_error_every: every n-th search answers 500 (0: never).
        fail_searches: every search answers 500 (a warm-up then fails).
    """

    writes_unavailable: bool = False
    busy_every: int = 0
    stale_reads: int = 0
    keep_deleted: bool = False
    search_error_every: int = 0
    fail_searches: bool = False
    collections: dict[str, FakeCollection] = field(default_factory=dict)
    upserts: int = 0
    searches: int = 0
    busy_answers: int = 0
    dropped: list[str] = field(default_factory=list)
    _misses: dict[tuple[str, str], int] = field(default_factory=dict)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0)  # a real exchange lets the other clients run meanwhile
        path, method = request.url.path, request.method
        body = json.loads(request.content) if request.content else {}
        if path == "/readyz":
            return httpx.Response(200, json={"status": "ready"})
        if path == "/v1/search":
            return self.search(body)
        if path == "/v1/collections" and method == "POST":
            return self.create(body)
        parts = path.removeprefix("/v1/collections/").split("/")
        collection = self.collections.get(parts[0])
        if collection is None:
            return _error(404, "not_found")
        if len(parts) == 1 and method == "DELETE":
            del self.collections[parts[0]]
            self.dropped.append(parts[0])
            return httpx.Response(200, json={"dropped": parts[0]})
        if len(parts) == 1:
            return httpx.Response(200, json=self.info(parts[0], collection))
        if parts[1:] == ["items"]:
            return self.upsert(collection, body)
        if parts[1:] == ["items", "get"]:
            return self.get(collection, body)
        if parts[1:] == ["items", "delete"]:
            return self.delete(collection, body)
        return _error(404, "not_found")

    def create(self, body: dict[str, Any]) -> httpx.Response:
        if self.writes_unavailable:
            return _error(409, "writes_unavailable")
        if body["name"] in self.collections:
            return _error(409, "collection_exists")
        self.collections[body["name"]] = FakeCollection(body["dim"], body.get("fields", {}))
        return httpx.Response(200, json=self.info(body["name"], self.collections[body["name"]]))

    @staticmethod
    def info(name: str, collection: FakeCollection) -> dict[str, Any]:
        return {
            "name": name,
            "dim": collection.dim,
            "variant": None,
            "fields": collection.fields,
            "count": len(collection.items),
            "seq": collection.seq,
            "rows": collection.rows,
            "base_count": 0,
            "base_version": None,
            "index": "Flat",
            "log_bytes": 0,
            "created": "2026-11-28T00:00:00Z",
        }

    def upsert(self, collection: FakeCollection, body: dict[str, Any]) -> httpx.Response:
        self.upserts += 1
        if self.busy_every and self.upserts % self.busy_every == 0:
            self.busy_answers += 1
            return _error(503, "overloaded", {"retry-after": "0"})
        for item in body["items"]:
            if "vector_base64" in item:
                vector = np.frombuffer(base64.b64decode(item["vector_base64"]), dtype="<f4")
            else:
                vector = np.asarray(item["vector"], dtype=np.float32)
            if vector.shape != (collection.dim,):
                return _error(422, "invalid_input")
            vector = vector / np.linalg.norm(vector)
            collection.items[item["id"]] = (vector.astype(np.float32), item.get("metadata", {}))
            self._misses[item["id"], "get"] = self.stale_reads
            self._misses[item["id"], "search"] = self.stale_reads
            collection.rows += 1
        collection.seq += 1
        return httpx.Response(200, json={"seq": collection.seq, "upserted": len(body["items"])})

    def _visible(self, item_id: str, kind: str) -> bool:
        """Whether this read (``get`` or ``search``) sees ``item_id``; a stale read misses it
        and is used up."""
        left = self._misses.get((item_id, kind), 0)
        if left:
            self._misses[item_id, kind] = left - 1
            return False
        return True

    def get(self, collection: FakeCollection, body: dict[str, Any]) -> httpx.Response:
        items = [
            {"id": item_id, "metadata": collection.items[item_id][1], "text": None}
            for item_id in body["ids"]
            if item_id in collection.items and self._visible(item_id, "get")
        ]
        return httpx.Response(200, json={"items": items, "seq": collection.seq})

    def delete(self, collection: FakeCollection, body: dict[str, Any]) -> httpx.Response:
        deleted = [item_id for item_id in body["ids"] if item_id in collection.items]
        if not self.keep_deleted:
            for item_id in deleted:
                del collection.items[item_id]
        collection.seq += 1
        return httpx.Response(200, json={"seq": collection.seq, "deleted": len(deleted)})

    def search(self, body: dict[str, Any]) -> httpx.Response:
        self.searches += 1
        if self.fail_searches or (
            self.search_error_every and self.searches % self.search_error_every == 0
        ):
            return _error(500, "internal")
        collection = self.collections.get(body["collection"])
        if collection is None:
            return _error(404, "not_found")
        query = np.asarray(body["query"]["vector"], dtype=np.float32)
        ids = list(collection.items)
        if not ids:
            return httpx.Response(200, json={"results": []})
        matrix = np.stack([collection.items[item_id][0] for item_id in ids])
        scores = matrix @ (query / np.linalg.norm(query))
        order = np.argsort(-scores, kind="stable")
        if body["k"] == 1 and not self._visible(ids[order[0]], "search"):
            order = order[1:]  # a stale k=1 search misses the best item only
        results = [{"id": ids[row], "score": float(scores[row])} for row in order[: body["k"]]]
        return httpx.Response(200, json={"results": results, "collection": body["collection"]})

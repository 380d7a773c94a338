"""A fake search service for the load run, served over real HTTP by
:func:`tests.fakes.tiny_http.serve_in_thread`: one "core" answers searches one at a time, and a
full queue gets fast 503s."""

from __future__ import annotations

import asyncio
import json

from tests.fakes.tiny_http import Reply, Request, json_reply


class FakeSearchService:
    """Serves the endpoints the load test reads; a search holds the one "core" for
    ``service_s``; more than ``queue_limit`` waiting searches get a fast 503."""

    def __init__(self, service_s: float = 0.004, queue_limit: int = 8, count: int = 60) -> None:
        self.service_s = service_s
        self.queue_limit = queue_limit
        self.count = count
        self.waiting = 0
        self.searches: list[dict[str, object]] = []
        self._core: asyncio.Lock | None = None

    async def __call__(self, request: Request) -> Reply:
        if request.path == "/readyz":
            return json_reply(200, {"status": "ready"})
        if request.path == "/v1/collections":
            collection = {
                "name": "captions",
                "count": self.count,
                "dim": 8,
                "variant": "toy",
                "bundle": "toy-bundle",
                "bundle_version": "v1",
            }
            return json_reply(200, {"collections": [collection]})
        if request.path == "/v1/variants":
            return json_reply(200, {"variants": [{"name": "toy", "towers": ["text"]}]})
        if request.path != "/v1/search" or request.method != "POST":
            return json_reply(404, {"error": {"code": "not_found"}})
        body = json.loads(request.body)
        self.searches.append(body)
        if self.waiting >= self.queue_limit:
            return json_reply(503, {"error": {"code": "overloaded"}}, headers={"Retry-After": "1"})
        if self._core is None:
            self._core = asyncio.Lock()
        self.waiting += 1
        try:
            async with self._core:
                await asyncio.sleep(self.service_s)
        finally:
            self.waiting -= 1
        results = [
            {"id": f"id{i}", "score": 1.0 - i / 100, "rank": i + 1, "metadata": {"text": "t"}}
            for i in range(int(body["k"]))
        ]
        return json_reply(200, {"results": results, "collection": "captions"})

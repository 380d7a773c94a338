"""Long inputs cut into requests that fit the service's limits, answers kept in order."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from typing import Any

import httpx
import numpy as np
import pytest

import crisscross_client as cc
from crisscross_client import models as m
from crisscross_client.bulk import cut
from tests.conftest import REPO_ROOT

TIMINGS = {"encode": 1.0, "search": 1.0, "total": 2.0}


def _page(query: dict[str, Any]) -> dict[str, Any]:
    return {
        "results": [{"id": json.dumps(query, sort_keys=True)[:60], "score": 1.0, "rank": 1}],
        "collection": "captions",
        "variant": "v",
        "bundle": "b",
        "bundle_version": "1",
        "next_offset": None,
    }


class BulkService:
    """Answers each bulk search with its query as the hit id; a query text 'bad' fails."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.images: list[int] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        searches = json.loads(request.content)["searches"]
        self.sizes.append(len(searches))
        self.images.append(sum("image" in search["query"] for search in searches))
        responses = []
        for search in searches:
            if search["query"].get("text") == "bad":
                error = {"code": "invalid_input", "message": "bad text"}
                responses.append({"status": 422, "error": error})
            else:
                responses.append({"status": 200, "result": _page(search["query"])})
        return httpx.Response(200, json={"responses": responses, "timings_ms": TIMINGS})


def _client(service: Any, limits: cc.ServiceLimits | None = None) -> cc.Client:
    return cc.Client("http://svc", transport=httpx.MockTransport(service), limits=limits)


def test_search_many_cuts_by_the_bulk_limit_and_keeps_the_order() -> None:
    service = BulkService()
    queries = [f"caption {n}" for n in range(600)]
    with _client(service) as client:
        pages = client.search_many(queries, "captions", k=1)
    assert service.sizes == [256, 256, 88]
    assert [page.results[0].id for page in pages] == [
        json.dumps({"text": text}) for text in queries
    ]


def test_search_many_cuts_by_images_and_bytes() -> None:
    service = BulkService()
    limits = cc.ServiceLimits(max_bulk_searches=100, max_images_per_request=3)
    queries: list[Any] = [b"\x89PNG\r\n\x1a\n"] * 7 + ["text"] * 2
    with _client(service, limits) as client:
        assert len(client.search_many(queries, "images")) == 9
    assert service.images == [3, 3, 1]
    assert service.sizes == [3, 3, 3]
    service = BulkService()
    small = cc.ServiceLimits(max_bulk_body_bytes=4096 + 450)
    with _client(service, small) as client:
        client.search_many(["x" * 150] * 5, "captions")
    assert service.sizes == [2, 2, 1]


def test_search_many_raises_a_failed_search_or_returns_it_in_place() -> None:
    with _client(BulkService()) as client:
        with pytest.raises(cc.InvalidInput, match="search 1: bad text") as caught:
            client.search_many(["good", "bad"], "captions")
        assert caught.value.status == 422
        entries = client.search_many(["good", "bad", "fine"], "captions", return_exceptions=True)
    assert isinstance(entries[1], cc.InvalidInput)
    assert [type(entry).__name__ for entry in entries] == [
        "SearchPageResult",
        "InvalidInputError",
        "SearchPageResult",
    ]


def test_search_many_takes_whole_requests_and_an_empty_list() -> None:
    service = BulkService()
    with _client(service) as client:
        assert client.search_many([], "captions") == []
        request = cc.SearchRequest(collection="images", query=m.TextQuery(text="t"), k=3)
        vector = np.array([0.5, 0.5], dtype=np.float32)
        client.search_many([request, ("captions", "c1"), [0.5, 0.5], vector], "captions")
    assert service.sizes == [4]


def test_search_many_sends_the_levers_with_every_query_input() -> None:
    bodies: list[dict[str, Any]] = []

    def service(request: httpx.Request) -> httpx.Response:
        bodies.extend(json.loads(request.content)["searches"])
        return BulkService()(request)

    whole = m.SearchRequest(collection="captions", query=m.TextQuery(text="as is"))
    levers: dict[str, Any] = {
        "mode": "hybrid",
        "fusion": {"method": "rrf", "k": 10},
        "window": 50,
        "rerank": {"by": "exact"},
        "search_params": {"nprobe": 8},
    }
    with _client(service) as client:
        assert len(client.search_many(["a", "b", whole], "captions", k=3, **levers)) == 3

    async def run_async() -> None:
        async with cc.AsyncClient("http://svc", transport=httpx.MockTransport(service)) as c:
            await c.search_many(["c"], "captions", mode="lexical", lexical={"field": "text"})

    asyncio.run(run_async())
    for body in bodies[:2]:
        assert {key: body[key] for key in levers} == levers
    assert set(bodies[2]) == {"collection", "query"}  # a whole request is sent as it is
    assert (bodies[3]["mode"], bodies[3]["lexical"]) == ("lexical", {"field": "text"})


def test_a_short_bulk_answer_is_a_bad_response() -> None:
    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"responses": [], "timings_ms": TIMINGS})

    with _client(handler) as client, pytest.raises(cc.BadResponse, match="asked 1"):
        client.search_many(["a"], "captions")


def test_async_search_many_matches_the_sync_one() -> None:
    service = BulkService()
    queries = [f"q{n}" for n in range(300)]

    async def scenario() -> list[Any]:
        async with cc.AsyncClient("http://svc", transport=httpx.MockTransport(service)) as c:
            return await c.search_many(queries, "captions")

    pages = asyncio.run(scenario())
    assert service.sizes == [256, 44]
    assert pages[299].results[0].id == json.dumps({"text": "q299"})


def test_embed_score_upsert_delete_and_get_are_cut_and_merged() -> None:
    seen: dict[str, list[int]] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        path = request.url.path
        if path == "/v1/embed":
            seen.setdefault("embed", []).append(len(body["texts"]))
            vectors = [[float(len(text)), 0.0] for text in body["texts"]]
            return httpx.Response(200, json={"embeddings": vectors, "dim": 2, "variant": "v"})
        if path == "/v1/score":
            seen.setdefault("score", []).append(len(body["pairs"]))
            scores = [float(len(pair["left"]["text"])) for pair in body["pairs"]]
            answer = {"scores": scores, "variant": "v", "bundle_version": None}
            return httpx.Response(200, json={**answer, "timings_ms": TIMINGS})
        if path.endswith("/items"):
            seen.setdefault("upsert", []).append(len(body["items"]))
            return httpx.Response(
                200, json={"seq": len(seen["upsert"]), "upserted": len(body["items"])}
            )
        if path.endswith("/delete"):
            seen.setdefault("delete", []).append(len(body["ids"]))
            return httpx.Response(200, json={"seq": 9, "deleted": len(body["ids"])})
        seen.setdefault("get", []).append(len(body["ids"]))
        items = [{"id": id, "metadata": {}} for id in body["ids"]]
        return httpx.Response(200, json={"items": items, "seq": 9})

    with _client(handler) as client:
        texts = ["x" * (n % 7 + 1) for n in range(600)]
        embedded = client.embed_texts(texts * 8)
        assert [vector[0] for vector in embedded.embeddings] == [float(len(t)) for t in texts * 8]
        scores = client.score([(text, "other") for text in texts[:2050]] * 1, variant="v")
        assert scores.scores == [float(len(t)) for t in texts]
        written = client.upsert("n", [{"id": str(n), "vector": [1.0]} for n in range(2500)])
        assert (written.upserted, written.seq) == (2500, 3)
        assert client.delete_items("n", ids=[str(n) for n in range(1001)]).deleted == 1001
        assert len(client.get_items("n", [str(n) for n in range(1500)]).items) == 1500
    assert seen == {
        "embed": [2048, 2048, 704],
        "score": [600],
        "upsert": [1000, 1000, 500],
        "delete": [1000, 1],
        "get": [1000, 500],
    }


def test_limits_are_read_from_the_openapi_document() -> None:
    document = {
        "components": {
            "schemas": {
                "BulkSearchRequest": {"properties": {"searches": {"maxItems": 16}}},
                "EmbedTexts": {"properties": {"texts": {"maxItems": 8}}},
                "UpsertRequest": {"properties": {"items": {"maxItems": 50}}},
            }
        }
    }
    limits = cc.ServiceLimits.from_openapi(document)
    assert (limits.max_bulk_searches, limits.max_embed_inputs, limits.max_write_items) == (
        16,
        8,
        50,
    )
    assert limits.max_score_pairs == cc.ServiceLimits().max_score_pairs

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/openapi.json"
        return httpx.Response(200, json=document)

    with _client(handler) as client:
        assert client.load_limits().max_bulk_searches == 16
        assert client.limits.max_bulk_searches == 16


def test_the_defaults_are_the_documented_limits() -> None:
    document = json.loads((REPO_ROOT / "docs" / "openapi.json").read_text())
    assert cc.ServiceLimits.from_openapi(document) == cc.ServiceLimits()


def test_cut_keeps_an_oversized_item_alone() -> None:
    runs = list(cut(["a", "b" * 10_000, "c"], max_count=10, max_bytes=5000, size=len))
    assert [len(run) for run in runs] == [1, 1, 1]
    assert list(cut([], max_count=3)) == []


# --- bulk upsert: batches, progress, parallelism, a failed batch -----------------------------


class UpsertService:
    """Answers upserts, recording each batch's ids; ``fail`` (first ids of batches) answers
    422, ``delay_s`` delays the others, ``barrier`` (sync) makes the first batches meet."""

    def __init__(
        self,
        fail: frozenset[str] = frozenset(),
        delay_s: float = 0.0,
        barrier: threading.Barrier | None = None,
    ) -> None:
        self.fail = fail
        self.delay_s = delay_s
        self.barrier = barrier
        self.batches: list[list[str]] = []
        self.timeouts: list[float] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.arrivals = 0

    def answer(self, request: httpx.Request) -> httpx.Response:
        ids = [item["id"] for item in json.loads(request.content)["items"]]
        with self._lock:
            self.batches.append(ids)
            self.timeouts.append(request.extensions["timeout"]["read"])
            seq = len(self.batches)
        if ids and ids[0] in self.fail:
            error = {"code": "invalid_input", "message": "bad item", "request_id": "r-9"}
            return httpx.Response(422, json={"error": error})
        return httpx.Response(200, json={"seq": seq, "upserted": len(ids)})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            arrival = self.arrivals
            self.arrivals += 1
        try:
            if self.barrier is not None and arrival < self.barrier.parties:
                self.barrier.wait(timeout=10.0)
            answer = self.answer(request)
            if answer.status_code == 200:
                time.sleep(self.delay_s)
            return answer
        finally:
            with self._lock:
                self.in_flight -= 1


def _items(count: int) -> list[dict[str, Any]]:
    return [{"id": f"i{n:04d}", "vector": [1.0, 0.0]} for n in range(count)]


def test_upsert_cuts_by_batch_size_and_reports_progress() -> None:
    service = UpsertService()
    progress: list[tuple[int, int]] = []
    with _client(service) as client:
        written = client.upsert(
            "notes", _items(950), batch_size=400, on_progress=lambda *p: progress.append(p)
        )
    assert [len(batch) for batch in service.batches] == [400, 400, 150]
    assert progress == [(400, 950), (800, 950), (950, 950)]
    assert (written.upserted, written.seq) == (950, 3)


def test_upsert_cuts_by_images_per_request() -> None:
    service = UpsertService()
    items = [{"id": f"p{n}", "image": b"\x89PNG\r\n\x1a\nxx"} for n in range(40)]
    with _client(service) as client:
        assert client.upsert("notes", items).upserted == 40
    assert [len(batch) for batch in service.batches] == [32, 8]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 1001}, "max_write_items"),
        ({"parallelism": 0}, "parallelism"),
        ({"parallelism": 11}, "max_connections=10"),
    ],
)
def test_upsert_refuses_options_outside_the_limits(kwargs: dict[str, Any], message: str) -> None:
    service = UpsertService()
    with _client(service) as client, pytest.raises(ValueError, match=message):
        client.upsert("notes", _items(3), **kwargs)
    assert service.batches == []


def test_a_parallel_upsert_runs_batches_side_by_side_in_threads() -> None:
    service = UpsertService(delay_s=0.01, barrier=threading.Barrier(4))
    progress: list[tuple[int, int, int]] = []
    items = _items(1000)

    def report(done: int, total: int) -> None:
        progress.append((done, total, threading.get_ident()))

    with _client(service) as client:
        written = client.upsert(
            "notes", items, batch_size=100, parallelism=4, on_progress=report, timeout=3.0
        )
        assert client.last_response is not None
        assert client.last_response.status == 200
    assert service.most_in_flight == 4  # the first four met at the barrier
    assert sorted(id for batch in service.batches for id in batch) == [i["id"] for i in items]
    assert [done for done, _, _ in progress] == list(range(100, 1001, 100))
    assert {(total, thread) for _, total, thread in progress} == {(1000, threading.get_ident())}
    assert (written.upserted, written.seq) == (1000, 10)
    assert set(service.timeouts) == {3.0}


def test_a_parallel_upsert_runs_batches_side_by_side_in_tasks() -> None:
    in_flight = most = 0
    sent: list[int] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        count = len(json.loads(request.content)["items"])
        sent.append(count)
        return httpx.Response(200, json={"seq": len(sent), "upserted": count})

    progress: list[tuple[int, int]] = []

    async def scenario() -> m.UpsertResponse:
        async with cc.AsyncClient("http://svc", transport=httpx.MockTransport(handler)) as c:
            return await c.upsert(
                "notes",
                _items(950),
                batch_size=100,
                parallelism=3,
                on_progress=lambda *p: progress.append(p),
            )

    written = asyncio.run(scenario())
    assert most == 3
    assert sorted(sent) == [50] + [100] * 9
    assert [done for done, _ in progress][-1] == 950
    assert all(a < b for (a, _), (b, _) in itertools.pairwise(progress))
    assert written.upserted == 950


def test_a_failed_batch_says_how_many_items_were_acknowledged() -> None:
    service = UpsertService(fail=frozenset({"i0200"}))
    progress: list[tuple[int, int]] = []
    with _client(service) as client, pytest.raises(cc.UpsertError) as failed:
        client.upsert(
            "notes", _items(500), batch_size=100, on_progress=lambda *p: progress.append(p)
        )
    error = failed.value
    assert (error.acknowledged, error.total) == (200, 500)
    assert error.pending_ids == [f"i{n:04d}" for n in range(200, 500)]
    assert isinstance(error.error, cc.InvalidInput)
    assert error.__cause__ is error.error
    assert (error.status, error.code, error.request_id) == (422, "invalid_input", "r-9")
    assert "after 200 of 500 items were acknowledged" in str(error)
    assert isinstance(error, cc.CrisscrossError)
    assert len(service.batches) == 3  # none after the failed one
    assert progress == [(100, 500), (200, 500)]


def test_a_failed_parallel_batch_stops_new_ones_and_counts_those_in_flight() -> None:
    # Batch 1 fails at once; batches 0 and 2, in flight beside it, answer later and count.
    service = UpsertService(fail=frozenset({"i0010"}), delay_s=0.3)
    with _client(service) as client, pytest.raises(cc.UpsertError) as failed:
        client.upsert("notes", _items(100), batch_size=10, parallelism=3)
    assert len(service.batches) == 3
    assert failed.value.acknowledged == 20
    assert failed.value.pending_ids == [f"i{n:04d}" for n in range(10, 20)] + [
        f"i{n:04d}" for n in range(30, 100)
    ]


def test_a_failed_parallel_batch_of_the_async_client() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        ids = [item["id"] for item in json.loads(request.content)["items"]]
        if ids[0] == "i0010":
            return httpx.Response(404, json={"error": {"code": "not_found", "message": "gone"}})
        await asyncio.sleep(0.2)
        return httpx.Response(200, json={"seq": 1, "upserted": len(ids)})

    async def scenario() -> None:
        async with cc.AsyncClient("http://svc", transport=httpx.MockTransport(handler)) as c:
            await c.upsert("notes", _items(100), batch_size=10, parallelism=3)

    with pytest.raises(cc.UpsertError) as failed:
        asyncio.run(scenario())
    assert failed.value.acknowledged == 20
    assert isinstance(failed.value.error, cc.NotFound)


def test_a_progress_callback_that_raises_ends_the_upsert_with_its_error() -> None:
    service = UpsertService()

    def stop(done: int, total: int) -> None:
        raise KeyError(f"stop at {done}/{total}")

    with _client(service) as client, pytest.raises(KeyError, match="stop at 100/300"):
        client.upsert("notes", _items(300), batch_size=100, on_progress=stop)
    assert len(service.batches) == 1

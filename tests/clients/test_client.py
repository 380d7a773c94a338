"""The sync and async clients against httpx.MockTransport: what each method sends, how
answers and errors are read, the key, the last answer's record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

import crisscross_client as cc
from crisscross_client import models as m

Handler = Callable[[httpx.Request], httpx.Response]

SEARCH_ANSWER: dict[str, Any] = {
    "results": [
        {"id": "c2", "score": 0.9, "rank": 1, "metadata": {"text": "a dog", "image_id": 7}},
        {"id": "c3", "score": 0.8, "rank": 2, "metadata": None},
    ],
    "collection": "coco-captions:captions",
    "variant": "minilm",
    "bundle": "coco-captions",
    "bundle_version": "v1",
    "next_offset": 2,
    "timings_ms": {"encode": 1.0, "search": 0.5, "total": 2.0},
}
LIVE_INFO: dict[str, Any] = {
    "name": "notes",
    "dim": 4,
    "variant": None,
    "fields": {"kind": "string"},
    "count": 0,
    "seq": 0,
    "rows": 0,
    "base_count": 0,
    "base_version": None,
    "index": "Flat",
    "log_bytes": 0,
    "created": "2026-11-28T06:00:00Z",
}


def _error(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    error = {"code": code, "message": f"{code} happened", "request_id": "r-1"}
    error |= {"type": "invalid_request_error", "param": "query.text"}
    return httpx.Response(status, json={"error": error}, headers=headers)


class Recorder:
    """A handler answering from a table of (method, path) -> answer, recording requests."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.raw_path.decode().partition("?")[0]
        answer = self.answers[(request.method, path)]
        if isinstance(answer, httpx.Response):
            return answer
        return httpx.Response(200, json=answer)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


def _sync(handler: Handler, **kwargs: Any) -> cc.Client:
    return cc.Client("http://svc", transport=httpx.MockTransport(handler), **kwargs)


def test_search_sends_the_documented_body_with_the_key_and_reads_the_answer() -> None:
    recorder = Recorder({("POST", "/v1/search"): SEARCH_ANSWER})
    with _sync(recorder, api_key="secret") as client:
        answer = client.search(
            collection="captions",
            text="a dog",
            k=2,
            filter={"field": "image_id", "in": [7, 8]},
            variant="minilm",
            exclude=["c1"],
            search_params={"exact": True},
        )
    request = recorder.requests[0]
    assert request.headers["authorization"] == "Bearer secret"
    assert recorder.body() == {
        "collection": "captions",
        "query": {"text": "a dog"},
        "k": 2,
        "variant": "minilm",
        "exclude": ["c1"],
        "filter": {"field": "image_id", "in": [7, 8]},
        "search_params": {"exact": True},
    }
    assert [hit.id for hit in answer.results] == ["c2", "c3"]
    assert answer.results[0].text == "a dog"
    assert answer.results[1].text is None
    assert answer.next_offset == 2
    assert answer.timings_ms.total == 2.0


@pytest.mark.parametrize(
    ("kwargs", "query"),
    [
        ({"vector": [1, 0.5]}, {"vector": [1.0, 0.5]}),
        ({"item": "c9"}, {"item": {"collection": "captions", "id": "c9"}}),
        ({"item": ("images", "i1")}, {"item": {"collection": "images", "id": "i1"}}),
        ({"image": b"\x89PNG\r\n\x1a\nxx"}, {"image": "iVBORw0KGgp4eA=="}),
        ({"query": {"text": "t"}}, {"text": "t"}),
    ],
)
def test_each_query_kind(kwargs: dict[str, Any], query: dict[str, Any]) -> None:
    recorder = Recorder({("POST", "/v1/search"): SEARCH_ANSWER})
    with _sync(recorder) as client:
        client.search("captions", **kwargs)
    assert recorder.body()["query"] == query
    assert "authorization" not in recorder.requests[0].headers


def test_a_search_names_exactly_one_query() -> None:
    with _sync(Recorder({})) as client, pytest.raises(ValueError, match="exactly one"):
        client.search("captions", text="a", vector=[1.0])


def test_filter_models_serialise_under_the_wire_names() -> None:
    recorder = Recorder({("POST", "/v1/search"): SEARCH_ANSWER})
    wanted = m.AllOf(
        and_=[
            m.FieldTest(field="kind", in_=["a", "b"]),
            m.NoneOf(not_=m.FieldTest(field="n", range=m.Range(gte=1))),
        ]
    )
    with _sync(recorder) as client:
        client.search("captions", text="x", filter=wanted)
    assert recorder.body()["filter"] == {
        "and": [{"field": "kind", "in": ["a", "b"]}, {"not": {"field": "n", "range": {"gte": 1}}}]
    }


def test_search_sends_the_levers_and_reads_the_mode() -> None:
    answer = {**SEARCH_ANSWER, "mode": "hybrid"}
    recorder = Recorder({("POST", "/v1/search"): answer})
    with _sync(recorder) as client:
        found = client.search(
            "scenes:images",
            text="a red heart",
            k=5,
            mode="hybrid",
            lexical={"field": "captions"},
            fusion={"method": "weighted", "alpha": 0.7},
            window=200,
            rerank={"by": "variant", "variant": "scenes-dual-encoder"},
        )
        assert found.mode == "hybrid"
        client.search(
            "captions",
            text="a dog",
            mode="hybrid",
            lexical=m.LexicalOptions(text="dog frisbee"),
            fusion=m.RrfFusion(method="rrf", k=60),
            rerank=m.ExactRerank(by="exact"),
        )
        client.search("captions", text="a dog")
    assert recorder.body(0) == {
        "collection": "scenes:images",
        "query": {"text": "a red heart"},
        "k": 5,
        "mode": "hybrid",
        "lexical": {"field": "captions"},
        "fusion": {"method": "weighted", "alpha": 0.7},
        "window": 200,
        "rerank": {"by": "variant", "variant": "scenes-dual-encoder"},
    }
    second = recorder.body(1)
    assert (second["lexical"], second["fusion"], second["rerank"]) == (
        {"text": "dog frisbee"},
        {"method": "rrf", "k": 60},
        {"by": "exact"},
    )
    # Unset levers are left out: the service's defaults (dense), as before they existed.
    assert set(recorder.body(2)) == {"collection", "query", "k"}
    assert m.SearchResponse.model_validate(SEARCH_ANSWER).mode is None  # an older service's


@pytest.mark.parametrize(
    "levers",
    [
        {"mode": "bm25"},
        {"fusion": {"method": "borda"}},
        {"fusion": {"method": "weighted", "alpha": 1.5}},
        {"fusion": {"method": "rrf", "k": 0}},
        {"fusion": {"k": 60}},
        {"window": 0},
        {"rerank": {"by": "variant"}},
        {"rerank": {"by": "exact", "variant": "x"}},
        {"lexical": {"keywords": "dog"}},
    ],
)
def test_levers_the_api_does_not_take_fail_before_sending(levers: dict[str, Any]) -> None:
    recorder = Recorder({})
    with _sync(recorder) as client, pytest.raises(ValidationError):
        client.search("captions", text="a dog", **levers)
    assert recorder.requests == []


def test_lever_models_read_their_wire_shapes() -> None:
    request = m.SearchRequest.model_validate(
        {
            "collection": "captions",
            "query": {"text": "a dog"},
            "mode": "lexical",
            "fusion": {"method": "rrf"},
            "rerank": {"by": "variant", "variant": "v"},
        }
    )
    assert isinstance(request.fusion, m.RrfFusion)
    assert isinstance(request.rerank, m.VariantRerank)
    assert request.body()["fusion"] == {"method": "rrf"}  # k left to the service (60)
    page = m.SearchPageResult.model_validate(
        {**SEARCH_ANSWER, "mode": "lexical", "timings_ms": None}
    )
    assert page.mode == "lexical"


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (401, "unauthorized", cc.Unauthorized),
        (403, "forbidden", cc.Forbidden),
        (404, "not_found", cc.NotFound),
        (409, "ambiguous_name", cc.Conflict),
        (413, "payload_too_large", cc.PayloadTooLarge),
        (415, "unsupported_media_type", cc.UnsupportedMediaType),
        (422, "invalid_input", cc.InvalidInput),
        (503, "overloaded", cc.Overloaded),
        (503, "not_ready", cc.NotReady),
        (503, "write_failed", cc.ServiceUnavailable),
        (500, "internal", cc.ServerError),
        (418, "teapot", cc.BadRequest),
    ],
)
def test_error_answers_map_to_their_exception(status: int, code: str, kind: type) -> None:
    recorder = Recorder({("GET", "/v1/variants"): _error(status, code)})
    with _sync(recorder, max_retries=0) as client, pytest.raises(kind) as caught:
        client.variants()
    error = caught.value
    assert isinstance(error, cc.CrisscrossError)
    assert (error.status, error.code, error.request_id) == (status, code, "r-1")
    assert error.message == f"{code} happened"
    assert (error.param, error.error_type) == ("query.text", "invalid_request_error")
    assert m.ErrorResponse.model_validate(_error(status, code).json()).error.param == "query.text"
    assert "/v1/variants" in str(error)
    assert issubclass(cc.InvalidInput, cc.BadRequest)
    assert issubclass(cc.Overloaded, cc.ServiceUnavailable)


def test_a_non_json_error_keeps_its_text_and_header_request_id() -> None:
    answer = httpx.Response(502, text="bad gateway", headers={"x-request-id": "h-9"})
    recorder = Recorder({("GET", "/healthz"): answer})
    with _sync(recorder, max_retries=0) as client, pytest.raises(cc.ServerError) as caught:
        client.health()
    assert caught.value.message == "bad gateway"
    assert caught.value.request_id == "h-9"
    assert caught.value.code is None


def test_an_unreadable_success_is_a_bad_response() -> None:
    unreadable = Recorder({("GET", "/v1/collections"): {"nope": 1}})
    with _sync(unreadable) as client, pytest.raises(cc.BadResponseError, match="Collections"):
        client.collections()
    not_json = Recorder({("GET", "/readyz"): httpx.Response(200, text="ok")})
    with _sync(not_json) as client, pytest.raises(cc.BadResponseError, match="expected JSON"):
        client.ready()


def test_last_response_holds_headers_latency_and_attempts() -> None:
    headers = {"x-request-id": "r-7", "x-timing-total-ms": "3.5"}
    answer = httpx.Response(200, json={"status": "ok"}, headers=headers)
    with _sync(Recorder({("GET", "/healthz"): answer})) as client:
        assert client.last_response is None
        assert client.health().status == "ok"
        info = client.last_response
    assert info is not None
    assert info.status == 200
    assert info.request_id == "r-7"
    assert info.headers["x-timing-total-ms"] == "3.5"
    assert info.attempts == 1
    assert info.retries == 0
    assert info.elapsed_s >= 0
    assert info.url == "http://svc/healthz"


def test_async_last_response_is_per_task() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"status": "ok"}, headers={"x-request-id": request.url.path}
        )

    async def scenario() -> list[str | None]:
        async with cc.AsyncClient("http://svc", transport=httpx.MockTransport(handler)) as client:

            async def probe(call: Callable[[], Any]) -> str | None:
                await call()
                await asyncio.sleep(0)
                info = client.last_response
                return None if info is None else info.request_id

            return list(await asyncio.gather(probe(client.health), probe(client.ready)))

    assert asyncio.run(scenario()) == ["/healthz", "/readyz"]


def test_write_calls_send_their_documented_requests() -> None:
    recorder = Recorder(
        {
            ("POST", "/v1/collections"): httpx.Response(201, json=LIVE_INFO),
            ("GET", "/v1/collections/notes"): LIVE_INFO,
            ("POST", "/v1/collections/notes/items"): {"seq": 1, "upserted": 2},
            ("POST", "/v1/collections/notes/items/get"): {
                "items": [{"id": "a", "metadata": {"kind": "x"}, "text": "hello"}],
                "seq": 1,
            },
            ("PATCH", "/v1/collections/notes/items/a%2Fb"): {"seq": 2},
            ("POST", "/v1/collections/notes/items/delete"): {"seq": 3, "deleted": 1},
            ("POST", "/v1/collections/notes/compact"): {
                "seq": 3,
                "rows_before": 2,
                "rows_after": 1,
                "log_bytes_before": 10,
                "log_bytes_after": 0,
                "seconds": 0.1,
                "base_version": "v",
                "replaced_version": None,
                "index_factory": "Flat",
                "recall_at_10": None,
            },
            ("POST", "/v1/collections/notes/snapshots"): {
                "seq": 3,
                "count": 1,
                "version": "20261128T060000000000Z",
                "seconds": 0.1,
            },
            ("DELETE", "/v1/collections/notes"): {"dropped": "notes"},
            ("POST", "/v1/admin/reload"): {"bundles": [], "load_ms": 1.0, "workers": 1},
        }
    )
    with _sync(recorder, api_key="admin") as client:
        created = client.create_collection("notes", dim=4, fields={"kind": "string"})
        assert created.name == "notes"
        assert recorder.body() == {"name": "notes", "dim": 4, "fields": {"kind": "string"}}
        assert client.get_collection("notes").dim == 4
        upserted = client.upsert(
            "notes",
            [
                {"id": "a", "vector": [1, 0, 0, 0], "metadata": {"kind": "x"}},
                m.WriteItem(id="b", vector_base64=cc.pack_vector([0.0, 1.0, 0.0, 0.0])),
            ],
        )
        assert upserted.upserted == 2
        assert recorder.body() == {
            "items": [
                {"id": "a", "vector": [1.0, 0.0, 0.0, 0.0], "metadata": {"kind": "x"}},
                {"id": "b", "vector_base64": "AAAAAAAAgD8AAAAAAAAAAA=="},
            ]
        }
        got = client.get_items("notes", ["a", "zz"], include_vectors=False)
        assert got.items[0].text == "hello"
        assert recorder.body() == {"ids": ["a", "zz"], "include_vectors": False}
        assert client.patch_item("notes", "a/b", {"kind": None}, merge=True).seq == 2
        assert recorder.body() == {"metadata": {"kind": None}, "merge": True}
        assert client.delete_items("notes", ids=["a"]).deleted == 1
        assert recorder.body() == {"ids": ["a"]}
        client.delete_items("notes", filter={"field": "kind", "eq": "x"})
        assert recorder.body() == {"filter": {"field": "kind", "eq": "x"}}
        assert client.compact("notes").rows_after == 1
        assert client.snapshot("notes").count == 1
        assert client.delete_collection("notes").dropped == "notes"
        assert client.reload(bundle="scenes").workers == 1
        assert recorder.body() == {"bundle": "scenes"}
    with _sync(recorder) as client, pytest.raises(ValueError, match="exactly one"):
        client.delete_items("notes")


def test_item_thumbnail_score_and_embed() -> None:
    recorder = Recorder(
        {
            ("GET", "/v1/items/captions/COCO:1"): {
                "collection": "captions",
                "id": "COCO:1",
                "row": 3,
                "metadata": {"text": "t"},
            },
            ("GET", "/v1/thumbnails/images/i%201.png"): httpx.Response(
                200, content=b"\xff\xd8\xffjpeg", headers={"content-type": "image/jpeg"}
            ),
            ("POST", "/v1/score"): {
                "scores": [0.5],
                "variant": "v",
                "bundle_version": None,
                "timings_ms": {"encode": 1, "search": 0, "total": 1},
            },
            ("POST", "/v1/embed"): {"embeddings": [[0.6, 0.8]], "dim": 2, "variant": "v"},
        }
    )
    with _sync(recorder) as client:
        assert client.item("captions", "COCO:1", variant="v").row == 3
        assert recorder.requests[-1].url.params["variant"] == "v"
        assert client.thumbnail("images", "i 1.png") == b"\xff\xd8\xffjpeg"
        assert client.score([("a dog", ("captions", "COCO:1"))], variant="v").scores == [0.5]
        assert recorder.body() == {
            "pairs": [
                {
                    "left": {"text": "a dog"},
                    "right": {"item": {"collection": "captions", "id": "COCO:1"}},
                }
            ],
            "variant": "v",
        }
        assert client.embed_texts(["a dog"]).embeddings == [[0.6, 0.8]]
        assert recorder.body() == {"texts": ["a dog"]}
        with pytest.raises(TypeError, match="list of strings"):
            client.embed_texts("a dog")


def test_search_upload_sends_a_multipart_form() -> None:
    recorder = Recorder({("POST", "/v1/search/upload"): SEARCH_ANSWER})
    with _sync(recorder) as client:
        client.search_upload(
            b"\x89PNG\r\n\x1a\nxx", "images", k=3, exclude=["a", "b"], search_params={"nprobe": 4}
        )
    request = recorder.requests[0]
    assert request.headers["content-type"].startswith("multipart/form-data")
    content = request.content
    assert b'name="file"; filename="image.png"' in content
    assert b"Content-Type: image/png" in content
    assert b'name="collection"\r\n\r\nimages' in content
    assert b'name="k"\r\n\r\n3' in content
    assert content.count(b'name="exclude"') == 2
    assert b'{"nprobe": 4}' in content


def test_embeddings_and_models_in_the_openai_shape() -> None:
    packed = cc.pack_vector([0.5, -0.5])
    recorder = Recorder(
        {
            ("POST", "/v1/embeddings"): {
                "object": "list",
                "data": [
                    {"object": "embedding", "index": 1, "embedding": packed},
                    {"object": "embedding", "index": 0, "embedding": packed},
                ],
                "model": "minilm",
                "usage": {"prompt_tokens": 4, "total_tokens": 4},
            },
            ("GET", "/v1/models"): {
                "object": "list",
                "data": [
                    {
                        "id": "minilm",
                        "object": "model",
                        "created": 1,
                        "owned_by": "crisscross",
                        "dim": 384,
                        "towers": ["text"],
                        "matryoshka_dims": [],
                        "max_tokens": 256,
                        "max_inputs": 2048,
                        "max_image_inputs": None,
                    }
                ],
            },
        }
    )
    with _sync(recorder) as client:
        answer = client.embeddings(["a", "b"], "minilm", encoding_format="base64", dimensions=2)
        assert recorder.body() == {
            "model": "minilm",
            "input": ["a", "b"],
            "encoding_format": "base64",
            "dimensions": 2,
        }
        assert answer.embeddings == [[0.5, -0.5], [0.5, -0.5]]
        client.embeddings([b"\x89PNG\r\n\x1a\n"], "scenes", modality="image")
        assert recorder.body()["input"] == ["iVBORw0KGgo="]
        assert recorder.body()["modality"] == "image"
        (model,) = client.models().data
        assert (model.id, model.max_inputs, model.max_image_inputs) == ("minilm", 2048, None)


def test_the_async_client_has_the_same_methods() -> None:
    sync_methods = {name for name in dir(cc.Client) if not name.startswith("_")}
    async_methods = {name for name in dir(cc.AsyncClient) if not name.startswith("_")}
    assert sync_methods <= async_methods
    assert async_methods - sync_methods == {"aclose"}


def test_async_client_round_trip() -> None:
    recorder = Recorder(
        {
            ("POST", "/v1/search"): SEARCH_ANSWER,
            ("POST", "/v1/collections/notes/items"): {"seq": 1, "upserted": 1},
        }
    )

    async def scenario() -> None:
        async with cc.AsyncClient(
            "http://svc/", api_key="k", transport=httpx.MockTransport(recorder)
        ) as client:
            answer = await client.search(collection="captions", text="a dog", k=2)
            assert answer.results[0].id == "c2"
            await client.search("captions", text="a dog", mode="lexical", rerank={"by": "exact"})
            assert recorder.body()["mode"] == "lexical"
            assert recorder.body()["rerank"] == {"by": "exact"}
            written = await client.upsert("notes", [{"id": "a", "text": "hello"}])
            assert written.upserted == 1
            assert client.base_url == "http://svc"

    asyncio.run(scenario())
    assert recorder.requests[0].headers["authorization"] == "Bearer k"
    assert recorder.body() == {"items": [{"id": "a", "text": "hello"}]}


def test_raw_request_returns_the_answer_and_raises_errors() -> None:
    recorder = Recorder(
        {
            ("GET", "/metrics"): httpx.Response(200, text="# HELP x\n"),
            ("POST", "/v1/collections/x/items"): _error(409, "writes_unavailable"),
        }
    )
    with _sync(recorder) as client:
        assert client.request("GET", "/metrics").text == "# HELP x\n"
        with pytest.raises(cc.Conflict):
            client.request("POST", "/v1/collections/x/items", content=b"{}")

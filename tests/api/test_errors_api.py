"""Every bad request answers its documented 4xx in the one error shape — never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.http.errors import STATUS_OF, ErrorCode, error_kind
from tests.fakes.fake_bundles import caption_id

VALID_QUERY = {"text": "a dog on a couch"}
JSON_HEADERS = {"content-type": "application/json"}


def search_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"query": VALID_QUERY, "collection": "captions", "k": 5}
    body.update(changes)
    return {key: value for key, value in body.items() if value is not _DROP}


_DROP = object()


def vector_body(first: str) -> str:
    """A /v1/search body whose 64-number query vector starts with the raw JSON ``first``."""
    numbers = ", ".join([first] + ["0.5"] * 63)
    return f'{{"query": {{"vector": [{numbers}]}}, "collection": "captions", "k": 5}}'


@dataclass(frozen=True)
class BadRequest:
    code: ErrorCode
    path: str = "/v1/search"
    method: str = "POST"
    json_body: Any = None
    raw_body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    message_part: str = ""


def raw(text: str) -> bytes:
    return text.encode("utf-8")


def chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        yield b" " * min(size, total - sent)
        sent += size


BAD_REQUESTS = {
    "empty text": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"text": ""}),
        message_part="query.text",
    ),
    "whitespace text": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"text": " \n\t "})
    ),
    "text over max_text_chars": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"text": "a" * 2001}),
        message_part="max_text_chars=2000",
    ),
    "text not a string": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"text": 5})
    ),
    "text with a lone surrogate": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog \\ud800"}, "collection": "captions", "k": 5}'),
        message_part="surrogate",
    ),
    "k=0": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=0), message_part="k"),
    "k negative": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=-3)),
    "k=max_k+1": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(k=1001), message_part="max_k=1000"
    ),
    'k="5"': BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k="5")),
    "k=5.5": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=5.5)),
    "k=true": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=True)),
    "k=null": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=None)),
    "k huge": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=10**30)),
    "k=NaN": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog"}, "collection": "captions", "k": NaN}'),
    ),
    "text=Infinity": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": Infinity}, "collection": "captions", "k": 5}'),
    ),
    "NaN in exclude": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog"}, "collection": "captions", "exclude": [NaN]}'),
    ),
    "missing query": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query=_DROP), message_part="query"
    ),
    "empty query": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={}), message_part="exactly one"
    ),
    "both text and item": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(
            query={"text": "dog", "item": {"collection": "captions", "id": caption_id(0)}}
        ),
        message_part="exactly one",
    ),
    "image query on a text-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        json_body=search_body(query={"image": "aGVsbG8="}),
        message_part="has no image tower",
    ),
    "filter on a field the collection lacks": BadRequest(
        ErrorCode.FILTER_NOT_APPLICABLE,
        json_body=search_body(filter={"field": "colour", "eq": "red"}),
        message_part="filter.field: unknown field 'colour'",
    ),
    "missing collection": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(collection=_DROP)
    ),
    "unknown top-level field": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(top_k=5), message_part="top_k"
    ),
    "unknown item field": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"item": {"collection": "captions", "id": "x", "row": 1}}),
    ),
    "exclude not a list": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(exclude=caption_id(0))
    ),
    "exclude over max_exclude": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(exclude=[f"id-{n}" for n in range(1001)]),
        message_part="max_exclude=1000",
    ),
    "unknown collection": BadRequest(
        ErrorCode.NOT_FOUND, json_body=search_body(collection="images"), message_part="images"
    ),
    "nprobe on a flat index": BadRequest(
        ErrorCode.SEARCH_PARAM_NOT_APPLICABLE,
        json_body=search_body(search_params={"nprobe": 4}),
        message_part="nprobe",
    ),
    "unknown variant": BadRequest(
        ErrorCode.NOT_FOUND, json_body=search_body(variant="clip-xxl"), message_part="clip-xxl"
    ),
    "unknown item id": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(query={"item": {"collection": "captions", "id": "COCO:nope"}}),
        message_part="COCO:nope",
    ),
    "unknown item collection": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(query={"item": {"collection": "images", "id": caption_id(0)}}),
    ),
    "item id with a lone surrogate": BadRequest(
        ErrorCode.NOT_FOUND,
        raw_body=raw(
            '{"query": {"item": {"collection": "captions", "id": "x\\udc80"}}, '
            '"collection": "captions"}'
        ),
    ),
    "field name with a lone surrogate": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog"}, "collection": "captions", "\\ud800": 1}'),
    ),
    "invalid JSON": BadRequest(
        ErrorCode.INVALID_INPUT, raw_body=b'{"query": {"text": "dog"', message_part="not valid JSON"
    ),
    "invalid UTF-8": BadRequest(ErrorCode.INVALID_INPUT, raw_body=b'{"query": {"text": "\xff"}}'),
    "JSON array": BadRequest(ErrorCode.INVALID_INPUT, json_body=[search_body()]),
    "JSON string": BadRequest(ErrorCode.INVALID_INPUT, json_body="search"),
    "JSON number": BadRequest(ErrorCode.INVALID_INPUT, raw_body=b"5"),
    "JSON null": BadRequest(ErrorCode.INVALID_INPUT, raw_body=b"null"),
    "bare NaN": BadRequest(ErrorCode.INVALID_INPUT, raw_body=b"NaN"),
    "empty body": BadRequest(ErrorCode.INVALID_INPUT, raw_body=b""),
    "deeply nested JSON": BadRequest(
        ErrorCode.INVALID_INPUT, raw_body=b"[" * 100_000 + b"]" * 100_000
    ),
    "text/plain body": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        raw_body=raw(json.dumps(search_body())),
        headers={"content-type": "text/plain"},
    ),
    "form body": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        raw_body=b"k=5",
        headers={"content-type": "application/x-www-form-urlencoded"},
    ),
    "no content-type": BadRequest(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        raw_body=raw(json.dumps(search_body())),
        headers={"content-type": ""},
    ),
    "body over max_body_bytes": BadRequest(
        ErrorCode.PAYLOAD_TOO_LARGE,
        raw_body=raw(json.dumps(search_body(query={"text": "a" * (1 << 20)}))),
        message_part="max_body_bytes",
    ),
    "wrong method": BadRequest(ErrorCode.METHOD_NOT_ALLOWED, method="GET"),
    "unknown route": BadRequest(ErrorCode.NOT_FOUND, path="/v1/nothing", method="GET"),
    "unknown route with POST": BadRequest(ErrorCode.NOT_FOUND, path="/v2/search"),
    "score: no pairs": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/score", json_body={"pairs": []}
    ),
    "score: too many pairs": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"text": "a"}, "right": {"text": "b"}}] * 1025},
        message_part="max_score_pairs=1024",
    ),
    "score: side with both": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={
            "pairs": [
                {
                    "left": {"text": "a", "item": {"collection": "captions", "id": "x"}},
                    "right": {"text": "b"},
                }
            ]
        },
    ),
    "score: missing right": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/score", json_body={"pairs": [{"left": {"text": "a"}}]}
    ),
    "score: long text": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"text": "a"}, "right": {"text": "b" * 2001}}]},
        message_part="pairs.0.right.text",
    ),
    "score: unknown item": BadRequest(
        ErrorCode.NOT_FOUND,
        path="/v1/score",
        json_body={
            "pairs": [
                {"left": {"text": "a"}, "right": {"item": {"collection": "captions", "id": "x"}}}
            ]
        },
    ),
    "embed: no texts": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/embed", json_body={"texts": []}
    ),
    "embed: too many texts": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"texts": ["a dog"] * 257},
        message_part="max_embed_inputs=256",
    ),
    "embed: blank text": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/embed", json_body={"texts": ["ok", "  "]}
    ),
    "embed: texts is a string": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/embed", json_body={"texts": "a dog"}
    ),
    "embed: unknown variant": BadRequest(
        ErrorCode.NOT_FOUND, path="/v1/embed", json_body={"texts": ["a"], "variant": "nope"}
    ),
    "item: unknown id": BadRequest(
        ErrorCode.NOT_FOUND, path="/v1/items/captions/COCO_val2014:sentid:1", method="GET"
    ),
    "item: unknown collection": BadRequest(
        ErrorCode.NOT_FOUND, path=f"/v1/items/images/{caption_id(0)}", method="GET"
    ),
    "item: unknown variant": BadRequest(
        ErrorCode.NOT_FOUND, path=f"/v1/items/captions/{caption_id(0)}?variant=x", method="GET"
    ),
    "healthz with POST": BadRequest(ErrorCode.METHOD_NOT_ALLOWED, path="/healthz"),
    "k with 5000 digits": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog"}, "collection": "captions", "k": ' + "9" * 5000)
        + b"}",
    ),
    "vector: NaN": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw(vector_body("NaN")),
        message_part="query.vector.0: Input should be a finite number",
    ),
    "vector: Infinity": BadRequest(
        ErrorCode.INVALID_INPUT, raw_body=raw(vector_body("Infinity")), message_part="finite"
    ),
    "vector: -Infinity": BadRequest(
        ErrorCode.INVALID_INPUT, raw_body=raw(vector_body("-Infinity")), message_part="finite"
    ),
    "vector: 1e400 overflows to infinity": BadRequest(
        ErrorCode.INVALID_INPUT, raw_body=raw(vector_body("1e400")), message_part="finite"
    ),
    "vector: wrong dimension": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.5] * 63}),
        # The one served variant's dimension is in the document: a schema error, 422.
        message_part="query.vector: 63 numbers, but every served variant embeds in 64 dimensions",
    ),
    "vector: far too long": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.5] * 50_000}),
        message_part="in 64 dimensions",
    ),
    "vector: zero norm": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.0] * 64}),
        message_part="zero norm",
    ),
    "vector: negative zeros": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [-0.0] * 64}),
        message_part="zero norm",
    ),
    "vector: empty": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"vector": []})
    ),
    "vector: strings": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"vector": ["0.5"] * 64})
    ),
    "vector: booleans": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"vector": [True] * 64})
    ),
    "vector: nulls": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"vector": [None] * 64})
    ),
    "vector: nested": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"vector": [[0.5] * 64]})
    ),
    "vector: an object": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(query={"vector": {"0": 0.5}})
    ),
    "vector and text": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.5] * 64, "text": "dog"}),
        message_part="exactly one",
    ),
    "vector on an unknown variant": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(query={"vector": [0.5] * 64}, variant="nope"),
    ),
    "score: NaN vector side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        raw_body=raw(
            '{"pairs": [{"left": {"text": "a"}, "right": {"vector": [NaN' + ", 0.5" * 63 + "]}}]}"
        ),
        message_part="pairs.0.right.vector.0",
    ),
    "score: short vector side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"vector": [1.0]}, "right": {"text": "b"}}]},
        message_part="pairs.0.left.vector: 1 numbers",
    ),
    "score: zero vector side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"vector": [0.0] * 64}, "right": {"text": "b"}}]},
        message_part="zero norm",
    ),
    "embed: NaN in texts": BadRequest(
        ErrorCode.INVALID_INPUT, path="/v1/embed", raw_body=b'{"texts": [NaN]}'
    ),
    "items: POST": BadRequest(
        ErrorCode.METHOD_NOT_ALLOWED, path=f"/v1/items/captions/{caption_id(0)}"
    ),
    "reload: no admin keys configured": BadRequest(
        ErrorCode.FORBIDDEN, path="/v1/admin/reload", json_body={}
    ),
}


def send(client: TestClient, case: BadRequest) -> Any:
    headers = {"x-request-id": "bad-input-test.1", **case.headers}
    if case.json_body is not None or case.raw_body is not None:
        headers.setdefault("content-type", "application/json")
    if not headers.get("content-type"):
        headers.pop("content-type", None)
    if case.json_body is not None:
        content: bytes | None = json.dumps(case.json_body).encode("utf-8")
    else:
        content = case.raw_body
    return client.request(case.method, case.path, content=content, headers=headers)


@pytest.mark.parametrize("case", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_request_gets_its_documented_error(client: TestClient, case: BadRequest) -> None:
    response = send(client, case)
    assert response.status_code == STATUS_OF[case.code], response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "error": {
            "code": case.code.value,
            "message": response.json()["error"]["message"],
            "request_id": "bad-input-test.1",
            "type": error_kind(case.code),
            "param": response.json()["error"]["param"],
        }
    }
    message = response.json()["error"]["message"]
    assert message
    assert case.message_part in message
    assert response.headers["x-request-id"] == "bad-input-test.1"


def test_errors_never_echo_the_rejected_text(client: TestClient) -> None:
    secret = "my private diary entry " * 10
    response = client.post("/v1/search", json=search_body(query={"text": secret}, k=True))
    assert response.status_code == 422
    assert "diary" not in response.text


def test_wrong_method_names_the_allowed_one(client: TestClient) -> None:
    response = client.get("/v1/search")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_declared_oversize_body_is_refused_before_reading(client: TestClient) -> None:
    response = client.post(
        "/v1/embed", content=b"{}", headers={**JSON_HEADERS, "content-length": str(2 << 20)}
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_undeclared_oversize_body_is_counted_on_the_stream(client: TestClient) -> None:
    # A generator body goes out chunked, with no Content-Length to trust.
    response = client.post("/v1/embed", content=chunks((1 << 20) + 1), headers=JSON_HEADERS)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_body_at_the_limit_is_accepted_by_the_size_check(client: TestClient) -> None:
    body = json.dumps({"texts": ["a dog"]}).encode()
    padded = body + b" " * ((1 << 20) - len(body))
    response = client.post("/v1/embed", content=padded, headers=JSON_HEADERS)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/v1/search", search_body(query={"text": " "}), "query.text: Value error"),
        ("/v1/search", search_body(query={"vector": [1, "x"]}), "query.vector.1: Input should"),
        ("/v1/search", search_body(query={"item": {"collection": "captions"}}), "query.item.id:"),
        ("/v1/embed", {"texts": ["fine", " "]}, "texts.1: Value error"),
        (
            "/v1/score",
            {"pairs": [{"left": {"text": " "}, "right": {"text": "a dog"}}]},
            "pairs.0.left.text: Value error",
        ),
    ],
    ids=["search text", "search vector", "search item", "embed texts", "score side"],
)
def test_a_validation_error_names_the_field_once(
    client: TestClient, path: str, body: dict[str, Any], message: str
) -> None:
    # The query side is a tagged union: its tag must not show up in the location a second time
    # ("query.text.text").
    response = client.post(path, json=body)
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith(message), response.text


def test_an_integral_float_k_is_the_integer_it_spells(client: TestClient) -> None:
    # JSON Schema's "integer" is any number without a fractional part, and the OpenAPI document
    # declares k an integer: 5.0 is accepted as 5 ("5", true and 5.5 are refused above).
    response = client.post("/v1/search", json=search_body(k=5.0))
    assert response.status_code == 200, response.text
    assert len(response.json()["results"]) == 5


def test_json_content_type_with_charset_is_accepted(client: TestClient) -> None:
    response = client.post(
        "/v1/search",
        content=json.dumps(search_body()).encode(),
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200


def test_a_wrong_method_on_a_shared_path_names_every_allowed_one(client: TestClient) -> None:
    assert client.request("OPTIONS", "/v1/collections").headers["allow"] == "GET, POST"
    assert client.request("OPTIONS", "/v1/collections/x").headers["allow"] == "DELETE, GET"
    # The most specific template answers: POST .../items/delete, not PATCH .../items/{id}.
    assert client.request("OPTIONS", "/v1/collections/x/items/delete").headers["allow"] == "POST"

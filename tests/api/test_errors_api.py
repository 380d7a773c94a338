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
    param: str | None = None
    """The request field the error names (OpenAI's ``param``); None where it concerns none."""


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
        param="query.text",
    ),
    "whitespace text": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"text": " \n\t "}),
        param="query.text",
    ),
    "text over max_text_chars": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"text": "a" * 2001}),
        message_part="max_text_chars=2000",
        param="query.text",
    ),
    "text not a string": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"text": 5}),
        param="query.text",
    ),
    "text with a lone surrogate": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog \\ud800"}, "collection": "captions", "k": 5}'),
        message_part="surrogate",
        param="query.text",
    ),
    "k=0": BadRequest(
        ErrorCode.INVALID_INPUT, json_body=search_body(k=0), message_part="k", param="k"
    ),
    "k negative": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=-3), param="k"),
    "k=max_k+1": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(k=1001),
        message_part="max_k=1000",
        param="k",
    ),
    'k="5"': BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k="5"), param="k"),
    "k=5.5": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=5.5), param="k"),
    "k=true": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=True), param="k"),
    "k=null": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=None), param="k"),
    "k huge": BadRequest(ErrorCode.INVALID_INPUT, json_body=search_body(k=10**30), param="k"),
    "k=NaN": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog"}, "collection": "captions", "k": NaN}'),
        param="k",
    ),
    "text=Infinity": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": Infinity}, "collection": "captions", "k": 5}'),
        param="query.text",
    ),
    "NaN in exclude": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw('{"query": {"text": "dog"}, "collection": "captions", "exclude": [NaN]}'),
        param="exclude.0",
    ),
    "missing query": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query=_DROP),
        message_part="query",
        param="query",
    ),
    "empty query": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={}),
        message_part="exactly one",
        param="query",
    ),
    "both text and item": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(
            query={"text": "dog", "item": {"collection": "captions", "id": caption_id(0)}}
        ),
        message_part="exactly one",
        param="query",
    ),
    "image query on a text-only variant": BadRequest(
        ErrorCode.TOWER_MISSING,
        json_body=search_body(query={"image": "aGVsbG8="}),
        message_part="has no image tower",
        param="query.image",
    ),
    "filter on a field the collection lacks": BadRequest(
        ErrorCode.FILTER_NOT_APPLICABLE,
        json_body=search_body(filter={"field": "colour", "eq": "red"}),
        message_part="filter.field: unknown field 'colour'",
        param="filter.field",
    ),
    "filter: an operand of another type than the field's": BadRequest(
        ErrorCode.FILTER_NOT_APPLICABLE,
        json_body=search_body(filter={"field": "sentid", "eq": "one"}),
        message_part="filter.eq: 'one' does not fit field 'sentid', an integer field",
        param="filter.eq",
    ),
    "filter: an unknown field deep in the tree": BadRequest(
        ErrorCode.FILTER_NOT_APPLICABLE,
        json_body=search_body(
            filter={"and": [{"field": "sentid", "exists": True}, {"field": "colour", "eq": "red"}]}
        ),
        message_part="filter.and.1.field: unknown field 'colour'",
        param="filter.and.1.field",
    ),
    "filter: a range on a field without an order": BadRequest(
        ErrorCode.FILTER_NOT_APPLICABLE,
        json_body=search_body(filter={"not": {"field": "text", "range": {"gt": 1}}}),
        message_part="filter.not.range: field 'text' is a string, which has no order",
        param="filter.not.range",
    ),
    "filter: a bound of another type than the field's": BadRequest(
        ErrorCode.FILTER_NOT_APPLICABLE,
        json_body=search_body(filter={"field": "sentid", "range": {"gte": "high"}}),
        message_part="filter.range: 'high' does not fit field 'sentid', an integer field",
        param="filter.range",
    ),
    "filter: a range no value satisfies": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(filter={"field": "sentid", "range": {"gt": 5, "lt": 5}}),
        message_part="filter.range: no value of field 'sentid' can be within these bounds",
        param="filter.range",
    ),
    "filter: an empty range": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(filter={"field": "sentid", "range": {}}),
        message_part="filter.range: give at least one bound: 'gt', 'gte', 'lt' or 'lte'",
        param="filter.range",
    ),
    "filter: two lower bounds under and": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(filter={"and": [{"field": "sentid", "range": {"gt": 1, "gte": 2}}]}),
        message_part="filter.and.0.range: give at most one of 'gt' and 'gte'",
        param="filter.and.0.range",
    ),
    "filter: a list as an operand": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(filter={"field": "sentid", "eq": [1]}),
        message_part="filter.eq: Input should be a valid string",
        param="filter.eq",
    ),
    "filter: an unknown key in a field test": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(filter={"field": "sentid", "eq": 1, "ne": 2}),
        message_part="filter.ne: Extra inputs are not permitted",
        param="filter.ne",
    ),
    "filter: over max_filter_conditions": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(filter={"or": [{"field": "sentid", "eq": n} for n in range(64)]}),
        message_part="filter: 65 conditions, more than max_filter_conditions=64",
        param="filter",
    ),
    "offset over max_offset": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(offset=10**6),
        message_part="offset: 1000000 is more than max_offset=",
        param="offset",
    ),
    "nprobe over max_nprobe": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(search_params={"nprobe": 5000}),
        message_part="search_params.nprobe: 5000 is more than max_nprobe=1024",
        param="search_params.nprobe",
    ),
    "missing collection": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(collection=_DROP),
        param="collection",
    ),
    "unknown top-level field": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(top_k=5),
        message_part="top_k",
        param="top_k",
    ),
    "unknown item field": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"item": {"collection": "captions", "id": "x", "row": 1}}),
        param="query.item.row",
    ),
    "exclude not a list": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(exclude=caption_id(0)),
        param="exclude",
    ),
    "exclude over max_exclude": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(exclude=[f"id-{n}" for n in range(1001)]),
        message_part="max_exclude=1000",
        param="exclude",
    ),
    "unknown collection": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(collection="images"),
        message_part="images",
        param="collection",
    ),
    "nprobe on a flat index": BadRequest(
        ErrorCode.SEARCH_PARAM_NOT_APPLICABLE,
        json_body=search_body(search_params={"nprobe": 4}),
        message_part="nprobe",
        param="search_params.nprobe",
    ),
    "unknown variant": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(variant="clip-xxl"),
        message_part="clip-xxl",
        param="variant",
    ),
    "unknown item id": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(query={"item": {"collection": "captions", "id": "COCO:nope"}}),
        message_part="COCO:nope",
        param="query.item.id",
    ),
    "unknown item collection": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(query={"item": {"collection": "images", "id": caption_id(0)}}),
        param="query.item.collection",
    ),
    "item id with a lone surrogate": BadRequest(
        ErrorCode.NOT_FOUND,
        raw_body=raw(
            '{"query": {"item": {"collection": "captions", "id": "x\\udc80"}}, '
            '"collection": "captions"}'
        ),
        param="query.item.id",
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
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": []},
        param="pairs",
    ),
    "score: too many pairs": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"text": "a"}, "right": {"text": "b"}}] * 1025},
        message_part="max_score_pairs=1024",
        param="pairs",
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
        param="pairs.0.left",
    ),
    "score: missing right": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"text": "a"}}]},
        param="pairs.0.right",
    ),
    "score: long text": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"text": "a"}, "right": {"text": "b" * 2001}}]},
        message_part="pairs.0.right.text",
        param="pairs.0.right.text",
    ),
    "score: unknown item": BadRequest(
        ErrorCode.NOT_FOUND,
        path="/v1/score",
        json_body={
            "pairs": [
                {"left": {"text": "a"}, "right": {"item": {"collection": "captions", "id": "x"}}}
            ]
        },
        param="pairs.0.right.item.id",
    ),
    "embed: no texts": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"texts": []},
        param="texts",
    ),
    "embed: too many texts": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"texts": ["a dog"] * 2049},
        message_part="max_embed_inputs=2048",
        param="texts",
    ),
    "embed: blank text": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"texts": ["ok", "  "]},
        param="texts.1",
    ),
    "embed: texts is a string": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        json_body={"texts": "a dog"},
        param="texts",
    ),
    "embed: unknown variant": BadRequest(
        ErrorCode.NOT_FOUND,
        path="/v1/embed",
        json_body={"texts": ["a"], "variant": "nope"},
        param="variant",
    ),
    "item: unknown id": BadRequest(
        ErrorCode.NOT_FOUND,
        path="/v1/items/captions/COCO_val2014:sentid:1",
        method="GET",
        param="id",
    ),
    "item: unknown collection": BadRequest(
        ErrorCode.NOT_FOUND,
        path=f"/v1/items/images/{caption_id(0)}",
        method="GET",
        param="collection",
    ),
    "item: unknown variant": BadRequest(
        ErrorCode.NOT_FOUND,
        path=f"/v1/items/captions/{caption_id(0)}?variant=x",
        method="GET",
        param="variant",
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
        param="query.vector.0",
    ),
    "vector: Infinity": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw(vector_body("Infinity")),
        message_part="finite",
        param="query.vector.0",
    ),
    "vector: -Infinity": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw(vector_body("-Infinity")),
        message_part="finite",
        param="query.vector.0",
    ),
    "vector: 1e400 overflows to infinity": BadRequest(
        ErrorCode.INVALID_INPUT,
        raw_body=raw(vector_body("1e400")),
        message_part="finite",
        param="query.vector.0",
    ),
    "vector: wrong dimension": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.5] * 63}),
        # The one served variant's dimension is in the document: a schema error, 422.
        message_part="query.vector: 63 numbers, but every served variant embeds in 64 dimensions",
        param="query.vector",
    ),
    "vector: far too long": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.5] * 50_000}),
        message_part="in 64 dimensions",
        param="query.vector",
    ),
    "vector: zero norm": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.0] * 64}),
        message_part="zero norm",
        param="query.vector",
    ),
    "vector: negative zeros": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [-0.0] * 64}),
        message_part="zero norm",
        param="query.vector",
    ),
    "vector: empty": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": []}),
        param="query.vector",
    ),
    "vector: strings": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": ["0.5"] * 64}),
        param="query.vector.0",
    ),
    "vector: booleans": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [True] * 64}),
        param="query.vector.0",
    ),
    "vector: nulls": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [None] * 64}),
        param="query.vector.0",
    ),
    "vector: nested": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [[0.5] * 64]}),
        param="query.vector.0",
    ),
    "vector: an object": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": {"0": 0.5}}),
        param="query.vector",
    ),
    "vector and text": BadRequest(
        ErrorCode.INVALID_INPUT,
        json_body=search_body(query={"vector": [0.5] * 64, "text": "dog"}),
        message_part="exactly one",
        param="query",
    ),
    "vector on an unknown variant": BadRequest(
        ErrorCode.NOT_FOUND,
        json_body=search_body(query={"vector": [0.5] * 64}, variant="nope"),
        param="variant",
    ),
    "score: NaN vector side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        raw_body=raw(
            '{"pairs": [{"left": {"text": "a"}, "right": {"vector": [NaN' + ", 0.5" * 63 + "]}}]}"
        ),
        message_part="pairs.0.right.vector.0",
        param="pairs.0.right.vector.0",
    ),
    "score: short vector side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"vector": [1.0]}, "right": {"text": "b"}}]},
        message_part="pairs.0.left.vector: 1 numbers",
        param="pairs.0.left.vector",
    ),
    "score: zero vector side": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/score",
        json_body={"pairs": [{"left": {"vector": [0.0] * 64}, "right": {"text": "b"}}]},
        message_part="zero norm",
        param="pairs.0.left.vector",
    ),
    "embed: NaN in texts": BadRequest(
        ErrorCode.INVALID_INPUT,
        path="/v1/embed",
        raw_body=b'{"texts": [NaN]}',
        param="texts.0",
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
            "param": case.param,
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
        ("/v1/search", search_body(query={"text": " "}), "query.text: must contain"),
        ("/v1/search", search_body(query={"vector": [1, "x"]}), "query.vector.1: Input should"),
        ("/v1/search", search_body(query={"item": {"collection": "captions"}}), "query.item.id:"),
        ("/v1/embed", {"texts": ["fine", " "]}, "texts.1: must contain"),
        (
            "/v1/score",
            {"pairs": [{"left": {"text": " "}, "right": {"text": "a dog"}}]},
            "pairs.0.left.text: must contain",
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


@pytest.mark.parametrize(
    ("path", "body", "message", "param"),
    [
        (
            "/v1/search",
            search_body(filter={"field": "sentid", "range": {}}),
            "filter.range: give at least one bound: 'gt', 'gte', 'lt' or 'lte'",
            "filter.range",
        ),
        (
            "/v1/search",
            search_body(filter={"not": {"or": [{"field": "x", "range": {"lt": 1, "lte": 2}}]}}),
            "filter.not.or.0.range: give at most one of 'lt' and 'lte'",
            "filter.not.or.0.range",
        ),
        (
            "/v1/search/bulk",
            {"searches": [search_body(filter={"field": "x", "range": {}})]},
            "searches.0.filter.range: give at least one bound: 'gt', 'gte', 'lt' or 'lte'",
            "searches.0.filter.range",
        ),
        (
            "/v1/embed",
            {"texts": ["fine", " "], "variant": None},
            "texts.1: must contain a non-whitespace character",
            "texts.1",
        ),
    ],
    ids=["empty range", "nested range", "bulk range", "embed union"],
)
def test_a_validation_error_says_one_thing_in_the_request_s_words(
    client: TestClient, path: str, body: dict[str, Any], message: str, param: str
) -> None:
    """pydantic's own location parts (a union branch ``function-after[...]``, a tagged union's
    tag such as the field test's ``field``) and the ``Input should be None`` of an optional
    field's null branch stay out: the whole message is the one sentence about the field."""
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["message"], error["param"]) == (message, param)


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
    allowed = client.request("OPTIONS", "/v1/collections/x").headers["allow"]
    assert allowed == "DELETE, GET, PATCH"
    # The most specific template answers: POST .../items/delete, not PATCH .../items/{id}.
    assert client.request("OPTIONS", "/v1/collections/x/items/delete").headers["allow"] == "POST"

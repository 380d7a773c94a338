"""The client's models against the service's golden OpenAPI document (docs/openapi.json).

For every route the client calls: the route is in the document with the client's method, its
JSON body is the schema the client's request model mirrors and its answer the schema the
client's answer model mirrors; each model, and every model nested in it, has the schema's
field names, and requires exactly what the schema requires. Each request example in the
document parses as the client's model, and an answer holding only what the schema requires
parses as the client's answer model. A copy of the document changed in the ways a service
drifts shows the check failing.
"""

from __future__ import annotations

import copy
import json
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from crisscross_client import models as m
from crisscross_client._requests import ROUTES, UPLOAD_FORM_FIELDS
from tests.conftest import REPO_ROOT

DOCUMENT: dict[str, Any] = json.loads((REPO_ROOT / "docs" / "openapi.json").read_text())
PENDING_ROUTES = frozenset({"embeddings", "models"})
"""Routes the client knows that the document may not state yet (the OpenAI-shaped ones): they
are checked once the document has them."""
REF = "#/components/schemas/"


def _refs(schema: Any) -> list[str]:
    """Schema names a (sub)schema refers to, through anyOf/oneOf/allOf/items/
    additionalProperties/patternProperties."""
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        return [schema["$ref"].removeprefix(REF)]
    found: list[str] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for member in schema.get(key, []):
            found += _refs(member)
    for key in ("items", "additionalProperties", "not"):
        found += _refs(schema.get(key))
    for member in schema.get("patternProperties", {}).values():
        found += _refs(member)
    return found


def _models(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic models an annotation holds (through unions, lists, dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for argument in typing.get_args(annotation):
        found += _models(argument)
    return found


def _wire_fields(model: type[BaseModel]) -> dict[str, bool]:
    """The model's fields by wire name, each with whether it is required."""
    return {
        (field.serialization_alias or field.alias or name): field.is_required()
        for name, field in model.model_fields.items()
    }


def _compare(
    document: dict[str, Any], model: type[BaseModel], schema_name: str, seen: set[str]
) -> Iterator[str]:
    """Differences between ``model`` and schema ``schema_name``, and between the models and
    schemas nested in them."""
    key = f"{model.__name__}={schema_name}"
    if key in seen:
        return
    seen.add(key)
    schema = document["components"]["schemas"].get(schema_name)
    if schema is None:
        yield f"{model.__name__}: schema {schema_name} is not in the document"
        return
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = _wire_fields(model)
    for name in sorted(set(properties) - set(fields)):
        yield f"{model.__name__}: lacks the field {name!r} of {schema_name}"
    for name in sorted(set(fields) - set(properties)):
        yield f"{model.__name__}: has a field {name!r} that {schema_name} does not"
    for name in sorted(set(fields) & set(properties)):
        if fields[name] != (name in required):
            wanted = "required" if name in required else "optional"
            yield f"{model.__name__}.{name}: {schema_name} has it {wanted}"
        nested = _models(model.model_fields[_python_name(model, name)].annotation)
        refs = _refs(properties[name])
        for inner in nested:
            match = [ref for ref in refs if ref == inner.__name__]
            if not match and len(nested) == 1 and len(refs) == 1:
                match = refs
            if not match:
                yield f"{model.__name__}.{name}: {schema_name} does not refer to {inner.__name__}"
                continue
            yield from _compare(document, inner, match[0], seen)


def _python_name(model: type[BaseModel], wire: str) -> str:
    for name, field in model.model_fields.items():
        if (field.serialization_alias or field.alias or name) == wire:
            return name
    raise KeyError(wire)


def _body_refs(operation: dict[str, Any]) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {})
    return _refs(content.get("application/json", {}).get("schema"))


def _answer_ref(operation: dict[str, Any]) -> list[str]:
    for status in ("200", "201"):
        answer = operation.get("responses", {}).get(status)
        if answer is not None:
            return _refs(answer.get("content", {}).get("application/json", {}).get("schema"))
    return []


def drift(document: dict[str, Any]) -> list[str]:
    """Every difference between the client and ``document`` (empty: none)."""
    problems: list[str] = []
    seen: set[str] = set()
    for name, route in ROUTES.items():
        operation = document["paths"].get(route.path, {}).get(route.method.lower())
        if operation is None:
            if name not in PENDING_ROUTES:
                problems.append(f"{name}: {route.method} {route.path} is not in the document")
            continue
        if route.request is not None:
            refs = _body_refs(operation)
            if route.request.__name__ not in refs:
                problems.append(f"{name}: the body is {refs}, not {route.request.__name__}")
            else:
                problems += _compare(document, route.request, route.request.__name__, seen)
        if route.response is not None:
            refs = _answer_ref(operation)
            if len(refs) != 1:
                problems.append(f"{name}: the answer is {refs}, not {route.response.__name__}")
            else:
                problems += _compare(document, route.response, refs[0], seen)
    problems += _compare(document, m.ErrorResponse, "ErrorResponse", seen)
    upload = ROUTES["search_upload"]
    form = document["paths"][upload.path]["post"]["requestBody"]["content"]
    form_fields = set(form["multipart/form-data"]["schema"]["properties"])
    if form_fields != UPLOAD_FORM_FIELDS:
        problems.append(f"search_upload: the form is {sorted(form_fields)}")
    return problems


def _minimal(document: dict[str, Any], schema: Any, depth: int = 0) -> Any:
    """A value holding only what ``schema`` requires."""
    if "$ref" in schema:
        return _minimal(
            document, document["components"]["schemas"][schema["$ref"].removeprefix(REF)], depth
        )
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _minimal(document, schema[key][0], depth)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {
            name: _minimal(document, schema["properties"][name], depth + 1)
            for name in schema.get("required", [])
        }
    samples = {
        "string": "s",
        "integer": 1,
        "number": 0.5,
        "boolean": True,
        "array": [],
        "null": None,
    }
    return samples.get(kind, "s")


def test_the_client_matches_the_golden_document() -> None:
    assert drift(DOCUMENT) == []


def test_every_request_example_of_the_document_parses_as_the_client_model() -> None:
    schemas = DOCUMENT["components"]["schemas"]
    checked = 0
    for name, model in vars(m).items():
        if not (isinstance(model, type) and issubclass(model, m.RequestModel)):
            continue
        for example in schemas.get(name, {}).get("examples", []):
            model.model_validate(example)
            checked += 1
    embed = DOCUMENT["paths"]["/v1/embed"]["post"]["requestBody"]["content"]["application/json"]
    for example in embed["schema"]["examples"]:
        m.EmbedTexts.model_validate(example)
        checked += 1
    assert checked >= 10


def test_an_answer_holding_only_the_required_fields_parses() -> None:
    for name, route in ROUTES.items():
        operation = DOCUMENT["paths"].get(route.path, {}).get(route.method.lower())
        if route.response is None or operation is None:
            continue
        (ref,) = _answer_ref(operation)
        value = _minimal(DOCUMENT, {"$ref": REF + ref})
        assert isinstance(route.response.model_validate(value), route.response), name


def _mutated(change: typing.Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    change(document)
    return document


def _schemas(document: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = document["components"]["schemas"]
    return result


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        (
            lambda d: _schemas(d)["SearchRequest"]["properties"].pop("exclude"),
            "SearchRequest: has a field 'exclude'",
        ),
        (
            # a field the service adds that the client does not know (rerank was one, now
            # known: the client has it)
            lambda d: _schemas(d)["SearchRequest"]["properties"].update(
                explain={"type": "boolean"}
            ),
            "SearchRequest: lacks the field 'explain'",
        ),
        (
            lambda d: _schemas(d)["UpsertResponse"]["required"].remove("upserted"),
            "UpsertResponse.upserted: UpsertResponse has it optional",
        ),
        (
            lambda d: _schemas(d)["WriteItem"]["required"].append("metadata"),
            "WriteItem.metadata: WriteItem has it required",
        ),
        (
            lambda d: _schemas(d)["ErrorDetail"]["required"].remove("param"),
            "ErrorDetail.param: ErrorDetail has it optional",
        ),
        (
            lambda d: _schemas(d)["FieldTest"]["properties"].pop("in"),
            "FieldTest: has a field 'in'",
        ),
        (
            lambda d: _schemas(d)["WeightedFusion"]["properties"].update(beta={"type": "number"}),
            "WeightedFusion: lacks the field 'beta'",
        ),
        (
            lambda d: _schemas(d)["VariantRerank"]["required"].remove("variant"),
            "VariantRerank.variant: VariantRerank has it optional",
        ),
        (
            lambda d: _schemas(d)["SearchResult"]["properties"].update(text={"type": "string"}),
            "SearchResult: lacks the field 'text'",
        ),
        (
            lambda d: d["paths"].update({"/v1/search/many": d["paths"].pop("/v1/search/bulk")}),
            "search_bulk: POST /v1/search/bulk is not in the document",
        ),
        (
            lambda d: d["paths"]["/v1/collections/{name}/items"].update(
                put=d["paths"]["/v1/collections/{name}/items"].pop("post")
            ),
            "upsert: POST /v1/collections/{name}/items is not in the document",
        ),
        (
            lambda d: d["paths"]["/v1/score"]["post"]["responses"]["200"]["content"][
                "application/json"
            ].update(schema={"$ref": REF + "EmbedResponse"}),
            "ScoreResponse: lacks the field 'embeddings'",
        ),
        (
            lambda d: d["paths"]["/v1/search/upload"]["post"]["requestBody"]["content"][
                "multipart/form-data"
            ]["schema"]["properties"].pop("offset"),
            "search_upload: the form is",
        ),
        (
            lambda d: _schemas(d)["ReplicationStatus"]["properties"].update(
                leader_term={"type": "integer"}
            ),
            "ReplicationStatus: lacks the field 'leader_term'",
        ),
        (
            lambda d: _schemas(d)["ReplicaPosition"]["required"].remove("seq"),
            "ReplicaPosition.seq: ReplicaPosition has it optional",
        ),
    ],
    ids=[
        "field-removed",
        "field-added",
        "now-optional",
        "now-required",
        "error-shape",
        "nested-filter",
        "nested-fusion",
        "nested-rerank",
        "answer-field-added",
        "route-moved",
        "method-changed",
        "answer-schema-changed",
        "upload-form",
        "replication-status",
        "nested-replica-position",
    ],
)
def test_drift_is_reported(
    change: typing.Callable[[dict[str, Any]], object], reported: str
) -> None:
    problems = drift(_mutated(change))
    assert any(problem.startswith(reported) for problem in problems), problems


def test_the_openai_routes_are_checked_once_documented() -> None:
    """When the document states POST /v1/embeddings and GET /v1/models, the client's models
    must match them (until then they are pending)."""
    documented = {
        name
        for name in PENDING_ROUTES
        if ROUTES[name].method.lower() in DOCUMENT["paths"].get(ROUTES[name].path, {})
    }
    pending = _mutated(
        lambda d: [d["paths"].pop(ROUTES[name].path, None) for name in PENDING_ROUTES]
    )
    assert drift(pending) == []
    for name in documented:
        route = ROUTES[name]
        assert route.response is not None
        assert not [p for p in drift(DOCUMENT) if p.startswith(route.response.__name__)]

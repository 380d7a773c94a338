"""What a validation error says: one message and one ``param`` in the request's own words, the
rejected input never echoed, pydantic's own location parts left out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Discriminator, Tag, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from service.exceptions import FilterNotApplicableError
from service.http.errors import ErrorCode, ServiceError, install_error_handlers
from service.http.validation_messages import (
    BodySchema,
    body_schema,
    clean_errors,
    validation_message,
    validation_param,
)


class _Bounds(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    low: int | str | SkipJsonSchema[None] = None
    high: int | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _some_bound(self) -> _Bounds:
        if self.low is None and self.high is None:
            raise ValueError("give at least one bound")
        return self


class _Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    field: str
    bounds: _Bounds | SkipJsonSchema[None] = None
    labels: dict[str, int] = {}


class _Both(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    both: list[_Node]


def _tag(value: Any) -> str | None:
    if isinstance(value, dict):
        return "field" if "field" in value else "both" if "both" in value else None
    return None


_Node = Annotated[
    Annotated[_Leaf, Tag("field")] | Annotated[_Both, Tag("both")], Discriminator(_tag)
]

_Both.model_rebuild()


def test_validation_message_never_includes_input() -> None:
    message = validation_message(
        [{"type": "int_type", "loc": ("body", "k"), "msg": "bad", "input": float("nan")}]
    )
    assert message == "k: bad"


def test_validation_message_names_locations_and_counts_the_rest() -> None:
    errors: list[dict[str, Any]] = [
        {"type": "json_invalid", "loc": ("body", 0), "msg": "x"},
        {"type": "missing", "loc": ("body", "query", "text"), "msg": "Field required"},
        {"type": "missing", "loc": ("body",), "msg": "Field required"},
        *({"type": "x", "loc": ("body", "exclude", n), "msg": "bad"} for n in range(5)),
    ]
    assert validation_message(errors) == (
        "body is not valid JSON; query.text: Field required; body: Field required; "
        "exclude.0: bad; exclude.1: bad; and 3 more"
    )
    assert validation_message([]) == "invalid request"
    # The same error at the same place is said once.
    repeated = [{"type": "x", "loc": ("body", "k"), "msg": "bad"}] * 3
    assert validation_message(repeated) == "k: bad"


def test_validation_message_names_a_tagged_union_member_once() -> None:
    # A tagged union's tag comes before the member's own field, and each tag is that field.
    errors: list[dict[str, Any]] = [
        {"type": "value_error", "loc": ("body", "query", "text", "text"), "msg": "blank"},
        {"type": "missing", "loc": ("body", "pairs", 0, "left", "item", "item", "id"), "msg": "m"},
        {"type": "x", "loc": ("body", "texts", "texts", 1), "msg": "blank"},
    ]
    assert validation_message(errors) == (
        "query.text: blank; pairs.0.left.item.id: m; texts.1: blank"
    )


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    node: _Node
    kind: Literal["a", "b"] = "a"


def _errors(body: dict[str, Any]) -> list[dict[str, Any]]:
    """pydantic's errors of ``body`` as FastAPI reports them (under ``body``)."""
    try:
        _Body.model_validate(body)
    except ValidationError as error:
        return [{**detail, "loc": ("body", *detail["loc"])} for detail in error.errors()]
    raise AssertionError("the body is valid")


_SCHEMA = body_schema(_Body)


def test_a_location_leaves_out_tags_and_union_branches() -> None:
    assert _SCHEMA is not None
    # The tagged union's tag "field" is not the leaf's own field "field"; the optional bounds
    # are a union whose model branch pydantic names "function-after[_some_bound(), _Bounds]".
    errors = _errors({"node": {"both": [{"field": "x", "bounds": {}}]}})
    assert any("function-after" in str(error["loc"]) for error in errors)
    assert clean_errors(errors, _SCHEMA) == [("node.both.0.bounds", "give at least one bound")]
    assert validation_param(errors, _SCHEMA) == "node.both.0.bounds"


def test_the_null_branch_of_an_optional_field_is_dropped_where_another_branch_failed() -> None:
    errors = _errors({"node": {"field": "x", "bounds": {"low": [1]}}})
    assert {error["type"] for error in errors} >= {"none_required", "int_type", "string_type"}
    assert clean_errors(errors, _SCHEMA) == [
        ("node.bounds.low", "Input should be a valid integer"),
        ("node.bounds.low", "Input should be a valid string"),
    ]
    # Alone, "Input should be None" stays: it then says the only thing wrong there.
    alone = [{"type": "none_required", "loc": ("body", "kind"), "msg": "Input should be None"}]
    assert clean_errors(alone, _SCHEMA) == [("kind", "Input should be None")]


def test_dict_keys_list_indexes_and_fields_stay_even_where_they_look_like_branches() -> None:
    errors = _errors({"node": {"field": "x", "bounds": {"high": 1}, "labels": {"str": "one"}}})
    assert clean_errors(errors, _SCHEMA) == [("node.labels.str", "Input should be a valid integer")]
    unknown = _errors({"node": {"both": [{"field": "x"}, {"field": "y", "extra": 1}]}})
    assert clean_errors(unknown, _SCHEMA) == [
        ("node.both.1.extra", "Extra inputs are not permitted")
    ]


def test_without_a_schema_pydantic_s_validator_names_and_scalar_branches_still_go() -> None:
    errors = _errors({"node": {"field": "x", "bounds": {"low": [1]}}})
    # The tag cannot be told from a field without the schema; the branch labels can.
    assert [location for location, _ in clean_errors(errors)] == [
        "node.field.bounds.low",
        "node.field.bounds.low",
    ]
    empty = _errors({"node": {"field": "x", "bounds": {}}})
    assert clean_errors(empty) == [("node.field.bounds", "give at least one bound")]


def test_an_error_about_the_whole_body_names_no_param() -> None:
    errors: list[dict[str, Any]] = [{"type": "model_type", "loc": ("body",), "msg": "object"}]
    assert validation_param(errors, _SCHEMA) is None
    assert validation_param([], _SCHEMA) is None
    invalid = [{"type": "json_invalid", "loc": ("body", 0), "msg": "x"}]
    assert (validation_message(invalid), validation_param(invalid)) == (
        "body is not valid JSON",
        None,
    )


def test_a_query_or_path_parameter_keeps_its_name() -> None:
    errors = [{"type": "int_type", "loc": ("query", "limit"), "msg": "bad"}]
    assert validation_message(errors, _SCHEMA) == "limit: bad"
    assert validation_param(errors, _SCHEMA) == "limit"


def test_a_location_deeper_than_the_walk_goes_falls_back_to_the_plain_cleaning() -> None:
    deep: tuple[Any, ...] = ("body", "node") + ("both", 0) * 300 + ("field", "bounds", "none")
    errors = [{"type": "none_required", "loc": deep, "msg": "Input should be None"}]
    location = clean_errors(errors, _SCHEMA)[0][0]
    assert location.startswith("node.both.0.both.0")
    assert location.endswith("field.bounds")


def test_a_schema_pydantic_cannot_make_is_none() -> None:
    class NotAType:
        pass

    assert body_schema(NotAType()) is None
    assert isinstance(body_schema(_Body), BodySchema)


def test_the_handlers_put_the_param_in_the_body() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/domain")
    async def domain() -> None:
        raise FilterNotApplicableError("filter.and.1.eq: no", param="filter.and.1.eq")

    @app.get("/service")
    async def service() -> None:
        raise ServiceError(ErrorCode.INVALID_INPUT, "k: too many", param="k")

    @app.post("/body")
    async def body(request: _Body) -> None:
        del request

    with TestClient(app) as client:
        domain_error = client.get("/domain").json()["error"]
        assert (domain_error["code"], domain_error["param"]) == (
            "filter_not_applicable",
            "filter.and.1.eq",
        )
        assert client.get("/service").json()["error"]["param"] == "k"
        answer = client.post("/body", json={"node": {"field": "x", "bounds": {}}})
        assert answer.status_code == 422
        assert answer.json()["error"]["param"] == "node.bounds"
        assert answer.json()["error"]["message"] == "node.bounds: give at least one bound"

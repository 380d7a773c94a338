"""The one place domain errors become HTTP answers (service.http.errors): every error code has a
status, every domain error and every image refusal reason has a code, Retry-After comes from
the errors that ask for it, and the error body never carries what it cannot encode or echo."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Discriminator, Tag, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from encoders.image_decode import DECODE_FAILURES
from service.exceptions import (
    AmbiguousNameError,
    BundleRejectedError,
    DimensionMismatchError,
    DomainError,
    FilterNotApplicableError,
    ImageRefusedError,
    InvalidQueryError,
    NotFoundError,
    OverloadedError,
    SearchParamNotApplicableError,
    ShardsUnavailableError,
    ShuttingDownError,
    TowerMissingError,
    VariantMismatchError,
)
from service.http.errors import (
    CODE_OF_DOMAIN_ERROR,
    CODE_OF_IMAGE_REFUSAL,
    MAX_MESSAGE_CHARS,
    STATUS_OF,
    BodySchema,
    ErrorCode,
    ServiceError,
    body_schema,
    clean_errors,
    code_of,
    error_body,
    error_response,
    headers_of,
    install_error_handlers,
    retry_after_of,
    validation_message,
    validation_param,
)


def subclasses(cls: type[DomainError]) -> set[type[DomainError]]:
    found: set[type[DomainError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *subclasses(sub)}
    return found


def test_every_error_code_has_a_status() -> None:
    assert set(STATUS_OF) == set(ErrorCode)
    assert all(400 <= status < 600 for status in STATUS_OF.values())


def test_every_domain_error_has_a_code() -> None:
    # Image refusals are mapped by their reason (below), every other domain error by class.
    assert subclasses(DomainError) - {ImageRefusedError} <= set(CODE_OF_DOMAIN_ERROR)
    statuses = {cls.__name__: STATUS_OF[code] for cls, code in CODE_OF_DOMAIN_ERROR.items()}
    assert statuses == {
        "NotFoundError": 404,
        "InvalidQueryError": 422,
        "OverloadedError": 503,
        "ShuttingDownError": 503,
        "NotReadyError": 503,
        "ShardsUnavailableError": 503,
        "BundleRejectedError": 409,
        "TowerMissingError": 409,
        "AmbiguousNameError": 409,
        "VariantMismatchError": 409,
        "DimensionMismatchError": 409,
        "FilterNotApplicableError": 409,
        "SearchParamNotApplicableError": 409,
        "LeverNotApplicableError": 409,
        "FieldMismatchError": 409,
        "CollectionExistsError": 409,
        "CollectionLimitError": 409,
        "CollectionEmptyError": 409,
        "WritesUnavailableError": 409,
        "WriteFailedError": 503,
    }


def test_422_is_for_input_that_is_wrong_and_409_for_a_conflict_with_what_is_served() -> None:
    """A well-formed request that names something not served is 404; one whose parts exist but
    do not fit together or with what is served is 409, with its own code; 422 is left to input
    that is wrong whatever is served (it breaks the document, or no value could satisfy it)."""
    conflicts = {code for code, status in STATUS_OF.items() if status == 409}
    assert conflicts == {
        ErrorCode.BUNDLE_REJECTED,
        ErrorCode.TOWER_MISSING,
        ErrorCode.AMBIGUOUS_NAME,
        ErrorCode.VARIANT_MISMATCH,
        ErrorCode.DIMENSION_MISMATCH,
        ErrorCode.FILTER_NOT_APPLICABLE,
        ErrorCode.SEARCH_PARAM_NOT_APPLICABLE,
        ErrorCode.LEVER_NOT_APPLICABLE,
        ErrorCode.FIELD_MISMATCH,
        ErrorCode.COLLECTION_EXISTS,
        ErrorCode.COLLECTION_LIMIT,
        ErrorCode.COLLECTION_EMPTY,
        ErrorCode.WRITES_UNAVAILABLE,
    }
    invalid = {code for code, status in STATUS_OF.items() if status == 422}
    assert invalid == {ErrorCode.INVALID_INPUT}


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotFoundError("unknown variant 'x'"), ErrorCode.NOT_FOUND),
        (InvalidQueryError("query.vector: zero norm"), ErrorCode.INVALID_INPUT),
        (TowerMissingError("query.image: no image tower"), ErrorCode.TOWER_MISSING),
        (AmbiguousNameError("collection 'captions' is ambiguous"), ErrorCode.AMBIGUOUS_NAME),
        (VariantMismatchError("embedded by variant 'v', not 'w'"), ErrorCode.VARIANT_MISMATCH),
        (DimensionMismatchError("query.vector: 3 numbers"), ErrorCode.DIMENSION_MISMATCH),
        (FilterNotApplicableError("filter.field: unknown field"), ErrorCode.FILTER_NOT_APPLICABLE),
        (OverloadedError("queue full", retry_after_s=2), ErrorCode.OVERLOADED),
        (ShuttingDownError("not ready: shutting down", retry_after_s=1), ErrorCode.NOT_READY),
        (BundleRejectedError("corrupt"), ErrorCode.BUNDLE_REJECTED),
        (
            SearchParamNotApplicableError("search_params.nprobe: not IVF"),
            ErrorCode.SEARCH_PARAM_NOT_APPLICABLE,
        ),
        (ImageRefusedError("too_many_pixels", "query.image: too big"), ErrorCode.PAYLOAD_TOO_LARGE),
        (ImageRefusedError("invalid_base64", "query.image: bad"), ErrorCode.INVALID_INPUT),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, DomainError) else str(value),
)
def test_code_of_a_domain_error(error: DomainError, code: ErrorCode) -> None:
    assert code_of(error) is code


def test_a_subclass_takes_the_code_of_its_nearest_mapped_base() -> None:
    class UnknownBundleError(NotFoundError):
        pass

    assert code_of(UnknownBundleError("no such bundle")) is ErrorCode.NOT_FOUND


def test_every_image_refusal_reason_has_a_documented_status() -> None:
    assert set(CODE_OF_IMAGE_REFUSAL) == {*DECODE_FAILURES, "invalid_base64"}
    assert {reason: STATUS_OF[code] for reason, code in CODE_OF_IMAGE_REFUSAL.items()} == {
        "too_many_bytes": 413,
        "too_many_pixels": 413,
        "unsupported_format": 415,
        "invalid_image": 422,
        "invalid_base64": 422,
    }


def test_retry_after_comes_from_overload_and_shutdown_only() -> None:
    assert retry_after_of(OverloadedError("full", retry_after_s=3)) == 3
    assert retry_after_of(ShuttingDownError("draining", retry_after_s=5)) == 5
    missing = ShardsUnavailableError("down", ("shard-1", "shard-2"), retry_after_s=4)
    assert retry_after_of(missing) == 4
    assert headers_of(missing) == {"Retry-After": "4", "x-missing-shards": "shard-1,shard-2"}
    assert headers_of(NotFoundError("gone")) is None
    assert retry_after_of(NotFoundError("gone")) is None
    assert retry_after_of(ImageRefusedError("invalid_image", "not an image")) is None


def test_a_service_error_has_the_status_of_its_code() -> None:
    error = ServiceError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, "send JSON", retry_after_s=None)
    assert (error.status_code, error.message, error.retry_after_s) == (415, "send JSON", None)


def test_the_error_body_escapes_lone_surrogates_and_caps_the_message() -> None:
    body = error_body(ErrorCode.NOT_FOUND, "unknown item '\ud800'", "req-1")
    assert body == {
        "error": {
            "code": "not_found",
            "message": "unknown item '\\ud800'",
            "request_id": "req-1",
            "type": "not_found_error",
            "param": None,
        }
    }
    json.dumps(body).encode("utf-8")  # encodable
    long = error_body(ErrorCode.INVALID_INPUT, "x" * (MAX_MESSAGE_CHARS + 10), "req-2")
    assert long["error"]["message"] == "x" * MAX_MESSAGE_CHARS + "…"


def test_an_error_response_carries_its_status_and_headers() -> None:
    response = error_response(
        ErrorCode.OVERLOADED, "overloaded", "req-3", headers={"Retry-After": "2"}
    )
    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert json.loads(bytes(response.body))["error"]["code"] == "overloaded"


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


# -- param: the one request field an error concerns ---------------------------------------------


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


def test_a_domain_error_without_a_field_has_no_param() -> None:
    assert NotFoundError("gone").param is None
    assert ImageRefusedError("invalid_image", "query.image: no", param="query.image").param == (
        "query.image"
    )

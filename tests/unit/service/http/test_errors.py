"""The one place domain errors become HTTP answers (service.http.errors): every error code has a
status, every domain error and every image refusal reason has a code, Retry-After comes from
the errors that ask for it, and the error body never carries what it cannot encode or echo."""

from __future__ import annotations

import json

import pytest

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
    ErrorCode,
    ServiceError,
    code_of,
    error_body,
    error_response,
    headers_of,
    retry_after_of,
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
        "NotLeaderError": 421,
        "NoQuorumError": 503,
        "ReplicationTimeoutError": 503,
        "ReplicaBehindError": 503,
        "PromotionRefusedError": 409,
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
        ErrorCode.PROMOTION_REFUSED,
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


# -- param: the one request field an error concerns ---------------------------------------------


def test_a_domain_error_without_a_field_has_no_param() -> None:
    assert NotFoundError("gone").param is None
    assert ImageRefusedError("invalid_image", "query.image: no", param="query.image").param == (
        "query.image"
    )


def test_replication_errors_carry_their_headers() -> None:
    from service.exceptions import NotLeaderError, ReplicationTimeoutError

    assert headers_of(NotLeaderError("follower", "http://127.0.0.1:9")) == {
        "x-leader": "http://127.0.0.1:9"
    }
    assert headers_of(NotLeaderError("fenced", None)) is None
    assert headers_of(ReplicationTimeoutError("slow", 41, 2)) == {
        "Retry-After": "2",
        "x-seq": "41",
    }


def test_a_leader_url_that_cannot_be_a_header_is_left_out() -> None:
    from service.exceptions import NotLeaderError

    assert headers_of(NotLeaderError("follower", "http://h\u00e9:1")) is None
    assert headers_of(NotLeaderError("follower", "http://h\n:1")) is None

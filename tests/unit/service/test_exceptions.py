"""The domain errors (service.exceptions): a safe message, Retry-After seconds where they apply,
an image refusal's reason, and client values quoted short."""

from __future__ import annotations

import pytest

from service.exceptions import (
    MAX_QUOTED_CHARS,
    BundleRejectedError,
    DomainError,
    ImageRefusedError,
    InvalidQueryError,
    NotFoundError,
    OverloadedError,
    ShuttingDownError,
    quoted,
)


@pytest.mark.parametrize(
    "cls", [NotFoundError, InvalidQueryError, BundleRejectedError], ids=lambda cls: cls.__name__
)
def test_a_domain_error_carries_its_message(cls: type[DomainError]) -> None:
    error = cls("unknown variant 'x'")
    assert isinstance(error, DomainError)
    assert error.message == str(error) == "unknown variant 'x'"


def test_overload_and_shutdown_carry_their_retry_after() -> None:
    overloaded = OverloadedError("queue full", retry_after_s=2)
    draining = ShuttingDownError("not ready: shutting down", retry_after_s=7)
    assert (overloaded.message, overloaded.retry_after_s) == ("queue full", 2)
    assert (draining.message, draining.retry_after_s) == ("not ready: shutting down", 7)


def test_an_image_refusal_carries_its_reason() -> None:
    error = ImageRefusedError("unsupported_format", "query.image: BMP is not accepted")
    assert (error.reason, error.message) == (
        "unsupported_format",
        "query.image: BMP is not accepted",
    )


def test_quoted_is_repr_quoted() -> None:
    assert quoted("dog") == "'dog'"
    assert quoted("it's") == '"it\'s"'
    assert quoted("a\nb") == "'a\\nb'"


def test_quoted_cuts_long_values() -> None:
    at_limit = "x" * MAX_QUOTED_CHARS
    assert quoted(at_limit) == repr(at_limit)
    assert quoted(at_limit + "yz") == repr(at_limit) + "…"

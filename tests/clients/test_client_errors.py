"""The clients' error classes against the real app (fake encoder, the fake captions bundle,
served on a loopback socket): a filter that does not fit the collection is a 409
``filter_not_applicable``, caught as :class:`~crisscross_client.FilterNotApplicableError` and as
its base :class:`~crisscross_client.ConflictError`, never as an ``InvalidInputError``; a filter
no collection could answer stays a 422 ``InvalidInputError``. Each names the part of the filter
at fault in ``param``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import crisscross_client as cc
from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import clear_service_env
from tests.fakes.socket_server import serve_on_socket

UNKNOWN_FIELD = {"field": "colour", "eq": "red"}
NESTED_WRONG_TYPE = {"and": [{"field": "sentid", "exists": True}, {"field": "sentid", "eq": "x"}]}
NO_VALUE_FITS = {"field": "sentid", "range": {"gt": 5, "lt": 5}}


@pytest.fixture(scope="module")
def service_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The root of a served app over the fake captions bundle (no keys)."""
    root = tmp_path_factory.mktemp("client-errors")
    write_fake_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    with pytest.MonkeyPatch.context() as environment:
        clear_service_env(environment)
        settings = Settings(bundles_root=root / "bundles", variants_root=root / "variants")
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with serve_on_socket(app, settings) as server:
        yield f"http://127.0.0.1:{server.port}"


def test_the_hierarchy_puts_filter_not_applicable_under_conflict() -> None:
    assert issubclass(cc.FilterNotApplicableError, cc.ConflictError)
    assert not issubclass(cc.FilterNotApplicableError, cc.InvalidInputError)
    assert cc.FilterNotApplicable is cc.FilterNotApplicableError
    assert cc.errors.error_class(409, "filter_not_applicable") is cc.FilterNotApplicableError
    assert cc.errors.error_class(409, "ambiguous_name") is cc.ConflictError
    # A code is only its own class under the status it belongs to.
    assert cc.errors.error_class(422, "filter_not_applicable") is cc.InvalidInputError


def test_the_sync_client_catches_a_filter_that_does_not_fit(service_url: str) -> None:
    with cc.Client(service_url) as client:
        assert client.search("captions", text="a dog", k=2).results  # the service answers

        with pytest.raises(cc.FilterNotApplicableError) as unknown:
            client.search("captions", text="a dog", k=2, filter=UNKNOWN_FIELD)
        error = unknown.value
        assert (error.status, error.code, error.param) == (
            409,
            "filter_not_applicable",
            "filter.field",
        )
        assert "unknown field 'colour'" in error.message

        with pytest.raises(cc.ConflictError) as conflict:  # the 409 base class catches it too
            client.search("captions", text="a dog", k=2, filter=NESTED_WRONG_TYPE)
        assert isinstance(conflict.value, cc.FilterNotApplicableError)
        assert conflict.value.param == "filter.and.1.eq"
        assert "an integer field" in conflict.value.message

        with pytest.raises(cc.InvalidInputError) as invalid:
            client.search("captions", text="a dog", k=2, filter=NO_VALUE_FITS)
        assert (invalid.value.status, invalid.value.param) == (422, "filter.range")
        assert not isinstance(invalid.value, cc.ConflictError)


def test_the_async_client_and_a_bulk_search_raise_the_same_class(service_url: str) -> None:
    async def scenario() -> list[Any]:
        async with cc.AsyncClient(service_url) as client:
            with pytest.raises(cc.FilterNotApplicableError) as unknown:
                await client.search("captions", text="a dog", k=2, filter=UNKNOWN_FIELD)
            assert unknown.value.param == "filter.field"
            answers: list[Any] = await client.search_many(
                ["a dog", "a cat"], "captions", k=2, filter=UNKNOWN_FIELD, return_exceptions=True
            )
            return answers

    answers = asyncio.run(scenario())
    assert all(isinstance(answer, cc.FilterNotApplicableError) for answer in answers)
    with cc.Client(service_url) as client, pytest.raises(cc.ConflictError):
        client.search_many(["a dog"], "captions", k=2, filter=UNKNOWN_FIELD)


def test_search_many_keeps_the_other_answers_when_one_search_is_invalid(service_url: str) -> None:
    with cc.Client(service_url) as client:
        answers = client.search_many(
            ["a dog", "   ", "a cat"], "captions", k=2, return_exceptions=True
        )
        assert isinstance(answers[1], cc.InvalidInputError)
        assert "searches.1.query.text" in str(answers[1])
        assert answers[1].param == "searches.1.query.text"
        assert [type(answer).__name__ for answer in (answers[0], answers[2])] == [
            "SearchPageResult",
            "SearchPageResult",
        ]
        with pytest.raises(cc.InvalidInputError):
            client.search_many(["a dog", "   "], "captions", k=2)

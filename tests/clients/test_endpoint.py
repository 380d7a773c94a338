"""Each public method is written once (``crisscross_client._methods``) and made a plain method
of the sync client and a coroutine method of the async one, with the same signature and
docstring."""

from __future__ import annotations

import inspect

import crisscross_client as cc
from crisscross_client._endpoint import Endpoint
from crisscross_client._methods import ClientMethods

ENDPOINTS = [
    name
    for owner in ClientMethods.__mro__
    for name, value in vars(owner).items()
    if isinstance(value, Endpoint)
]
"""Every method, with those of the mixins ``ClientMethods`` inherits (``CollectionMethods``)."""


def test_every_endpoint_is_a_method_of_both_clients_with_one_signature() -> None:
    assert {"search", "search_many", "upsert", "request", "load_limits"} <= set(ENDPOINTS)
    assert len(ENDPOINTS) == len(set(ENDPOINTS))  # no method written twice (one hides another)
    for name in ENDPOINTS:
        plain, awaited = getattr(cc.Client, name), getattr(cc.AsyncClient, name)
        assert not inspect.iscoroutinefunction(plain), name
        assert inspect.iscoroutinefunction(awaited), name
        assert inspect.signature(plain) == inspect.signature(awaited), name
        assert plain.__doc__, name
        assert plain.__doc__ == awaited.__doc__, name
        assert "Plan" not in str(inspect.signature(plain).return_annotation), name
        assert plain.__qualname__ == f"Client.{name}"
        assert awaited.__qualname__ == f"AsyncClient.{name}"


def test_a_method_read_from_a_client_is_bound_to_it() -> None:
    with cc.Client("http://svc") as client:
        assert inspect.ismethod(client.search)
        assert client.search.__self__ is client
        assert (
            str(inspect.signature(client.health))
            == "(*, timeout: 'float | None' = None) -> 'm.StatusResponse'"
        )


def test_every_endpoint_takes_a_keyword_only_timeout_last() -> None:
    """``timeout`` is declared by each builder (so that signatures and mypy show it) and
    applied by ``@endpoint``: a new method must declare it too."""
    for name in ENDPOINTS:
        parameters = list(inspect.signature(getattr(cc.Client, name)).parameters.values())
        last = parameters[-1]
        assert last.name == "timeout", name
        assert last.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert last.default is None, name

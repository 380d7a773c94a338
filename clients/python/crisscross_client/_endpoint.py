"""How one method serves both clients: :func:`endpoint` and the retry loop as steps.

A public method is written once, in :class:`~crisscross_client._methods.ClientMethods`, as a
function that builds a :class:`~crisscross_client._requests.Plan` (the requests it sends and how
their answers make its result). :func:`endpoint` turns it into an :class:`Endpoint`: read from a
:class:`~crisscross_client.Client` it is a plain method that sends the plan and returns the
result; read from an :class:`~crisscross_client.AsyncClient` it is a coroutine method. Either
has the builder's parameters, docstring and result type (``inspect.signature``, ``help``).

The retry loop is written once too, without I/O (:class:`Steps`): it says which request to send
or how long to wait, and is told what came back; each client only sends and sleeps.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import time
import types
import typing
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, Protocol, TypeVar, overload

import httpx

from crisscross_client._calls import Call, Plan, answer_error
from crisscross_client._transport import error_code_of, retry_after_seconds

if TYPE_CHECKING:
    from crisscross_client._settings import ClientSettings

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

Step = Call[Any] | float
"""What a client does next: send a request, or wait this many seconds."""
Outcome = httpx.Response | httpx.TransportError | None
"""What came of a step: the answer, the failure to get one, or nothing (after a wait)."""


class BlockingClient(Protocol):
    """A client whose methods return their results (:class:`~crisscross_client.Client`)."""

    @property
    def _blocking(self) -> Literal[True]: ...


class AwaitingClient(Protocol):
    """A client whose methods are coroutines (:class:`~crisscross_client.AsyncClient`)."""

    @property
    def _blocking(self) -> Literal[False]: ...


class Endpoint(Generic[P, T]):
    """A client method written once (see the module's doc)."""

    def __init__(self, build: Callable[..., Plan[Any, T]]) -> None:
        self.build = build
        self._methods: dict[type, Callable[..., Any]] = {}

    def method_for(self, owner: type) -> Callable[..., Any]:
        """The plain or coroutine function this endpoint is in ``owner`` (made once)."""
        if owner not in self._methods:
            self._methods[owner] = _method(self.build, owner)
        return self._methods[owner]

    @overload
    def __get__(self, client: None, owner: type) -> Callable[..., Any]: ...

    @overload
    def __get__(self, client: BlockingClient, owner: type) -> Callable[P, T]: ...

    @overload
    def __get__(
        self, client: AwaitingClient, owner: type
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, client: object, owner: type) -> Callable[..., Any]:
        method = self.method_for(owner)
        return method if client is None else types.MethodType(method, client)


def endpoint(build: Callable[typing.Concatenate[Any, P], Plan[Any, T]]) -> Endpoint[P, T]:
    """Decorator: ``build(client, *args, **kwargs)`` makes the plan (see :class:`Endpoint`)."""
    return Endpoint(build)


def _method(build: Callable[..., Plan[Any, T]], owner: type) -> Callable[..., Any]:
    """``build`` as a method of ``owner``: it runs the plan with ``owner._run`` (awaited when
    that is a coroutine function), under the builder's name, docstring and signature, its
    result type being the plan's result type."""
    run_is_async = inspect.iscoroutinefunction(owner._run)  # type: ignore[attr-defined]

    def plain(client: Any, /, *args: Any, **kwargs: Any) -> Any:
        return client._run(build(client, *args, **kwargs))

    async def awaited(client: Any, /, *args: Any, **kwargs: Any) -> Any:
        return await client._run(build(client, *args, **kwargs))

    method: Callable[..., Any] = awaited if run_is_async else plain
    functools.update_wrapper(method, build)
    method.__qualname__ = f"{owner.__name__}.{build.__name__}"
    method.__module__ = owner.__module__
    result = _result_annotation(build)
    method.__signature__ = inspect.signature(build).replace(  # type: ignore[attr-defined]
        return_annotation=result
    )
    method.__annotations__ = {**build.__annotations__, "return": result}
    del method.__wrapped__  # type: ignore[attr-defined]
    return method


def _result_annotation(build: Callable[..., Any]) -> str:
    """``X`` of the builder's ``-> Plan[Any, X]`` (kept a string, as the module's
    ``from __future__ import annotations`` leaves every annotation)."""
    written = str(build.__annotations__["return"])
    prefix, suffix = "Plan[Any, ", "]"
    if not (written.startswith(prefix) and written.endswith(suffix)):
        raise TypeError(f"{build.__qualname__} returns {written}, not Plan[Any, ...]")
    return written.removeprefix(prefix).removesuffix(suffix)


class Steps(Generic[T]):
    """A plan's exchanges as steps: :meth:`first`, then :meth:`next` with each step's
    outcome until it gives ``None``; then :attr:`result` is the plan's result.

    Retries what the settings' :class:`~crisscross_client.RetryPolicy` allows (waiting what a
    ``Retry-After`` asks, capped), records each call's final exchange as the last response,
    and raises the :class:`~crisscross_client.CrisscrossError` of a call that failed.
    """

    def __init__(self, settings: ClientSettings, plan: Plan[Any, T]) -> None:
        self._steps = _plan_steps(settings, plan)
        self.result: T

    def first(self) -> Step | None:
        """The first step (``None``: the plan sends nothing)."""
        return self.next(None)

    def next(self, outcome: Outcome) -> Step | None:
        """The step after ``outcome`` (``None``: done, :attr:`result` is set)."""
        try:
            return self._steps.send(outcome)
        except StopIteration as done:
            self.result = done.value
            return None


def _plan_steps(settings: ClientSettings, plan: Plan[Any, T]) -> Generator[Step, Outcome, T]:
    answers = []
    for call in plan.calls:
        answers.append((yield from _call_steps(settings, call)))
    return plan.combine(answers)


def _call_steps(settings: ClientSettings, call: Call[R]) -> Generator[Step, Outcome, R]:
    """One call's attempts: sent, retried after the waits the policy sets, then read."""
    policy = settings.retry
    started = time.perf_counter()
    for retries in itertools.count():
        outcome = yield call
        if isinstance(outcome, httpx.TransportError):
            if call.retry and policy.retry_failure(retries, outcome, idempotent=call.idempotent):
                yield policy.backoff(retries + 1)
                continue
            settings.record(call, None, time.perf_counter() - started, retries + 1)
            raise settings.failure(call, outcome) from outcome
        assert outcome is not None
        retry_after = retry_after_seconds(outcome.headers.get("retry-after"))
        if not outcome.is_success and call.retry:
            code = error_code_of(outcome)
            status = outcome.status_code
            if policy.retry_answer(retries, status, code, retry_after, idempotent=call.idempotent):
                yield policy.wait(retries + 1, retry_after)
                continue
        settings.record(call, outcome, time.perf_counter() - started, retries + 1)
        if not outcome.is_success:
            raise answer_error(outcome, retry_after)
        return call.read(outcome)
    raise AssertionError("unreachable")

"""How one method serves both clients: :func:`endpoint` and the retry loop as steps.

A public method is written once, in :class:`~crisscross_client._methods.ClientMethods`, as a
function that builds a :class:`~crisscross_client._requests.Plan` (the requests it sends and how
their answers make its result). :func:`endpoint` turns it into an :class:`Endpoint`: read from a
:class:`~crisscross_client.Client` it is a plain method that sends the plan and returns the
result; read from an :class:`~crisscross_client.AsyncClient` it is a coroutine method. Either
has the builder's parameters, docstring and result type (``inspect.signature``, ``help``).

The retry loop is written once too, without I/O (:class:`Steps`): it says which request to send
or how long to wait, and is told what came back; each client only sends and sleeps. So is the
bookkeeping of a plan whose calls run side by side (:class:`Flight`): each client only starts
them, ``parallelism`` at a time, in threads (sync) or tasks (async).

Every method also takes ``timeout`` (seconds per attempt, keyword-only): the builder declares
it, so that signatures and type checkers show it, and :func:`endpoint` applies it to the whole
plan (:attr:`Plan.timeout <crisscross_client._calls.Plan.timeout>`); the builder never sees it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import time
import types
import typing
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, Protocol, TypeVar, overload

import httpx

from crisscross_client._calls import Call, Plan, answer_error
from crisscross_client._settings import ClientSettings, checked_timeout, checked_url
from crisscross_client._transport import error_code_of, retry_after_seconds
from crisscross_client._written_seqs import MIN_SEQ_HEADER
from crisscross_client.errors import LEADER_HEADER, ReplicationTimeoutError

if TYPE_CHECKING:
    from crisscross_client.response_info import ResponseInfo

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
    timed = "timeout" in inspect.signature(build).parameters

    def planned(client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Plan[Any, T]:
        timeout = kwargs.pop("timeout", None) if timed else None
        plan = build(client, *args, **kwargs)
        if timeout is None:
            return plan
        return dataclasses.replace(plan, timeout=checked_timeout(timeout))

    def plain(client: Any, /, *args: Any, **kwargs: Any) -> Any:
        return client._run(planned(client, args, kwargs))

    async def awaited(client: Any, /, *args: Any, **kwargs: Any) -> Any:
        return await client._run(planned(client, args, kwargs))

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
    """The plan's calls one after the other (whatever its ``parallelism``: a client runs a plan
    side by side with :class:`Flight` instead)."""
    flight = Flight(plan)
    while (job := flight.next()) is not None:
        try:
            job.answer = yield from _call_steps(settings, job.call)
        except Exception as error:
            job.error = error
        flight.finished(job)
    return flight.result()


def _call_steps(settings: ClientSettings, call: Call[R]) -> Generator[Step, Outcome, R]:
    """One call's attempts: sent, retried after the waits the policy sets, sent once more to
    the leader a 421 ``not_leader`` names (:attr:`Call.to_leader`), then read.

    A read of collections the client wrote asks for its writes (``X-Min-Seq``, when the
    settings' ``read_your_writes``); a write's answered ``seq`` is remembered for that (also
    the ``x-seq`` of a 503 ``replication_timeout``: the write holds on the leader)."""
    if call.timeout is None:
        call = dataclasses.replace(call, timeout=settings.timeout)
    call = _with_min_seq(settings, call)
    policy = settings.retry
    started = time.perf_counter()
    redirected = False
    retries = 0
    for attempts in itertools.count(1):
        outcome = yield call
        if isinstance(outcome, httpx.TransportError):
            if call.retry and policy.retry_failure(retries, outcome, idempotent=call.idempotent):
                retries += 1
                yield policy.backoff(retries)
                continue
            settings.record(call, None, time.perf_counter() - started, attempts)
            raise settings.failure(call, outcome) from outcome
        assert outcome is not None
        if not redirected and call.to_leader and (leader := _leader_of(outcome)) is not None:
            redirected = True  # once per call: the leader named may have changed since
            call = dataclasses.replace(call, origin=leader)
            continue
        retry_after = retry_after_seconds(outcome.headers.get("retry-after"))
        if not outcome.is_success and call.retry:
            code = error_code_of(outcome)
            status = outcome.status_code
            if policy.retry_answer(retries, status, code, retry_after, idempotent=call.idempotent):
                retries += 1
                yield policy.wait(retries, retry_after)
                continue
        settings.record(call, outcome, time.perf_counter() - started, attempts)
        if not outcome.is_success:
            error = answer_error(outcome, retry_after)
            if isinstance(error, ReplicationTimeoutError) and call.writes and error.seq:
                settings.written.saw(call.writes, error.seq)
            raise error
        answer = call.read(outcome)
        _remember(settings, call, answer)
        return answer
    raise AssertionError("unreachable")


def _with_min_seq(settings: ClientSettings, call: Call[R]) -> Call[R]:
    """``call`` asking for the client's writes to the collections it reads (``X-Min-Seq``),
    when it reads any the client wrote and the settings want read-your-writes."""
    if not call.reads or not settings.read_your_writes:
        return call
    wanted = settings.written.header(call.reads)
    if wanted is None:
        return call
    return dataclasses.replace(call, headers={**(call.headers or {}), MIN_SEQ_HEADER: wanted})


def _leader_of(response: httpx.Response) -> str | None:
    """The leader a 421 ``not_leader`` answer names (``x-leader``), if it names a valid
    ``http(s)`` URL; ``None`` for any other answer."""
    if response.status_code != 421 or error_code_of(response) != "not_leader":
        return None
    named = response.headers.get(LEADER_HEADER)
    if not named:
        return None
    try:
        return checked_url(named, LEADER_HEADER)
    except ValueError:
        return None


def _remember(settings: ClientSettings, call: Call[Any], answer: object) -> None:
    """Keep what an answered call tells of the collections' sequence numbers: a write's
    ``seq``; a creation or a drop starts a collection's numbers again."""
    if call.resets is not None:
        settings.written.forget(call.resets)
    seq = getattr(answer, "seq", None)
    if call.writes is not None and isinstance(seq, int) and not isinstance(seq, bool):
        settings.written.saw(call.writes, seq)


@dataclass
class Job(Generic[R]):
    """One call of a :class:`Flight`: which, and what came of it (set by whoever ran it).

    Attributes:
        index: its place in the plan.
        call: the request (with the plan's timeout).
        answer: its answer, once read.
        error: what it raised instead.
        info: the last-response record of its final exchange, when it ran in another thread
            or task (the caller's record is set to it when it finishes).
    """

    index: int
    call: Call[R]
    answer: R | None = None
    error: Exception | None = None
    info: ResponseInfo | None = None

    @property
    def plan(self) -> Plan[R, R]:
        """A plan of this call alone (for a client's ``_run``, in a thread or task)."""
        return Plan([self.call], lambda answers: answers[0])


class Flight(Generic[T]):
    """The bookkeeping of a plan whose calls run side by side, without I/O: :meth:`next` gives
    the next :class:`Job` to start (``None``: none left, or one failed), :meth:`finished` is
    told of each, in the caller's thread or task, in the order they finish; once none is
    running, :meth:`result` is the plan's result or raises its failure.

    The plan's ``on_answer`` is called in :meth:`finished`; the first failure (a call's, or
    ``on_answer``'s) stops new calls, and :meth:`result` raises it (a call's through the plan's
    ``on_failure``) once those in flight have finished and been counted.
    """

    def __init__(self, plan: Plan[Any, T]) -> None:
        self._plan = plan
        self._calls = iter(enumerate(plan.calls))
        self._answers: dict[int, Any] = {}
        self._failure: Exception | None = None
        self._call_failed = False

    @property
    def parallelism(self) -> int:
        """Calls that may be in flight at once."""
        return max(1, self._plan.parallelism)

    def next(self) -> Job[Any] | None:
        """The next call to start, or ``None``."""
        if self._failure is not None:
            return None
        index, call = next(self._calls, (-1, None))
        if call is None:
            return None
        if call.timeout is None and self._plan.timeout is not None:
            call = dataclasses.replace(call, timeout=self._plan.timeout)
        return Job(index, call)

    def finished(self, job: Job[Any], settings: ClientSettings | None = None) -> None:
        """Count ``job`` (its answer or its error); with ``settings``, record its final
        exchange (:attr:`Job.info`) as their last response in the current thread or task."""
        if settings is not None and job.info is not None:
            settings.last.set(job.info)
        if job.error is not None:
            if self._failure is None:
                self._failure, self._call_failed = job.error, True
            return
        self._answers[job.index] = job.answer
        if self._plan.on_answer is not None and self._failure is None:
            try:
                self._plan.on_answer(job.index, job.answer)
            except Exception as error:
                self._failure = error

    def result(self) -> T:
        """The plan's result; raises its failure."""
        failure = self._failure
        if failure is not None:
            if self._call_failed and self._plan.on_failure is not None:
                raise self._plan.on_failure(failure, sorted(self._answers)) from failure
            raise failure
        return self._plan.combine([self._answers[index] for index in range(len(self._answers))])

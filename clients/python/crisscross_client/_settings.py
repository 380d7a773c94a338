"""What the sync and the async client share: their settings, their headers, the record of
the last answer, and turning a failed exchange into an exception.

A client given no ``base_url`` reads :data:`URL_ENV` (else :data:`DEFAULT_BASE_URL`), one
given no ``api_key`` reads :data:`API_KEY_ENV`, and one given no ``acks`` reads
:data:`ACKS_ENV`; explicit arguments win (see :func:`resolve_base_url`, :func:`resolve_api_key`,
:func:`resolve_acks`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any, get_args

import httpx

from crisscross_client._calls import Call
from crisscross_client._collection_models import Acks
from crisscross_client._transport import RetryPolicy
from crisscross_client._written_seqs import WrittenSeqs
from crisscross_client.bulk import ServiceLimits
from crisscross_client.errors import ClientTimeoutError, ConnectionFailedError, CrisscrossError
from crisscross_client.response_info import LastResponse, ResponseInfo

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
USER_AGENT = "crisscross-client/0.1"
URL_ENV = "CRISSCROSS_URL"
"""The environment variable a client without ``base_url`` reads the service root from."""
API_KEY_ENV = "CRISSCROSS_API_KEY"
"""The environment variable a client without ``api_key`` reads its key from."""
ACKS_ENV = "CRISSCROSS_ACKS"
"""The environment variable a client without ``acks`` reads its writes' default from."""


def checked_url(value: str, name: str) -> str:
    """``value`` without trailing slashes if it is an ``http(s)://host[:port][/prefix]`` URL;
    ``ValueError`` naming ``name`` (the argument or environment variable) if not."""
    text = value.strip()
    if not text:
        raise ValueError(f"{name} is empty: give the service root, e.g. {DEFAULT_BASE_URL}")
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError) as error:
        raise ValueError(
            f"{name}={value!r} is not a URL ({error}); e.g. {DEFAULT_BASE_URL}"
        ) from None
    if url.scheme not in ("http", "https") or not url.host or url.query or url.fragment:
        raise ValueError(
            f"{name}={value!r} is not a service root: expected http(s)://host[:port][/prefix], "
            f"e.g. {DEFAULT_BASE_URL}"
        )
    return text.rstrip("/")


def checked_timeout(timeout: float, name: str = "timeout") -> float:
    """``timeout`` (seconds) if it is a positive number; ``ValueError`` naming ``name`` if not."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"{name} is a number of seconds, got {timeout!r}")
    if math.isnan(timeout) or timeout <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def resolve_base_url(base_url: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The service root: ``base_url`` if given, else :data:`URL_ENV` if set, else
    :data:`DEFAULT_BASE_URL`; ``ValueError`` naming the argument or the variable when it is
    empty or not an ``http(s)`` URL."""
    if base_url is not None:
        return checked_url(base_url, "base_url")
    if URL_ENV in environ:
        return checked_url(environ[URL_ENV], URL_ENV)
    return DEFAULT_BASE_URL


def resolve_api_key(api_key: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The key: ``api_key`` if given, else :data:`API_KEY_ENV` unless it is unset or empty (a
    client given an ``Authorization`` header in ``headers`` does not read it)."""
    if api_key is not None:
        return api_key
    return environ.get(API_KEY_ENV, "").strip() or None


def checked_acks(value: str, name: str = "acks") -> Acks:
    """``value`` if it is an acknowledgement policy (``leader``, ``majority``, ``all``);
    ``ValueError`` naming ``name`` (the argument or environment variable) if not."""
    if value not in get_args(Acks):
        raise ValueError(f"{name} must be one of leader, majority, all; got {value!r}")
    return value  # type: ignore[return-value]


def resolve_acks(acks: str | None, environ: Mapping[str, str] = os.environ) -> Acks | None:
    """The default ``acks`` of writes: ``acks`` if given, else :data:`ACKS_ENV` unless it is
    unset or empty, else ``None`` (the collection's policy, else the server's default_acks);
    ``ValueError`` naming the argument or the variable for anything but ``leader``,
    ``majority`` or ``all``."""
    if acks is not None:
        return checked_acks(acks)
    value = environ.get(ACKS_ENV, "").strip()
    return checked_acks(value, ACKS_ENV) if value else None


class ClientSettings:
    """A client's settings.

    Args:
        base_url: the service root (``None``: :func:`resolve_base_url`).
        api_key: sent as ``Authorization: Bearer <key>`` (a read, write or admin key;
            ``None``: :func:`resolve_api_key`).
        timeout: seconds per request (each attempt).
        max_retries: retries after the first attempt (see :class:`RetryPolicy`).
        retry: the whole retry policy (overrides ``max_retries``).
        limits: the service's per-request limits used to cut long inputs.
        headers: more headers sent with every request.
        acks: the default ``?acks=`` of writes (``None``: :func:`resolve_acks`).
        read_your_writes: whether reads send ``X-Min-Seq`` for the collections this client
            wrote (:mod:`crisscross_client._written_seqs`).
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        retry: RetryPolicy | None,
        limits: ServiceLimits | None,
        headers: Mapping[str, str] | None,
        *,
        acks: str | None = None,
        read_your_writes: bool = True,
    ) -> None:
        self.base_url = resolve_base_url(base_url)
        self.acks = resolve_acks(acks)
        self.read_your_writes = bool(read_your_writes)
        self.written = WrittenSeqs()
        self.timeout = checked_timeout(timeout)
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.limits = limits or ServiceLimits()
        self.headers = {"user-agent": USER_AGENT, **(headers or {})}
        if api_key is None and not self._authorised:
            api_key = resolve_api_key(None)  # an Authorization header given is not overridden
        if api_key is not None:
            self.headers["authorization"] = f"Bearer {api_key}"
        self.last = LastResponse()
        self.max_connections: int | None = None

    def with_options(
        self,
        *,
        timeout: float | None,
        max_retries: int | None,
        acks: str | None = None,
    ) -> ClientSettings:
        """A copy with another ``timeout``, ``max_retries`` (the rest of the retry policy
        kept) and/or default ``acks``; it shares the headers, the record of the last answer
        and the sequence numbers written (read-your-writes)."""
        changed = copy.copy(self)
        if acks is not None:
            changed.acks = checked_acks(acks)
        if timeout is not None:
            changed.timeout = checked_timeout(timeout)
        if max_retries is not None:
            if max_retries < 0:
                raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
            changed.retry = dataclasses.replace(self.retry, max_retries=max_retries)
        return changed

    @property
    def _authorised(self) -> bool:
        """Whether the headers carry an ``Authorization`` (a key)."""
        return any(name.lower() == "authorization" for name in self.headers)

    def describe(self) -> str:
        """The settings as a client's repr shows them, the key masked."""
        key = "'***'" if self._authorised else "None"
        shown = (
            f"base_url={self.base_url!r}, api_key={key}, timeout={self.timeout!r}, "
            f"max_retries={self.retry.max_retries}"
        )
        if self.acks is not None:
            shown += f", acks={self.acks!r}"
        if not self.read_your_writes:
            shown += ", read_your_writes=False"
        return shown

    def pool(self, max_connections: int) -> dict[str, Any]:
        """The arguments of ``httpx.Client`` (or ``httpx.AsyncClient``) for these settings and
        a pool of ``max_connections`` (kept as :attr:`max_connections`)."""
        self.max_connections = max_connections
        return {
            "base_url": self.base_url,
            "headers": self.headers,
            "timeout": httpx.Timeout(self.timeout),
            "limits": httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        }

    def record(
        self,
        call: Call[Any],
        response: httpx.Response | None,
        elapsed_s: float,
        attempts: int,
    ) -> None:
        """Keep the final exchange of ``call`` as the current context's last answer."""
        self.last.set(
            ResponseInfo(
                method=call.method,
                url=call.url(self.base_url),
                status=None if response is None else response.status_code,
                headers=httpx.Headers() if response is None else response.headers,
                elapsed_s=elapsed_s,
                attempts=attempts,
                response=response,
            )
        )

    def failure(self, call: Call[Any], error: httpx.TransportError) -> CrisscrossError:
        """The exception for a request that got no answer."""
        kind = (
            ClientTimeoutError
            if isinstance(error, httpx.TimeoutException)
            else ConnectionFailedError
        )
        return kind(
            f"no answer: {type(error).__name__}: {error}",
            method=call.method,
            url=call.url(self.base_url),
        )

"""The client's one exception hierarchy.

Every failure a call can end in is a :class:`CrisscrossError`. An answer with an error status
becomes the subclass of its status (and, for some codes, of its code: 503 ``overloaded``,
``not_ready``, ``no_quorum``, ``replication_timeout``, ``replica_behind``; 409
``filter_not_applicable``, ``promotion_refused``; 421 ``not_leader``), carrying the service's
error body ``{"error": {"code", "message", "request_id", "type", "param"}}`` and what some
codes say in headers (``x-leader``, ``x-seq``); a request that got no answer (connection
refused, reset, timed out) is a :class:`ConnectionFailedError` (:class:`ClientTimeoutError`
past the timeout); a 2xx answer the client cannot read is a :class:`BadResponseError`. Each
class also has a short name (``NotFound`` for ``NotFoundError``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LEADER_HEADER = "x-leader"
"""On a 421 ``not_leader``: the URL of the leader that takes the write."""
SEQ_HEADER = "x-seq"
"""On a 503 ``replication_timeout``: the sequence number the write holds on the leader."""


class CrisscrossError(Exception):
    """A call failed.

    Attributes:
        status: the HTTP status (``None`` when no answer came).
        code: the service's error code (``invalid_input``, ``overloaded``, ...), if any.
        message: what went wrong (the service's message, or the raw body).
        request_id: the service's request id (body or ``x-request-id``), if any.
        param: the request field at fault, where the service names one.
        error_type: OpenAI's error type (``invalid_request_error``, ...), if given.
        retry_after: the ``Retry-After`` the answer asked for, seconds, if any.
        method, url: the request that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        url: str | None = None,
        param: str | None = None,
        error_type: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.param = param
        self.error_type = error_type
        self.retry_after = retry_after
        self.method = method
        self.url = url
        where = f"{method} {url} -> " if method and url else ""
        what = f"{status} {code or 'error'}: " if status is not None else ""
        suffix = f" (request_id={request_id})" if request_id else ""
        super().__init__(f"{where}{what}{message}{suffix}")

    def read_headers(self, headers: Mapping[str, str]) -> None:
        """Take what this kind of error carries in the answer's headers (nothing here; see
        :class:`NotLeaderError`, :class:`ReplicationTimeoutError`)."""


class ConnectionFailedError(CrisscrossError):
    """No answer: the connection was refused, broken or timed out."""


class ClientTimeoutError(ConnectionFailedError):
    """No answer within the client's timeout."""


class BadResponseError(CrisscrossError):
    """A 2xx answer whose body is not what the route documents."""


class BadRequestError(CrisscrossError):
    """4xx: the request itself is wrong (400, and the base of 413, 415, 422)."""


class InvalidInputError(BadRequestError):
    """422 ``invalid_input``: the request breaks the documented schema or a limit."""


class PayloadTooLargeError(BadRequestError):
    """413 ``payload_too_large``: a body, image or header over its limit."""


class UnsupportedMediaTypeError(BadRequestError):
    """415 ``unsupported_media_type``: an image format or content type the service refuses."""


class UnauthorizedError(CrisscrossError):
    """401 ``unauthorized``: the route needs an API key and none was sent."""


class ForbiddenError(CrisscrossError):
    """403 ``forbidden``: the key is wrong, or too weak for the route (admin, manage)."""


class NotFoundError(CrisscrossError):
    """404 ``not_found``: an unknown variant, collection or item."""


class MethodNotAllowedError(CrisscrossError):
    """405: the path does not take this method."""


class RequestTimeoutError(CrisscrossError):
    """408 ``request_timeout``: the service gave up reading the request."""


class ConflictError(CrisscrossError):
    """409: the request names things that exist but conflict with what is served
    (``ambiguous_name``, ``collection_exists``, ``dimension_mismatch``, ...)."""


class FilterNotApplicableError(ConflictError):
    """409 ``filter_not_applicable``: the filter does not fit the collection's fields (a field
    it lacks, an operand of another type than the field's, a range on a field without an
    order); ``param`` says where in the filter (``filter.field``, ``filter.and.1.eq``). A
    filter that is wrong whatever is served (a malformed one, a range no value satisfies) is
    422 :class:`InvalidInputError`."""


class PromotionRefusedError(ConflictError):
    """409 ``promotion_refused``: ``promote()`` found no majority granting this follower the
    next term (a member holds writes it lacks, or too few answered); it goes on as before.
    Promote the most advanced follower (``replication_status().collections``) instead."""


class NotLeaderError(CrisscrossError):
    """421 ``not_leader``: this server is a follower (or a replaced, fenced leader) and takes
    no writes, nor collection creations, drops or new fields. ``leader`` is the leader's URL
    (the answer's ``x-leader`` header; ``None`` when the server knows none). The client
    re-sends a write to that leader once by itself, so this is raised when no leader was
    named, or the one named refused too."""

    leader: str | None = None

    def read_headers(self, headers: Mapping[str, str]) -> None:
        """``leader`` from ``x-leader``."""
        self.leader = headers.get(LEADER_HEADER) or None


class RateLimitedError(CrisscrossError):
    """429: too many requests (a proxy in front of the service)."""


class ServerError(CrisscrossError):
    """5xx: the service (or a proxy in front of it) failed."""


class ServiceUnavailableError(ServerError):
    """503: overloaded, not ready, shards of a sharded collection not answering
    (``shards_unavailable``), or a write that could not be made durable."""


class OverloadedError(ServiceUnavailableError):
    """503 ``overloaded``: admission refused; retry after ``retry_after``."""


class NotReadyError(ServiceUnavailableError):
    """503 ``not_ready``: starting or shutting down."""


class NoQuorumError(ServiceUnavailableError):
    """503 ``no_quorum``: a leader that no majority of its replica set follows now (one may
    have been promoted in its place) took no write; retry after ``retry_after`` (the client
    does), or find the new leader."""


class ReplicationTimeoutError(ServiceUnavailableError):
    """503 ``replication_timeout``: the write is durable and visible on the leader, as sequence
    number ``seq`` (the ``x-seq`` header), but fewer replicas than its ``acks`` asked for held
    it within the server's ack_timeout_s. Sent again with the same ``Idempotency-Key`` (the
    client's retries do) it is applied once and waits for the replicas again."""

    seq: int | None = None

    def read_headers(self, headers: Mapping[str, str]) -> None:
        """``seq`` from ``x-seq``."""
        value = headers.get(SEQ_HEADER, "").strip()
        self.seq = int(value) if value.isdigit() else None


class ReplicaBehindError(ServiceUnavailableError):
    """503 ``replica_behind``: this replica had not applied the sequence number the read
    asked for (``X-Min-Seq``: read-your-writes) within the server's read_wait_s; retry after
    ``retry_after`` (the client does), or read from the leader."""


# Short names for the same classes.
ConnectionFailed = ConnectionFailedError
BadResponse = BadResponseError
BadRequest = BadRequestError
InvalidInput = InvalidInputError
PayloadTooLarge = PayloadTooLargeError
UnsupportedMediaType = UnsupportedMediaTypeError
Unauthorized = UnauthorizedError
Forbidden = ForbiddenError
NotFound = NotFoundError
MethodNotAllowed = MethodNotAllowedError
RequestTimeout = RequestTimeoutError
Conflict = ConflictError
FilterNotApplicable = FilterNotApplicableError
PromotionRefused = PromotionRefusedError
NotLeader = NotLeaderError
RateLimited = RateLimitedError
ServiceUnavailable = ServiceUnavailableError
Overloaded = OverloadedError
NotReady = NotReadyError
NoQuorum = NoQuorumError
ReplicationTimeout = ReplicationTimeoutError
ReplicaBehind = ReplicaBehindError
Timeout = ClientTimeoutError


_BY_STATUS: Mapping[int, type[CrisscrossError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: InvalidInputError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}

_BY_CODE: Mapping[tuple[int, str], type[CrisscrossError]] = {
    (503, "overloaded"): OverloadedError,
    (503, "not_ready"): NotReadyError,
    (503, "no_quorum"): NoQuorumError,
    (503, "replication_timeout"): ReplicationTimeoutError,
    (503, "replica_behind"): ReplicaBehindError,
    (409, "filter_not_applicable"): FilterNotApplicableError,
    (409, "promotion_refused"): PromotionRefusedError,
    (421, "not_leader"): NotLeaderError,
}
"""The codes with a class of their own, a subclass of their status's class."""


def error_class(status: int, code: str | None) -> type[CrisscrossError]:
    """The exception class of an error answer with ``status`` and error ``code``."""
    if code is not None and (status, code) in _BY_CODE:
        return _BY_CODE[(status, code)]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    if status >= 400:
        return BadRequestError
    return CrisscrossError


def error_from_answer(
    status: int,
    body: Any,
    text: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
    method: str | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> CrisscrossError:
    """The exception for an error answer: its parsed JSON ``body`` (``None`` when it was not
    JSON), its raw ``text``, the ``x-request-id`` header, and the answer's other ``headers``
    (``x-leader``, ``x-seq``)."""
    code: str | None = None
    message = text[:500]
    param = error_type = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = body["error"]
        code = None if detail.get("code") is None else str(detail["code"])
        message = str(detail.get("message", message))
        request_id = str(detail.get("request_id") or request_id or "") or None
        param = None if detail.get("param") is None else str(detail["param"])
        error_type = None if detail.get("type") is None else str(detail["type"])
    error = error_class(status, code)(
        message,
        status=status,
        code=code,
        request_id=request_id,
        retry_after=retry_after,
        method=method,
        url=url,
        param=param,
        error_type=error_type,
    )
    error.read_headers(headers or {})
    return error

"""The client's one exception hierarchy.

Every failure a call can end in is a :class:`CrisscrossError`. An answer with an error status
becomes the subclass of its status (and, for some codes, of its code: 503 ``overloaded``, 409
``filter_not_applicable``), carrying the service's error body ``{"error": {"code", "message",
"request_id", "type", "param"}}``; a request that got no answer (connection
refused, reset, timed out) is a :class:`ConnectionFailedError` (:class:`ClientTimeoutError`
past the timeout); a 2xx answer the client cannot read is a :class:`BadResponseError`. Each
class also has a short name (``NotFound`` for ``NotFoundError``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
RateLimited = RateLimitedError
ServiceUnavailable = ServiceUnavailableError
Overloaded = OverloadedError
NotReady = NotReadyError
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
    (409, "filter_not_applicable"): FilterNotApplicableError,
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
) -> CrisscrossError:
    """The exception for an error answer: its parsed JSON ``body`` (``None`` when it was not
    JSON), its raw ``text``, and the ``x-request-id`` header."""
    code: str | None = None
    message = text[:500]
    param = error_type = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        code = None if error.get("code") is None else str(error["code"])
        message = str(error.get("message", message))
        request_id = str(error.get("request_id") or request_id or "") or None
        param = None if error.get("param") is None else str(error["param"])
        error_type = None if error.get("type") is None else str(error["type"])
    return error_class(status, code)(
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

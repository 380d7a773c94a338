"""Python client for the Crisscross multimodal vector-search service.

:class:`Client` (sync) and :class:`AsyncClient` (asyncio) call every public route of the v1
API and answer with the models of :mod:`crisscross_client.models`; failures raise
:class:`CrisscrossError` subclasses (:mod:`crisscross_client.errors`).
"""

from crisscross_client._requests import pack_vector
from crisscross_client._transport import RetryPolicy, retry_after_seconds
from crisscross_client.async_client import AsyncClient
from crisscross_client.bulk import ServiceLimits
from crisscross_client.client import Client
from crisscross_client.errors import (
    BadRequest,
    BadRequestError,
    BadResponse,
    BadResponseError,
    ClientTimeoutError,
    Conflict,
    ConflictError,
    ConnectionFailed,
    ConnectionFailedError,
    CrisscrossError,
    Forbidden,
    ForbiddenError,
    InvalidInput,
    InvalidInputError,
    MethodNotAllowed,
    MethodNotAllowedError,
    NotFound,
    NotFoundError,
    NotReady,
    NotReadyError,
    Overloaded,
    OverloadedError,
    PayloadTooLarge,
    PayloadTooLargeError,
    RateLimited,
    RateLimitedError,
    RequestTimeout,
    RequestTimeoutError,
    ServerError,
    ServiceUnavailable,
    ServiceUnavailableError,
    Timeout,
    Unauthorized,
    UnauthorizedError,
    UnsupportedMediaType,
    UnsupportedMediaTypeError,
)
from crisscross_client.models import (
    EmbedResponse,
    ItemRef,
    SearchRequest,
    SearchResponse,
    SearchResult,
    WriteItem,
)
from crisscross_client.response_info import ResponseInfo

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "BadRequest",
    "BadRequestError",
    "BadResponse",
    "BadResponseError",
    "Client",
    "ClientTimeoutError",
    "Conflict",
    "ConflictError",
    "ConnectionFailed",
    "ConnectionFailedError",
    "CrisscrossError",
    "EmbedResponse",
    "Forbidden",
    "ForbiddenError",
    "InvalidInput",
    "InvalidInputError",
    "ItemRef",
    "MethodNotAllowed",
    "MethodNotAllowedError",
    "NotFound",
    "NotFoundError",
    "NotReady",
    "NotReadyError",
    "Overloaded",
    "OverloadedError",
    "PayloadTooLarge",
    "PayloadTooLargeError",
    "RateLimited",
    "RateLimitedError",
    "RequestTimeout",
    "RequestTimeoutError",
    "ResponseInfo",
    "RetryPolicy",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "ServerError",
    "ServiceLimits",
    "ServiceUnavailable",
    "ServiceUnavailableError",
    "Timeout",
    "Unauthorized",
    "UnauthorizedError",
    "UnsupportedMediaType",
    "UnsupportedMediaTypeError",
    "WriteItem",
    "__version__",
    "pack_vector",
    "retry_after_seconds",
]

"""The service's domain errors: what the catalog, the search core, the batchers and image
decoding raise when a request cannot be served.

They say what went wrong in the domain's words (an unknown variant, a missing tower, a full
queue) and carry no HTTP status: :mod:`service.http.errors` alone maps each class to an error code
and a status. A message may name where in the request the fault is (``query.image``) when the
caller gave that label; the domain never reads request fields itself.
"""

from __future__ import annotations

from typing import Literal

from encoders.image_decode import DecodeFailure


class DomainError(Exception):
    """Base of the errors a client's request can cause; ``message`` is safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFoundError(DomainError):
    """An unknown variant, collection, item, bundle or bundle version."""


class InvalidQueryError(DomainError):
    """The request names things that exist but cannot be served together: no variant named
    where several are loaded without a default, a side whose tower the variant lacks, a vector
    of the wrong dimension, an input the encoder gives no finite vector for."""


class SearchParamNotApplicableError(DomainError):
    """A request's search parameters do not fit the collection's index: ``nprobe`` on an index
    that is not IVF (or above its ``nlist``), ``ef_search`` on one that is not HNSW."""


class OverloadedError(DomainError):
    """The encoder's queue is full, or the request's deadline passed while it waited; retry
    after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ShuttingDownError(DomainError):
    """The service is draining and admits no new work; retry elsewhere or later."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class NotReadyError(DomainError):
    """The catalog is not loaded yet (or failed to load, or the server drains); retry after
    ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BundleRejectedError(DomainError):
    """A bundle version cannot replace the served one (corrupt, or it does not fit the loaded
    encoders); the served version keeps serving."""


RefusalReason = DecodeFailure | Literal["invalid_base64"]
"""Why an image payload was refused: a decode failure, or base64 that does not decode."""


class ImageRefusedError(DomainError):
    """A client's image was refused; ``reason`` says why (the refusal counter's label, and the
    key of its status in :mod:`service.http.errors`)."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.reason: RefusalReason = reason


MAX_QUOTED_CHARS = 200


def quoted(value: str) -> str:
    """A client-supplied name or id fit to quote in a message: repr-quoted, at most
    :data:`MAX_QUOTED_CHARS` characters."""
    if len(value) > MAX_QUOTED_CHARS:
        return repr(value[:MAX_QUOTED_CHARS]) + "…"
    return repr(value)

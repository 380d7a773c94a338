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
    """Base of the errors a client's request can cause; ``message`` is safe to show.

    ``param`` names the one request field at fault (``filter.and.0.eq``, ``query.vector``,
    ``variant``) where the error concerns one, as the caller labelled it; the error body
    carries it as OpenAI's ``param``. None where the error concerns no one field."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class NotFoundError(DomainError):
    """An unknown variant, collection, item, bundle or bundle version."""


class InvalidQueryError(DomainError):
    """The request cannot be served as it is. This class itself: its input is wrong whatever is
    served (an input the encoder gives no finite vector for, a vector of zero norm, a filter
    over its size limits or a range no value satisfies). Its subclasses below: a well-formed
    request that conflicts with what this service serves — the things it names exist, but not
    in a combination the loaded variants and collections can answer, and a service serving
    otherwise (another variant, index or fields) would answer it."""


class TowerMissingError(InvalidQueryError):
    """A side needs a tower (text or image) the variant does not have."""


class AmbiguousNameError(InvalidQueryError):
    """A name matches several served things and the request does not say which: a bare
    collection name several served collections answer to, or no variant named where several are
    loaded without a default. The message lists the choices."""


class VariantMismatchError(InvalidQueryError):
    """A qualified collection name and a ``variant`` that does not embed that collection."""


class DimensionMismatchError(InvalidQueryError):
    """A client's vector whose length is not the variant's dimension."""


class FilterNotApplicableError(InvalidQueryError):
    """A filter that does not fit the collection's fields: an unknown field, an operand of
    another type than the field's, a range on a field without an order."""


class FieldMismatchError(InvalidQueryError):
    """An item's metadata does not fit its collection's declared fields: a field the collection
    lacks, or a value of another type than the field's."""


class SearchParamNotApplicableError(InvalidQueryError):
    """A request's search parameters do not fit the collection's index: ``nprobe`` on an index
    that is not IVF (or above its ``nlist``), ``ef_search`` on one that is not HNSW."""


class LeverNotApplicableError(InvalidQueryError):
    """A request's quality levers do not fit what is served: keywords on a field the collection
    lacks or that holds no text, a re-rank by a variant that does not serve the collection, a
    re-rank by another variant of a client's vector."""


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


class ShardsUnavailableError(DomainError):
    """Shards of a sharded collection did not answer a search in time (or failed), and the
    collection's missing-shards policy refuses an answer without them; ``missing`` names them.
    Retry after ``retry_after_s`` seconds."""

    def __init__(self, message: str, missing: tuple[str, ...], retry_after_s: int) -> None:
        super().__init__(message)
        self.missing = missing
        self.retry_after_s = retry_after_s


class BundleRejectedError(DomainError):
    """A bundle version cannot replace the served one (corrupt, or it does not fit the loaded
    encoders); the served version keeps serving."""


class CollectionExistsError(DomainError):
    """A collection of the name asked for exists already (or a served bundle collection has
    that name)."""


class CollectionLimitError(DomainError):
    """Creating one more live collection would pass ``max_collections``."""


class CollectionEmptyError(DomainError):
    """The live collection holds no item, and the operation needs one (a snapshot)."""


class WritesUnavailableError(DomainError):
    """This server takes no writes: no ``collections_dir``, or a process layout where a log
    could not have one owner; the message says which."""


class WriteFailedError(DomainError):
    """The collection's log could not be written (a failed write or fsync): nothing of the
    request is acknowledged, and the collection takes no more writes until the service
    restarts and replays what reached the disk."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class NotLeaderError(DomainError):
    """This server does not take writes: it follows a leader (``leader`` names its URL), or
    it led and learned of a later term (fenced; ``leader`` is None until it follows one)."""

    def __init__(self, message: str, leader: str | None) -> None:
        super().__init__(message)
        self.leader = leader


class NoQuorumError(DomainError):
    """A leader of several replicas that no majority of them follows now takes no write (it
    may have been replaced by a promotion); retry after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ReplicationTimeoutError(DomainError):
    """A write is durable and visible on the leader (sequence ``seq``), but not enough replicas
    acknowledged it in time; retried with the same idempotency key it applies once."""

    def __init__(self, message: str, seq: int, retry_after_s: int) -> None:
        super().__init__(message)
        self.seq = seq
        self.retry_after_s = retry_after_s


class ReplicaBehindError(DomainError):
    """This replica had not applied the sequence number a read needs within its wait; retry
    after ``retry_after_s`` seconds, or ask another replica."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PromotionRefusedError(DomainError):
    """A follower could not become the leader: no majority of the replica set granted its
    term (one is down, or holds writes it lacks); it goes on following."""


RefusalReason = DecodeFailure | Literal["invalid_base64"]
"""Why an image payload was refused: a decode failure, or base64 that does not decode."""


class ImageRefusedError(DomainError):
    """A client's image was refused; ``reason`` says why (the refusal counter's label, and the
    key of its status in :mod:`service.http.errors`)."""

    def __init__(self, reason: RefusalReason, message: str, *, param: str | None = None) -> None:
        super().__init__(message, param=param)
        self.reason: RefusalReason = reason


MAX_QUOTED_CHARS = 200


def quoted(value: str) -> str:
    """A client-supplied name or id fit to quote in a message: repr-quoted, at most
    :data:`MAX_QUOTED_CHARS` characters."""
    if len(value) > MAX_QUOTED_CHARS:
        return repr(value[:MAX_QUOTED_CHARS]) + "…"
    return repr(value)

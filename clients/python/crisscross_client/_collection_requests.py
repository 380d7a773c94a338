"""What the methods on live collections send and how their answers are read (the builders
:class:`~crisscross_client._collection_methods.CollectionMethods` calls): create, read and drop
a collection, write and read its items, scroll and count them, declare its fields, compact and
snapshot it. Each builds a :class:`~crisscross_client._calls.Plan`, as in
:mod:`crisscross_client._requests`.

Item writes (upsert, delete, patch) each carry an ``Idempotency-Key`` made here, one per
request (per batch of a long upsert), which every retry of that request sends unchanged, and
the ``?acks=`` asked for; reads name the live collections they read, for read-your-writes
(:mod:`crisscross_client._written_seqs`).
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from crisscross_client import models as m
from crisscross_client._calls import Plan, model_call, single
from crisscross_client.bulk import ServiceLimits, UpsertError, cut, json_size
from crisscross_client.errors import CrisscrossError
from crisscross_client.images import image_base64

M = TypeVar("M", bound=BaseModel)

IDEMPOTENCY_HEADER = "Idempotency-Key"
"""The header of an item write: the service applies a write with a key it remembers once."""


def idempotency_key() -> str:
    """A new ``Idempotency-Key``: a random uuid4 in hex (32 characters)."""
    return uuid.uuid4().hex


def write_options(collection: str, acks: m.Acks | None) -> dict[str, Any]:
    """The :func:`~crisscross_client._calls.model_call` keywords of one item write of
    ``collection``: a fresh idempotency key (so it is idempotent, retried whatever failed),
    ``?acks=`` when asked, its ``seq`` remembered, and a 421 followed to the leader."""
    return {
        "headers": {IDEMPOTENCY_HEADER: idempotency_key()},
        "params": None if acks is None else {"acks": acks},
        "idempotent": True,
        "writes": collection,
        "to_leader": True,
    }


def create_collection(
    body: m.CreateCollectionRequest,
) -> Plan[m.LiveCollectionInfo, m.LiveCollectionInfo]:
    """``POST /v1/collections`` (not idempotent: a repeat is 409 ``collection_exists``; sent
    to the leader a follower names)."""
    return single(
        model_call(
            "create_collection",
            m.LiveCollectionInfo,
            body,
            idempotent=False,
            resets=body.name,
            to_leader=True,
        )
    )


def write_item(value: m.WriteItem | Mapping[str, Any]) -> m.WriteItem:
    """An upsert item from a model or a dict whose ``image`` may be any image input and whose
    ``vector`` may be packed (``vector_format="base64"`` is :func:`pack_vector`)."""
    if isinstance(value, m.WriteItem):
        return value
    fields = dict(value)
    image = fields.get("image")
    if image is not None and not isinstance(image, str):
        fields["image"] = image_base64(image)
    if fields.get("vector") is not None:
        fields["vector"] = [float(v) for v in fields["vector"]]
    return m.WriteItem.model_validate(fields)


def pack_vector(vector: Sequence[float]) -> str:
    """A vector as ``vector_base64`` takes it: standard base64 of little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


ProgressCallback = Callable[[int, int], None]
"""``on_progress(done_items, total_items)`` of :meth:`~crisscross_client.Client.upsert`."""


def upsert(
    collection: str,
    items: Sequence[m.WriteItem | Mapping[str, Any]],
    limits: ServiceLimits,
    *,
    batch_size: int | None = None,
    parallelism: int = 1,
    on_progress: ProgressCallback | None = None,
    acks: m.Acks | None = None,
) -> Plan[m.UpsertResponse, m.UpsertResponse]:
    """``POST /v1/collections/{name}/items`` in batches of at most ``batch_size`` items (default
    and most: ``limits.max_write_items``) that fit ``limits`` (body bytes, images), sent
    ``parallelism`` at a time; ``on_progress(done, total)`` after each acknowledged batch.
    Each batch is all or nothing and idempotent (its own idempotency key; items are replaced
    by id); a failed batch raises :class:`~crisscross_client.bulk.UpsertError` saying how many
    items were acknowledged."""
    if batch_size is not None and not 1 <= batch_size <= limits.max_write_items:
        raise ValueError(
            f"batch_size must be 1..{limits.max_write_items} (the service's max_write_items), "
            f"got {batch_size}"
        )
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ValueError(f"parallelism must be a positive integer, got {parallelism!r}")
    written = [write_item(entry) for entry in items]
    bodies = [entry.body() for entry in written]
    runs = list(
        cut(
            list(zip(written, bodies, strict=True)),
            max_count=batch_size or limits.max_write_items,
            max_bytes=limits.max_write_body_bytes,
            size=lambda pair: json_size(pair[1]),
            max_images=limits.max_images_per_request,
            images=lambda pair: int(pair[0].image is not None),
        )
    )
    batches = [[entry for entry, _ in run] for run in runs] or [[]]
    calls = [
        model_call(
            "upsert",
            m.UpsertResponse,
            m.UpsertRequest(items=batch),
            name=collection,
            **write_options(collection, acks),
        )
        for batch in batches
    ]
    total = len(written)
    done = 0

    def progress(index: int, _: m.UpsertResponse) -> None:
        nonlocal done
        done += len(batches[index])
        if on_progress is not None:
            on_progress(done, total)

    def failed(error: Exception, answered: list[int]) -> Exception:
        if not isinstance(error, CrisscrossError):
            return error
        acknowledged = set(answered)
        pending = [
            entry.id
            for index, batch in enumerate(batches)
            if index not in acknowledged
            for entry in batch
        ]
        return UpsertError(
            error,
            acknowledged=sum(len(batches[index]) for index in acknowledged),
            total=total,
            pending_ids=pending,
        )

    def combine(answers: list[m.UpsertResponse]) -> m.UpsertResponse:
        upserted = sum(answer.upserted for answer in answers)
        latest = max(answers, key=lambda answer: answer.seq)
        return latest.model_copy(update={"upserted": upserted})

    return Plan(calls, combine, parallelism=parallelism, on_answer=progress, on_failure=failed)


def delete_items(
    collection: str,
    ids: Sequence[str] | None,
    filter: m.FilterInput | None,
    limits: ServiceLimits,
    acks: m.Acks | None = None,
) -> Plan[m.DeleteResponse, m.DeleteResponse]:
    """``POST /v1/collections/{name}/items/delete``: by ids (cut by ``limits``) or by filter
    (what matches when it is logged). Either is idempotent: each request has its idempotency
    key, so a retried delete by filter is applied once, not again to items written since."""
    if (ids is None) == (filter is None):
        raise ValueError("give exactly one of ids and filter")
    if filter is not None:
        body = m.DeleteRequest(filter=filter)
        return single(
            model_call(
                "delete_items",
                m.DeleteResponse,
                body,
                name=collection,
                **write_options(collection, acks),
            )
        )
    assert ids is not None
    runs = list(cut(list(ids), max_count=limits.max_write_items)) or [[]]
    calls = [
        model_call(
            "delete_items",
            m.DeleteResponse,
            m.DeleteRequest(ids=run),
            name=collection,
            **write_options(collection, acks),
        )
        for run in runs
    ]

    def combine(answers: list[m.DeleteResponse]) -> m.DeleteResponse:
        total = sum(answer.deleted for answer in answers)
        return answers[-1].model_copy(update={"deleted": total})

    return Plan(calls, combine)


def get_items(
    collection: str, ids: Sequence[str], include_vectors: bool | None, limits: ServiceLimits
) -> Plan[m.GetResponse, m.GetResponse]:
    """``POST /v1/collections/{name}/items/get``, cut by ``limits``."""
    runs = list(cut(list(ids), max_count=limits.max_write_items)) or [[]]
    calls = [
        model_call(
            "get_items",
            m.GetResponse,
            m.GetRequest(ids=run, include_vectors=include_vectors),
            name=collection,
            reads=(collection,),
        )
        for run in runs
    ]

    def combine(answers: list[m.GetResponse]) -> m.GetResponse:
        stored = [entry for answer in answers for entry in answer.items]
        return answers[-1].model_copy(update={"items": stored})

    return Plan(calls, combine)


def collection_call(
    route: str,
    answer: type[M],
    name: str,
    *,
    idempotent: bool,
    to_leader: bool = False,
    resets: bool = False,
) -> Plan[M, M]:
    """A call of a route under ``/v1/collections/{name}`` without a body (``to_leader``: sent
    to the leader a follower names; ``resets``: it drops the collection)."""
    call = model_call(
        route,
        answer,
        idempotent=idempotent,
        to_leader=to_leader,
        resets=name if resets else None,
        name=name,
    )
    return single(call)


def patch_item(
    collection: str,
    id: str,
    metadata: Mapping[str, Any],
    merge: bool | None,
    acks: m.Acks | None = None,
) -> Plan[m.PatchResponse, m.PatchResponse]:
    """``PATCH /v1/collections/{name}/items/{id}`` (idempotent: its idempotency key, and the
    same patch twice leaves the same metadata)."""
    body = m.PatchRequest(metadata=dict(metadata), merge=merge)
    options = write_options(collection, acks)
    return single(
        model_call("patch_item", m.PatchResponse, body, name=collection, id=id, **options)
    )


def scroll_items(
    collection: str,
    filter: m.FilterInput | None,
    limit: int | None,
    cursor: str | None,
    include_vectors: bool | None,
    include_metadata: bool | None,
    variant: str | None,
) -> Plan[m.ScrollPage, m.ScrollPage]:
    """``POST /v1/collections/{name}/items/scroll``: one page (a read: retried)."""
    body = m.ScrollRequest(
        filter=filter,
        limit=limit,
        cursor=cursor,
        include_vectors=include_vectors,
        include_metadata=include_metadata,
        variant=variant,
    )
    return single(
        model_call("scroll_items", m.ScrollPage, body, name=collection, reads=(collection,))
    )


def count_items(
    collection: str, filter: m.FilterInput | None, variant: str | None
) -> Plan[m.CountResponse, int]:
    """``POST /v1/collections/{name}/items/count``, read as the count."""
    body = m.CountRequest(filter=filter, variant=variant)
    call = model_call("count_items", m.CountResponse, body, name=collection, reads=(collection,))
    return Plan([call], lambda answers: answers[0].count)


def add_fields(
    collection: str, fields: Mapping[str, m.FieldType]
) -> Plan[m.LiveCollectionInfo, m.LiveCollectionInfo]:
    """``PATCH /v1/collections/{name}`` (idempotent: a field declared with the same type is
    left as it is)."""
    body = m.AddFieldsRequest(fields=dict(fields))
    return single(
        model_call("add_fields", m.LiveCollectionInfo, body, name=collection, to_leader=True)
    )

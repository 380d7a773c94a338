"""The public methods on live collections, written once for both clients like every method
(see :mod:`crisscross_client._methods`): create, read and drop a collection, write and read its
items, compact and snapshot it, scroll and count its items, declare its fields.

:class:`CollectionMethods` is a mixin that :class:`~crisscross_client._methods.ClientMethods`
inherits, so :class:`~crisscross_client.Client` and :class:`~crisscross_client.AsyncClient` have
these methods too (:func:`~crisscross_client._endpoint.endpoint` makes each a method of the class
it is read from). Each builds its :class:`~crisscross_client._calls.Plan` with the builders of
:mod:`crisscross_client._collection_requests` and ends with ``timeout``, as every method does:
declared for the signature, applied by the decorator, never read here (hence no ARG002).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crisscross_client import _collection_requests as crq
from crisscross_client import models as m
from crisscross_client._calls import Plan
from crisscross_client._endpoint import endpoint
from crisscross_client._settings import ClientSettings, checked_acks


class CollectionMethods:
    """The methods on live collections (see the module); they read the client's settings."""

    _settings: ClientSettings

    def _acks(self, asked: m.Acks | None) -> m.Acks | None:
        """The ``acks`` of a write: ``asked`` (checked), else the client's default."""
        return self._settings.acks if asked is None else checked_acks(asked)

    # --- live collections -----------------------------------------------------------------------

    @endpoint
    def create_collection(
        self,
        name: str,
        variant: str | None = None,
        dim: int | None = None,
        fields: Mapping[str, m.FieldType] | None = None,
        index: str | None = None,
        *,
        from_snapshot: m.SnapshotRef | Mapping[str, str] | None = None,
        from_bundle: str | None = None,
        acks: m.Acks | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, m.LiveCollectionInfo]:
        """``POST /v1/collections`` (admin key): a live collection embedded by ``variant``, or
        of ``dim``-dimensional client vectors, with typed metadata ``fields`` and an ``index``
        factory (``Flat`` or ``IVF<n>,Flat``). ``acks`` is its writes' acknowledgement policy
        (``leader``, ``majority``, ``all``; None: the server's default_acks), which a write
        may override. Not retried once it may have been applied; sent to the leader when a
        follower answers 421 naming it."""
        body = m.CreateCollectionRequest(
            name=name,
            variant=variant,
            dim=dim,
            fields=None if fields is None else dict(fields),
            index=index,
            from_snapshot=None
            if from_snapshot is None
            else m.SnapshotRef.model_validate(from_snapshot),
            from_bundle=from_bundle,
            acks=None if acks is None else checked_acks(acks),
        )
        return crq.create_collection(body)

    @endpoint
    def get_collection(
        self, name: str, *, timeout: float | None = None
    ) -> Plan[Any, m.LiveCollectionInfo]:
        """``GET /v1/collections/{name}``."""
        return crq.collection_call("get_collection", m.LiveCollectionInfo, name, idempotent=True)

    @endpoint
    def delete_collection(
        self, name: str, *, timeout: float | None = None
    ) -> Plan[Any, m.DropResponse]:
        """``DELETE /v1/collections/{name}`` (admin key; sent to the leader when a follower
        answers 421 naming it)."""
        return crq.collection_call(
            "delete_collection", m.DropResponse, name, idempotent=False, to_leader=True, resets=True
        )

    @endpoint
    def upsert(
        self,
        collection: str,
        items: Sequence[m.WriteItem | Mapping[str, Any]],
        *,
        batch_size: int | None = None,
        parallelism: int = 1,
        on_progress: Callable[[int, int], None] | None = None,
        acks: m.Acks | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, m.UpsertResponse]:
        """``POST /v1/collections/{name}/items``: add or replace items by id. Each item has an
        ``id``, exactly one of ``text``, ``image`` (any image input), ``vector`` or
        ``vector_base64`` (:func:`~crisscross_client.pack_vector`), and ``metadata``.

        Long lists go in batches (each all or nothing, with its own ``Idempotency-Key``, so
        retried safely) that fit the service's limits (items, body bytes, images per request).

        Args:
            batch_size: most items per request (default and most: ``limits.max_write_items``).
            parallelism: batches in flight at once (threads of the sync client, tasks of the
                async one; at most the client's ``max_connections``).
            on_progress: called ``on_progress(done_items, total_items)`` after each
                acknowledged batch, in the calling thread or task.
            acks: replicas that hold each batch before it is answered (``leader``,
                ``majority``, ``all``; default: the client's ``acks``, else the collection's).

        Raises:
            UpsertError: a batch failed (after its retries); its ``acknowledged`` items, in
                the batches answered before, are durable, ``pending_ids`` are the rest, and
                ``error`` is the batch's own error. No batch starts after one failed.
        """
        pool = self._settings.max_connections
        if pool is not None and parallelism > pool:
            raise ValueError(
                f"parallelism={parallelism} is more than the client's max_connections={pool}"
            )
        return crq.upsert(
            collection,
            items,
            self._settings.limits,
            batch_size=batch_size,
            parallelism=parallelism,
            on_progress=on_progress,
            acks=self._acks(acks),
        )

    @endpoint
    def delete_items(
        self,
        collection: str,
        ids: Sequence[str] | None = None,
        filter: m.FilterInput | None = None,
        *,
        acks: m.Acks | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, m.DeleteResponse]:
        """``POST /v1/collections/{name}/items/delete``: by ``ids`` or every item a ``filter``
        keeps when the delete is logged. Each request has its ``Idempotency-Key``, so either
        is retried safely (applied once). ``acks``: as :meth:`upsert`."""
        return crq.delete_items(collection, ids, filter, self._settings.limits, self._acks(acks))

    @endpoint
    def get_items(
        self,
        collection: str,
        ids: Sequence[str],
        include_vectors: bool | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[Any, m.GetResponse]:
        """``POST /v1/collections/{name}/items/get``: the items that exist, in order."""
        return crq.get_items(collection, ids, include_vectors, self._settings.limits)

    @endpoint
    def patch_item(
        self,
        collection: str,
        id: str,
        metadata: Mapping[str, Any],
        merge: bool | None = None,
        *,
        acks: m.Acks | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, m.PatchResponse]:
        """``PATCH /v1/collections/{name}/items/{id}``: new metadata, merged (a ``None``
        removes a field) or, with ``merge=False``, replacing it (with an ``Idempotency-Key``,
        retried safely). ``acks``: as :meth:`upsert`."""
        return crq.patch_item(collection, id, metadata, merge, self._acks(acks))

    @endpoint
    def compact(
        self, collection: str, *, timeout: float | None = None
    ) -> Plan[Any, m.CompactResponse]:
        """``POST /v1/collections/{name}/compact`` (admin key)."""
        return crq.collection_call("compact", m.CompactResponse, collection, idempotent=False)

    @endpoint
    def snapshot(
        self, collection: str, *, timeout: float | None = None
    ) -> Plan[Any, m.SnapshotResponse]:
        """``POST /v1/collections/{name}/snapshots`` (admin key)."""
        return crq.collection_call("snapshot", m.SnapshotResponse, collection, idempotent=False)

    # --- scroll, count and fields of a collection -------------------------------------------

    @endpoint
    def scroll_items(
        self,
        collection: str,
        *,
        filter: m.FilterInput | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_vectors: bool | None = None,
        include_metadata: bool | None = None,
        variant: str | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, m.ScrollPage]:
        """``POST /v1/collections/{name}/items/scroll``: one page of the items ``filter``
        keeps (all without one), in row order, ``limit`` of them (the service's default: 100),
        from ``cursor`` (a page's ``next_cursor``; None: the first page). Any collection a
        search can name: live, sharded or a bundle's (``variant`` picks among variants serving
        a bundle name). ``iter_items`` follows the cursors for you."""
        return crq.scroll_items(
            collection, filter, limit, cursor, include_vectors, include_metadata, variant
        )

    @endpoint
    def count_items(
        self,
        collection: str,
        filter: m.FilterInput | None = None,
        *,
        variant: str | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, int]:
        """``POST /v1/collections/{name}/items/count``: how many items ``filter`` keeps (all
        without one): what a search with that filter could return at most."""
        return crq.count_items(collection, filter, variant)

    @endpoint
    def add_fields(
        self,
        collection: str,
        fields: Mapping[str, m.FieldType],
        *,
        timeout: float | None = None,
    ) -> Plan[Any, m.LiveCollectionInfo]:
        """``PATCH /v1/collections/{name}`` (write key): declare new typed metadata ``fields``
        of a live collection, durably. Items written before hold no value of them; fields are
        only added (another type for a declared field is a ``ConflictError``, field_mismatch).
        Idempotent, so retried."""
        return crq.add_fields(collection, fields)

"""Live collections: ``POST /v1/collections`` (create), ``GET``, ``PATCH`` (add fields) and
``DELETE /v1/collections/{name}``, and the writes and reads of their items — upsert, delete by
ids or by filter, get, metadata patch. A write answered 200 is fsynced to the collection's log
and seen by every search after it (:mod:`service.engine.collection.write_path`). Scroll and count
(``items/scroll``, ``items/count``) read any collection a search can name — live, sharded or a
bundle's (:mod:`service.engine.search.scroll`)."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Depends, Response
from starlette.concurrency import run_in_threadpool

from service.engine.collection.live_collections import LiveCollections, LiveEntry
from service.engine.search import scroll as scrolling
from service.engine.writes.collection_creation import (
    NewCollection,
    SnapshotSource,
    create_live_collection,
    served_names,
)
from service.engine.writes.item_writes import (
    NewItem,
    delete_filter_plan,
    delete_ids_plan,
    patch_plan,
    upsert_of,
)
from service.exceptions import WritesUnavailableError, quoted
from service.http.consistency import (
    AcksParam,
    IdempotencyKey,
    MinSeqHeader,
    check_writes,
    read_consistently,
    write_acknowledged,
)
from service.http.dependencies import (
    AnyCollectionName,
    CatalogDep,
    CollectionName,
    ContextDep,
    ItemIdParam,
    StateDep,
    require_json,
)
from service.http.routes import AUTH_ERRORS, error_responses
from service.http.routes.json_route import JsonRoute
from service.http.schemas.collections import (
    AddFieldsRequest,
    CompactResponse,
    CountRequest,
    CountResponse,
    CreateCollectionRequest,
    DeleteRequest,
    DeleteResponse,
    DropResponse,
    GetRequest,
    GetResponse,
    LiveCollectionInfo,
    PatchRequest,
    PatchResponse,
    ReplicaPosition,
    ScrolledItem,
    ScrollRequest,
    ScrollResponse,
    SnapshotResponse,
    StoredItem,
    UpsertRequest,
    UpsertResponse,
)
from service.lifecycle.state import ServiceState

router = APIRouter(tags=["collections"], route_class=JsonRoute)
plain_router = APIRouter(tags=["collections"])

_WRITE_DESCRIPTIONS = {
    409: "The request does not fit the collection or the server: an item's metadata names a "
    "field the collection lacks or a value of another type (field_mismatch), a vector of "
    "another dimension (dimension_mismatch), a text or image for a collection of client "
    "vectors (tower_missing), a filter that does not fit (filter_not_applicable), a name "
    "taken (collection_exists), too many collections (collection_limit), a snapshot of a "
    "collection of no item (collection_empty), or a server without live collections "
    "(writes_unavailable).",
    503: "Not ready, or a high-water mark reached (overloaded: writes waiting for the log, "
    "segment rows, log bytes), or the log failed (write_failed): nothing of the request was "
    "logged; or a leader that no majority of its replicas follows (no_quorum: nothing "
    "logged); or acknowledgements that did not come in ack_timeout_s (replication_timeout: "
    "the write is logged and visible on the leader, x-seq names it; retry with the same "
    "Idempotency-Key). With Retry-After.",
}
WRITE_ERRORS = error_responses(
    *AUTH_ERRORS, 404, 409, 413, 415, 421, 422, 503, descriptions=_WRITE_DESCRIPTIONS
)


def _replica_positions(state: ServiceState, entry: LiveEntry) -> list[ReplicaPosition]:
    """The replicas of ``entry``'s collection this server knows, and how far each applied it."""
    replicas = state.replicas
    name = entry.collection.name
    here = ReplicaPosition(
        url=None if replicas is None else replicas.own_url,
        role="leader" if replicas is None else replicas.role,
        seq=entry.collection.visible_seq,
    )
    if replicas is None:
        return [here]
    status = replicas.status()
    return [here] + [
        ReplicaPosition(url=url, role="follower", seq=positions[name])
        for _, url, _, positions in status.followers
        if name in positions
    ]


def _live(state: ServiceState) -> LiveCollections:
    live = state.searcher.live
    if live is None:
        raise state.not_ready_error()
    return live


@router.post(
    "/v1/collections",
    response_model=LiveCollectionInfo,
    status_code=201,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Create a live collection",
)
async def create_collection(
    body: CreateCollectionRequest, state: StateDep, catalog: CatalogDep
) -> Response:
    """A new collection that takes writes: empty, embedded by a served ``variant`` (texts and
    images are embedded on upsert) or of client vectors of dimension ``dim``; or started from
    a snapshot (``from_snapshot``), whose items become its base. Needs an admin key when keys
    are configured. A name a bundle collection or a live one has is 409 collection_exists."""
    check_writes(state)
    new = NewCollection(
        name=body.name,
        variant=body.variant,
        dim=body.dim,
        fields=dict(body.fields),
        index=body.index,
        from_snapshot=(
            None
            if body.from_snapshot is None
            else SnapshotSource(body.from_snapshot.collection, body.from_snapshot.version)
        ),
        from_bundle=body.from_bundle,
        acks=body.acks,
    )
    entry = await create_live_collection(new, _live(state), catalog, state.settings)
    return Response(
        LiveCollectionInfo.of(entry).model_dump_json(),
        status_code=201,
        media_type="application/json",
    )


@plain_router.get(
    "/v1/collections/{name}",
    response_model=LiveCollectionInfo,
    responses=error_responses(*AUTH_ERRORS, 404, 409, 503),
    summary="A live collection: its size and where its log stands",
)
async def collection_info(name: CollectionName, state: StateDep) -> LiveCollectionInfo:
    """The collection's dimension, variant, fields, item ``count`` and last sequence number."""
    entry = _live(state).require(name)
    return LiveCollectionInfo.of(entry, _replica_positions(state, entry))


@router.patch(
    "/v1/collections/{name}",
    response_model=LiveCollectionInfo,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Add fields to a live collection",
)
async def add_fields(
    body: AddFieldsRequest, name: CollectionName, state: StateDep
) -> LiveCollectionInfo:
    """Declare new typed metadata ``fields``, durably (the spec is replaced atomically and
    fsynced before the answer; it survives a crash and a restart). Items written before hold no
    value of them (``{"field": ..., "exists": false}`` keeps them); items written after the
    answer may set them, and filters on them work before and after a compaction. Fields are
    only added: one declared with another type, or given null, is 409 field_mismatch naming
    it; one declared with the same type is left as it is. A bundle collection takes no fields
    (409 writes_unavailable). Needs a write key when keys are configured."""
    live = _live(state)
    catalog = state.catalog
    check_writes(state)
    if live.get(name) is None and catalog is not None and name in served_names(catalog):
        raise WritesUnavailableError(
            f"{quoted(name)} is a bundle collection: a bundle takes no writes and no new "
            "fields; create a live collection from it (from_bundle) to change it"
        )
    entry = await live.add_fields(name, dict(body.fields), state.settings.max_collection_fields)
    return LiveCollectionInfo.of(entry)


@plain_router.delete(
    "/v1/collections/{name}",
    response_model=DropResponse,
    responses=error_responses(*AUTH_ERRORS, 404, 409, 421, 503),
    summary="Drop a live collection",
)
async def drop_collection(name: CollectionName, state: StateDep) -> DropResponse:
    """Finish its pending writes, then delete it with its log (needs an admin key when keys are
    configured). Searches already running finish on what they hold."""
    check_writes(state)
    await _live(state).drop(name)
    return DropResponse(dropped=name)


@router.post(
    "/v1/collections/{name}/items",
    response_model=UpsertResponse,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Add or replace items",
)
async def upsert_items(
    body: UpsertRequest,
    name: CollectionName,
    state: StateDep,
    catalog: CatalogDep,
    context: ContextDep,
    acks: AcksParam = None,
    idempotency_key: IdempotencyKey = None,
) -> UpsertResponse:
    """All or nothing: every item is checked (id unique in the batch, metadata of declared
    fields and types, a vector of the collection's dimension, a text or image its variant can
    embed) and embedded before anything is logged; any bad item refuses the request, naming it
    (``items.3.vector``). An id that exists is replaced. The answer comes once the write is
    fsynced to the log and every search sees it."""
    check_writes(state)
    entry = _live(state).admit(name, len(body.items))
    items = [
        NewItem(
            item_id=item.id,
            text=item.text,
            image=item.image,
            vector=item.vector,
            metadata=item.metadata,
            where=f"items.{position}",
            vector_base64=item.vector_base64,
        )
        for position, item in enumerate(body.items)
    ]
    operation = await upsert_of(state.searcher, context, catalog, entry, items)
    result = await write_acknowledged(
        state, entry, lambda _view: operation, context, idempotency_key, acks
    )
    state.metrics.writes.labels(name, "upsert", "items").inc(result.done)
    return UpsertResponse(seq=result.seq, upserted=result.done)


@router.post(
    "/v1/collections/{name}/items/delete",
    response_model=DeleteResponse,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Delete items by id or by filter",
)
async def delete_items(
    body: DeleteRequest,
    name: CollectionName,
    state: StateDep,
    context: ContextDep,
    acks: AcksParam = None,
    idempotency_key: IdempotencyKey = None,
) -> DeleteResponse:
    """``ids`` (unknown ones are ignored), or every item the ``filter`` keeps at the moment the
    delete is logged: items written after it are never touched. Answered once durable and
    visible."""
    check_writes(state)
    entry = _live(state).require(name)
    if body.filter is not None:
        plan = delete_filter_plan(entry, body.filter)
    else:
        plan = delete_ids_plan(body.ids or [])
    result = await write_acknowledged(state, entry, plan, context, idempotency_key, acks)
    state.metrics.writes.labels(name, "delete", "items").inc(result.done)
    return DeleteResponse(seq=result.seq, deleted=result.done)


@router.post(
    "/v1/collections/{name}/items/get",
    response_model=GetResponse,
    responses=error_responses(*AUTH_ERRORS, 404, 409, 413, 415, 422, 503),
    dependencies=[Depends(require_json)],
    summary="Stored items by id",
)
async def get_items(
    body: GetRequest, name: CollectionName, state: StateDep, min_seq: MinSeqHeader = None
) -> GetResponse:
    """The items of ``ids`` that exist, in the order asked, as of one sequence number (on a
    replica: at least ``X-Min-Seq``)."""
    _live(state).require(name)  # 404 before any wait
    await read_consistently(state, [name], min_seq)
    view = _live(state).require(name).collection.view()
    items = []
    for item_id in dict.fromkeys(body.ids):
        row = view.row_of(item_id)
        if row is None:
            continue
        items.append(
            StoredItem(
                id=item_id,
                metadata=dict(view.metadata(row)),
                text=view.text(row),
                vector=view.vector(row).tolist() if body.include_vectors else None,
            )
        )
    return GetResponse(items=items, seq=view.seq)


_READ_ERRORS = error_responses(
    *AUTH_ERRORS,
    404,
    409,
    413,
    415,
    422,
    503,
    descriptions={
        422: "Invalid input: the request breaks the schema or a limit the document states "
        "(limit over max_scroll_limit, a filter over its size), or a cursor that is not one, "
        "is another collection's or that the collection can no longer follow (param "
        "'cursor'; start again without it) (invalid_input).",
        503: "Not ready, or shards of a sharded collection that did not answer "
        "(shards_unavailable); with Retry-After.",
    },
)


@router.post(
    "/v1/collections/{name}/items/scroll",
    response_model=ScrollResponse,
    responses=_READ_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Page through a collection's items, by filter",
)
async def scroll_items(
    body: ScrollRequest,
    name: AnyCollectionName,
    state: StateDep,
    catalog: CatalogDep,
    min_seq: MinSeqHeader = None,
) -> ScrollResponse:
    """The items the ``filter`` keeps, in row order (write order), ``limit`` at a time; each
    page's ``next_cursor`` (null on the last page) gives the next. Any collection a search can
    name: live, sharded or a bundle's (``variant`` picks among variants serving a bundle
    name). On a live collection the cursor stays good while it is written: items written
    later come on later pages, items deleted before the scroll reaches them do not, and an
    item replaced after the scroll passed it comes again at its new place; across a
    compaction the scroll goes on at the first item after the cursor that survived it. A
    cursor that cannot be followed (a bundle reloaded to another version, a live collection
    compacted many times or compacted and restarted) is 422 with param 'cursor'. Any key."""
    await read_consistently(state, [name], min_seq)
    target = scrolling.scroll_target(
        catalog, state.searcher.live, state.searcher.sharded, name, body.variant
    )
    scrolling.check_items_filter(target, body.filter)
    page = await run_in_threadpool(
        scrolling.scroll,
        target,
        body.filter,
        body.limit,
        body.cursor,
        include_metadata=body.include_metadata,
        include_vectors=body.include_vectors,
        retry_after_s=state.settings.overload_retry_after_s,
    )
    return ScrollResponse(
        items=[
            ScrolledItem(
                id=item.item_id,
                metadata=None if item.metadata is None else dict(item.metadata),
                vector=None if item.vector is None else item.vector.tolist(),
            )
            for item in page.items
        ],
        next_cursor=page.next_cursor,
    )


@router.post(
    "/v1/collections/{name}/items/count",
    response_model=CountResponse,
    responses=_READ_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Count a collection's items, by filter",
)
async def count_items(
    body: CountRequest,
    name: AnyCollectionName,
    state: StateDep,
    catalog: CatalogDep,
    min_seq: MinSeqHeader = None,
) -> CountResponse:
    """How many items the ``filter`` keeps (every item without one): what a search with that
    filter could return at most. Any collection a search can name. Any key."""
    await read_consistently(state, [name], min_seq)
    target = scrolling.scroll_target(
        catalog, state.searcher.live, state.searcher.sharded, name, body.variant
    )
    scrolling.check_items_filter(target, body.filter)
    kept = await run_in_threadpool(
        scrolling.count,
        target,
        body.filter,
        retry_after_s=state.settings.overload_retry_after_s,
    )
    return CountResponse(count=kept)


@router.patch(
    "/v1/collections/{name}/items/{id}",
    response_model=PatchResponse,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Change an item's metadata without re-embedding it",
)
async def patch_item(
    body: PatchRequest,
    name: CollectionName,
    id: ItemIdParam,
    state: StateDep,
    context: ContextDep,
    acks: AcksParam = None,
    idempotency_key: IdempotencyKey = None,
) -> PatchResponse:
    """Merge ``metadata`` into the stored item's (a null removes a field), or replace it with
    ``merge`` false; the vector and text stay. 404 when the item does not exist when the patch
    is logged."""
    check_writes(state)
    entry = _live(state).admit(name, 1)
    plan = patch_plan(entry, id, body.metadata, body.merge)
    result = await write_acknowledged(state, entry, plan, context, idempotency_key, acks)
    state.metrics.writes.labels(name, "patch", "items").inc(result.done)
    return PatchResponse(seq=result.seq)


@plain_router.post(
    "/v1/collections/{name}/compact",
    response_model=CompactResponse,
    responses=error_responses(*AUTH_ERRORS, 404, 409, 503),
    summary="Compact a live collection now",
)
async def compact_collection(name: CollectionName, state: StateDep) -> CompactResponse:
    """Write the collection's live items as a new base (a bundle version with its faiss index,
    tuned when approximate; nothing is embedded again), publish it atomically and empty the
    log: replaced versions and deleted items leave memory and disk. Writes wait for it.
    Searches give the same answers before and after on a Flat index. Needs an admin key when
    keys are configured. The service also compacts by itself (compact_dead_fraction,
    compact_own_rows)."""
    done = await _live(state).require(name).writer.compact()
    return CompactResponse(**dataclasses.asdict(done))


@plain_router.post(
    "/v1/collections/{name}/snapshots",
    response_model=SnapshotResponse,
    responses=error_responses(*AUTH_ERRORS, 404, 409, 503, descriptions=_WRITE_DESCRIPTIONS),
    summary="Snapshot a live collection",
)
async def snapshot_collection(name: CollectionName, state: StateDep) -> SnapshotResponse:
    """Write the collection as searches see it now — one sequence number — as a checksummed
    bundle version (``<collections_dir>/.snapshots/<name>/<version>``, its ``CURRENT``
    pointed at it) that the service and the index builder read as any bundle, and that
    ``POST /v1/collections`` with ``from_snapshot`` restores. Writes go on meanwhile. Needs an
    admin key when keys are configured; 409 collection_empty for a collection of no item."""
    done = await _live(state).snapshot(name)
    return SnapshotResponse(
        seq=done.seq, count=done.count, version=done.version, seconds=done.seconds
    )

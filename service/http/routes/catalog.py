"""What is served: ``GET /v1/items/{collection}/{id}``, ``/v1/thumbnails/{collection}/{id}``,
``/v1/variants``, ``/v1/collections``."""

from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Header, Query, Response

from service.engine.collection.sharded_collections import ShardedCollection
from service.engine.query.query import ItemSide
from service.engine.rank.search_params import default_params, index_kind, on_disk
from service.engine.search.searcher import Searcher
from service.exceptions import NotFoundError, quoted
from service.http.dependencies import CatalogDep, StateDep
from service.http.routes import AUTH_ERRORS, error_responses
from service.http.schemas.catalog import (
    BatchingInfo,
    CollectionInfo,
    CollectionsResponse,
    IndexTuningInfo,
    ItemResponse,
    ProcessInfo,
    ShardedCollectionInfo,
    ShardInfo,
    VariantInfo,
    VariantsResponse,
)
from service.http.schemas.collections import LiveCollectionInfo
from service.http.schemas.search import AppliedSearchParams

router = APIRouter(tags=["catalog"])


@router.get(
    "/v1/items/{collection}/{id:path}",
    response_model=ItemResponse,
    responses=error_responses(*AUTH_ERRORS, 404, 409, 422, 503),
    summary="Metadata of a stored item",
)
async def item(
    collection: str,
    id: str,
    catalog: CatalogDep,
    state: StateDep,
    variant: Annotated[str | None, Query(description="Variant; default if omitted.")] = None,
) -> ItemResponse:
    """The item's row in its bundle (or live collection) and its metadata. Ids may contain
    ``:`` and ``/``."""
    live = state.searcher.live_entry(collection)
    if live is not None:
        view = live.collection.view()
        found = view.row_of(id)
        if found is None:
            raise NotFoundError(
                f"unknown item {quoted(id)} in collection {quoted(collection)}", param="id"
            )
        return ItemResponse(
            collection=collection, id=id, row=found, metadata=dict(view.metadata(found))
        )
    _, served = Searcher.target(catalog, variant, collection, ItemSide(collection, id), "id")
    row = catalog.row_of(served, id)
    return ItemResponse(
        collection=served.name, id=id, row=row, metadata=dict(served.collection.metadata[row])
    )


# A version is immutable, so one (collection, version, row) thumbnail never changes; the URL
# names no version, so caches revalidate (ETag) after a while rather than keep it forever.
THUMBNAIL_CACHE_CONTROL = "private, max-age=3600"


@router.get(
    "/v1/thumbnails/{collection}/{id:path}",
    response_class=Response,
    responses={
        200: {"content": {"image/jpeg": {}}, "description": "The item's thumbnail (JPEG)."},
        304: {"description": "Not modified (If-None-Match matched the ETag)."},
        **error_responses(*AUTH_ERRORS, 404, 409, 422, 503),
    },
    summary="Thumbnail of a stored image item",
)
async def thumbnail(
    collection: str,
    id: str,
    catalog: CatalogDep,
    variant: Annotated[str | None, Query(description="Variant; default if omitted.")] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """A small JPEG of the item's image (at most 160 px a side), made when the bundle was built
    from images; 404 for an item without one (a text item, or a bundle built before thumbnails).
    ``ETag`` names the bundle version and row; ``Cache-Control`` lets a browser keep it an hour."""
    _, served = Searcher.target(catalog, variant, collection, ItemSide(collection, id), "id")
    row = catalog.row_of(served, id)
    thumbnails = served.collection.thumbnails
    data = None if thumbnails is None else thumbnails.of(row)
    if data is None:
        raise NotFoundError(
            f"item {quoted(id)} of collection {quoted(served.qualified_name)} has no thumbnail "
            "(a text item, an unreadable image, or a bundle built without thumbnails)"
        )
    etag = f'"{served.bundle_version}-{row}"'
    headers = {"ETag": etag, "Cache-Control": THUMBNAIL_CACHE_CONTROL}
    if if_none_match is not None and etag in {tag.strip() for tag in if_none_match.split(",")}:
        return Response(status_code=304, headers=headers)
    return Response(content=data, media_type="image/jpeg", headers=headers)


@router.get(
    "/v1/variants",
    response_model=VariantsResponse,
    responses=error_responses(*AUTH_ERRORS, 503),
    summary="Loaded encoder variants",
)
async def variants(state: StateDep, catalog: CatalogDep) -> VariantsResponse:
    """Every loaded variant with its towers, providers really in use (per tower, from
    ``session.get_providers()``), precision, fingerprint and the bundle versions it serves; and
    ``processes``: how many worker processes serve them, which one answered, and the threads
    of each."""
    settings, layout = state.settings, state.layout
    return VariantsResponse(
        processes=ProcessInfo(
            workers=layout.workers,
            worker=layout.worker,
            pid=layout.pid,
            encoder_threads=settings.encoder_workers,
            intra_op_threads=settings.intra_op_threads,
            blas_threads=settings.blas_threads,
            flat_scan=settings.flat_scan,
            overload_concurrent_requests=state.admission.overload_limit,
        ),
        variants=[
            VariantInfo(
                name=variant.name,
                dim=variant.dim,
                precision=variant.precision,
                towers=list(variant.towers),
                providers=variant.providers,
                tower_providers=variant.providers_by_tower,
                tower_batching={
                    tower: BatchingInfo(
                        max_batch_size=batcher.limits.max_batch_size,
                        max_wait_ms=batcher.limits.max_wait_s * 1000.0,
                    )
                    for tower, batcher in variant.batchers_by_tower.items()
                },
                fingerprint=variant.fingerprint,
                bundle_versions=catalog.bundle_versions_of(variant.name),
                max_tokens=variant.max_tokens,
                image_size=list(size) if (size := variant.image_input_size) else None,
                default=variant.is_default,
            )
            for variant in catalog.variants
        ],
    )


@router.get(
    "/v1/collections",
    response_model=CollectionsResponse,
    responses=error_responses(*AUTH_ERRORS, 503),
    summary="Served collections",
)
async def collections(catalog: CatalogDep, state: StateDep) -> CollectionsResponse:
    """Every served collection with its size, bundle version, index type and the device faiss
    searches it on; for an approximate index its kind, the search parameters in force and what
    the build measured of its recall (``tuning``); and the live collections, with their counts
    as of now (``live``)."""
    live, sharded = state.searcher.live, state.searcher.sharded
    return CollectionsResponse(
        collections=[
            CollectionInfo(
                name=served.name,
                qualified_name=served.qualified_name,
                count=served.collection.count,
                dim=served.collection.dim,
                variant=served.variant,
                bundle=served.bundle,
                bundle_version=served.bundle_version,
                factory=served.collection.factory,
                metric=served.collection.metric,
                index_device=served.index_device,
                fields={name: str(kind) for name, kind in served.collection.fields.items()},
                thumbnails=served.collection.thumbnails is not None,
                index_kind=index_kind(served.collection),
                search_params=cast(
                    "AppliedSearchParams", default_params(served.collection).as_dict()
                ),
                tuning=(
                    None
                    if served.collection.tuning is None
                    else IndexTuningInfo.model_validate(served.collection.tuning.model_dump())
                ),
                on_disk=on_disk(served.collection),
            )
            for served in catalog.collections
        ],
        live=[] if live is None else [LiveCollectionInfo.of(entry) for entry in live.entries],
        sharded=[]
        if sharded is None
        else [await _sharded_info(entry) for entry in sharded.entries],
    )


async def _sharded_info(collection: ShardedCollection) -> ShardedCollectionInfo:
    """A sharded collection's facts and its shards' states (each asked now)."""
    return ShardedCollectionInfo(
        name=collection.name,
        qualified_name=f"{collection.bundle}:{collection.name}",
        count=collection.rows,
        dim=collection.dim,
        variant=collection.variant,
        bundle=collection.bundle,
        bundle_version=collection.bundle_version,
        missing_shards_policy=cast("Literal['fail', 'partial']", collection.missing_shards),
        shard_deadline_ms=collection.shard_deadline_ms,
        shards=[
            ShardInfo(
                name=state.name,
                row_offset=state.row_offset,
                count=state.rows,
                version=state.version,
                status="ok" if state.ok else "down",
                reason=state.reason,
            )
            for state in await collection.states()
        ],
    )

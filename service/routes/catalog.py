"""What is served: ``GET /v1/items/{collection}/{id}``, ``/v1/variants``, ``/v1/collections``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from service.routes import AUTH_ERRORS, error_responses
from service.schemas import (
    CollectionInfo,
    CollectionsResponse,
    ItemResponse,
    ProcessInfo,
    VariantInfo,
    VariantsResponse,
)
from service.searcher import ItemSide, Searcher
from service.state import CatalogDep, StateDep

router = APIRouter(tags=["catalog"])


@router.get(
    "/v1/items/{collection}/{id:path}",
    response_model=ItemResponse,
    responses=error_responses(*AUTH_ERRORS, 404, 422, 503),
    summary="Metadata of a stored item",
)
async def item(
    collection: str,
    id: str,
    catalog: CatalogDep,
    variant: Annotated[str | None, Query(description="Variant; default if omitted.")] = None,
) -> ItemResponse:
    """The item's row in its bundle and its metadata. Ids may contain ``:`` and ``/``."""
    _, served = Searcher.target(catalog, variant, collection, ItemSide(collection, id), "id")
    row = catalog.row_of(served, id)
    return ItemResponse(
        collection=served.name, id=id, row=row, metadata=dict(served.collection.metadata[row])
    )


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
        ),
        variants=[
            VariantInfo(
                name=variant.name,
                dim=variant.dim,
                precision=variant.precision,
                towers=list(variant.towers),
                providers=variant.providers,
                tower_providers=variant.providers_by_tower,
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
async def collections(catalog: CatalogDep) -> CollectionsResponse:
    """Every served collection with its size, bundle version, index type and the device faiss
    searches it on."""
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
            )
            for served in catalog.collections
        ]
    )

"""``POST /v1/search``: nearest items of a collection to a text or a stored item."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Depends

from service import stages
from service.request_context import RequestContext
from service.routes import JSON_BODY_ERRORS
from service.schemas import QueryInput, SearchRequest, SearchResponse, SearchResult, Timings
from service.state import ContextDep, ServiceState, StateDep, StoreDep, require_json
from service.store import LiveIndexStore, ServedVariant

router = APIRouter(tags=["search"])


async def query_vector(
    state: ServiceState,
    store: LiveIndexStore,
    context: RequestContext,
    variant: ServedVariant,
    query: QueryInput,
) -> np.ndarray:
    """The float32 ``[dim]`` vector of one query side: the text's embedding, or the item's
    stored vector (unknown collection or item raise not_found before anything is encoded)."""
    if query.item is not None:
        served = store.collection(variant, query.item.collection)
        return store.stored_vector(served, store.row_of(served, query.item.id))
    assert query.text is not None  # QueryInput holds exactly one of the two
    vectors = await stages.encode_texts(context, state.metrics, variant, [query.text])
    first: np.ndarray = vectors[0]
    return first


@router.post(
    "/v1/search",
    response_model=SearchResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Search a collection with a text or a stored item",
)
async def search(
    body: SearchRequest, state: StateDep, store: StoreDep, context: ContextDep
) -> SearchResponse:
    """Top-``k`` items by cosine similarity, ordered by score descending then bundle row
    ascending. ``k`` above the collection's size (after ``exclude``) returns every row."""
    body.check_limits(state.settings)
    variant = store.resolve_variant(body.variant)
    served = store.collection(variant, body.collection)
    vector = await query_vector(state, store, context, variant, body.query)
    hits = await stages.search(context, state.metrics, served, vector, body.k, set(body.exclude))
    return SearchResponse(
        results=[
            SearchResult(
                id=hit.item_id,
                score=hit.score,
                rank=hit.rank,
                metadata=dict(hit.metadata) if body.include_metadata else None,
            )
            for hit in hits
        ],
        collection=served.name,
        variant=variant.name,
        bundle=served.bundle,
        bundle_version=served.bundle_version,
        timings_ms=Timings(
            encode=context.encode_ms or 0.0,
            search=context.search_ms or 0.0,
            total=context.elapsed_ms(),
        ),
    )

"""``POST /v1/score``: cosine similarity of given pairs (texts, images or stored items on each
side)."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Depends

from service.http.dependencies import CatalogDep, ContextDep, StateDep, require_json
from service.http.limits import check_vector_lengths
from service.http.routes import JSON_BODY_ERRORS
from service.http.routes.json_route import JsonRoute
from service.http.schemas.score import ScoreRequest, ScoreResponse
from service.http.schemas.search import Timings

router = APIRouter(tags=["score"], route_class=JsonRoute)


@router.post(
    "/v1/score",
    response_model=ScoreResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Cosine similarity of text/image/item pairs",
)
async def score(
    body: ScoreRequest, state: StateDep, catalog: CatalogDep, context: ContextDep
) -> ScoreResponse:
    """One score per pair, in order: the inner product of the two L2-normalised embeddings.

    Every distinct text of the request is embedded in a single encoder call, every distinct
    image (same base64) decoded and embedded once; items use the bundle's stored vectors and
    vector sides the client's own embedding, normalised (422 for zero norm, or for a length
    other than the one dimension every served variant shares, which the document states; 409
    ``dimension_mismatch`` for a length other than the variant's where served variants
    differ). A side whose tower the variant lacks (409
    ``tower_missing``) and unknown items (404) are refused before anything is decoded or
    encoded; images are decoded and embedded before any text is encoded.
    """
    check_vector_lengths(body, (variant.dim for variant in catalog.variants))
    sides = body.core_sides()
    variant = state.searcher.variant_for(catalog, body.variant, sides)
    vectors, versions = await state.searcher.vectors(context, catalog, variant, sides)
    scores = np.einsum("ij,ij->i", vectors[0::2], vectors[1::2])
    return ScoreResponse(
        scores=[float(value) for value in scores],
        variant=variant.name,
        bundle_version=",".join(sorted(versions)) if versions else None,
        timings_ms=Timings(
            decode=context.decode_ms or 0.0,
            queue=context.queue_ms or 0.0,
            encode=context.encode_ms or 0.0,
            search=context.search_ms or 0.0,
            total=context.elapsed_ms(),
        ),
    )

"""``POST /v1/embed``: embeddings of texts or of images."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from service.engine.query.images import ImagePayload
from service.http.dependencies import CatalogDep, ContextDep, StateDep, require_json
from service.http.routes import JSON_BODY_ERRORS
from service.http.routes.json_route import JsonRoute
from service.http.schemas.embed import EmbedImages, EmbedRequest, EmbedResponse

router = APIRouter(tags=["embed"], route_class=JsonRoute)


@router.post(
    "/v1/embed",
    response_model=EmbedResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Embed texts or images with a variant's text or image tower",
)
async def embed(
    body: EmbedRequest, state: StateDep, catalog: CatalogDep, context: ContextDep
) -> EmbedResponse:
    """Float32 embeddings ``[n, dim]`` (L2-normalised rows) of ``texts`` (one encoder call) or
    of ``images`` (base64 files; decoded, then embedded), in request order."""
    tower = "image" if isinstance(body, EmbedImages) else "text"
    variant = catalog.resolve_variant_for(body.variant, lambda served: tower in served.towers)
    if isinstance(body, EmbedImages):
        catalog.require_tower(variant, "image", "images")
        payloads = [ImagePayload(f"images.{n}", image) for n, image in enumerate(body.images)]
        vectors = await state.searcher.embed_images(context, variant, payloads)
    else:
        catalog.require_tower(variant, "text", "texts")
        vectors = await state.searcher.embed_texts(context, variant, list(body.texts))
    return EmbedResponse(embeddings=vectors.tolist(), dim=variant.dim, variant=variant.name)

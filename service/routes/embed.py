"""``POST /v1/embed``: embeddings of texts or of images."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from service import stages
from service.images import ImagePayload, image_limits
from service.routes import JSON_BODY_ERRORS
from service.schemas import EmbedRequest, EmbedResponse
from service.state import ContextDep, StateDep, StoreDep, require_json

router = APIRouter(tags=["embed"])


@router.post(
    "/v1/embed",
    response_model=EmbedResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Embed texts or images with a variant's text or image tower",
)
async def embed(
    body: EmbedRequest, state: StateDep, store: StoreDep, context: ContextDep
) -> EmbedResponse:
    """Float32 embeddings ``[n, dim]`` (L2-normalised rows) of ``texts`` (one encoder call) or
    of ``images`` (base64 files; decoded, then embedded), in request order."""
    body.check_limits(state.settings)
    variant = store.resolve_variant(body.variant)
    if body.images is not None:
        store.require_tower(variant, "image", "images")
        payloads = [ImagePayload(f"images.{n}", image) for n, image in enumerate(body.images)]
        limits = image_limits(state.settings)
        vectors = await stages.embed_images(
            context, state.metrics, state.encode_pool, variant, payloads, limits
        )
    else:
        assert body.texts is not None  # EmbedRequest holds exactly one of the two
        store.require_tower(variant, "text", "texts")
        vectors = await stages.encode_texts(context, state.encode_pool, variant, list(body.texts))
    return EmbedResponse(embeddings=vectors.tolist(), dim=variant.dim, variant=variant.name)

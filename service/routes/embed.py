"""``POST /v1/embed``: embeddings of texts."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from service import stages
from service.routes import JSON_BODY_ERRORS
from service.schemas import EmbedRequest, EmbedResponse
from service.state import ContextDep, StateDep, StoreDep, require_json

router = APIRouter(tags=["embed"])


@router.post(
    "/v1/embed",
    response_model=EmbedResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Embed texts with a variant's text tower",
)
async def embed(
    body: EmbedRequest, state: StateDep, store: StoreDep, context: ContextDep
) -> EmbedResponse:
    """Float32 embeddings ``[len(texts), dim]`` (L2-normalised rows), in one encoder call."""
    body.check_limits(state.settings)
    variant = store.resolve_variant(body.variant)
    vectors = await stages.encode_texts(context, state.metrics, variant, list(body.texts))
    return EmbedResponse(embeddings=vectors.tolist(), dim=variant.encoder.dim, variant=variant.name)

"""The OpenAI-compatible surface: ``POST /v1/embeddings`` and ``GET /v1/models``.

``/v1/embeddings`` is ``/v1/embed`` in OpenAI's shape: the same limits (checked before anything
is decoded or encoded), admission, micro-batching, metrics and keys; the vectors are the very
rows ``/v1/embed`` answers, cut and renormalised where ``dimensions`` asks for a cut the variant
declares, then written as JSON numbers or as base64 of little-endian float32.
"""

from __future__ import annotations

import base64
from typing import Literal

import numpy as np
import numpy.typing as npt
from fastapi import APIRouter, Depends

from service.engine.collection.catalog import Catalog, ServedVariant
from service.engine.query.images import ImagePayload
from service.http.dependencies import CatalogDep, ContextDep, StateDep, require_json
from service.http.errors import ErrorCode, ServiceError
from service.http.routes import AUTH_ERRORS, JSON_BODY_ERRORS, error_responses
from service.http.routes.json_route import JsonRoute
from service.http.schemas.openai_compat import (
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbeddingsUsage,
    Model,
    ModelList,
)
from service.settings import Settings

router = APIRouter(tags=["openai"], route_class=JsonRoute)
models_router = APIRouter(tags=["openai"])


@router.post(
    "/v1/embeddings",
    response_model=EmbeddingsResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Embed texts or images, in OpenAI's embeddings shape",
)
async def embeddings(
    body: EmbeddingsRequest, state: StateDep, catalog: CatalogDep, context: ContextDep
) -> EmbeddingsResponse:
    """OpenAI's ``/v1/embeddings``: ``model`` is a served variant (``GET /v1/models``), the
    answer's ``data[i].embedding`` embeds ``input[i]``, ``usage`` counts the text tower's tokens.
    ``modality: "image"`` (infinity's extension) embeds images given as data URIs or base64."""
    variant = _variant_named(catalog, body.model)
    inputs = body.inputs
    cut = _cut_of(variant, body.dimensions)
    if body.modality == "image":
        catalog.require_tower(variant, "image", "input")
        payloads = [ImagePayload(f"input.{n}", image) for n, image in enumerate(inputs)]
        vectors = await state.searcher.embed_images(context, variant, payloads)
        tokens = 0
    else:
        catalog.require_tower(variant, "text", "input")
        vectors = await state.searcher.embed_texts(context, variant, inputs)
        tokens = sum(variant.count_tokens(inputs))
    rows = _cut_rows(vectors, cut)
    return EmbeddingsResponse(
        data=[
            Embedding(index=index, embedding=_encoded(row, body.encoding_format))
            for index, row in enumerate(rows)
        ],
        model=variant.name,
        usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens),
    )


@models_router.get(
    "/v1/models",
    response_model=ModelList,
    responses=error_responses(*AUTH_ERRORS, 503),
    summary="The served variants, in OpenAI's models shape",
)
async def models(catalog: CatalogDep, state: StateDep) -> ModelList:
    """Every served variant as an OpenAI model (``client.models.list()``): its name is the
    ``model`` of ``/v1/embeddings``; ``max_inputs`` / ``max_image_inputs`` say how many inputs
    one request may hold."""
    return ModelList(data=[_model_of(variant, state.settings) for variant in catalog.variants])


def _variant_named(catalog: Catalog, name: str) -> ServedVariant:
    """The served variant called ``name``; 404 ``not_found`` naming the served ones."""
    variant = catalog.variant_named(name)
    if variant is None:
        served = ", ".join(sorted(served.name for served in catalog.variants))
        raise ServiceError(
            ErrorCode.NOT_FOUND,
            f"model {name!r} is not served; served models: {served}",
            param="model",
        )
    return variant


def _cut_of(variant: ServedVariant, dimensions: int | None) -> int | None:
    """The number of leading values to keep, or None for the whole embedding; 422 for a cut
    the variant does not declare meaningful."""
    if dimensions is None or dimensions == variant.dim:
        return None
    if dimensions in variant.matryoshka_dims:
        return dimensions
    allowed = [*sorted(variant.matryoshka_dims), variant.dim]
    raise ServiceError(
        ErrorCode.INVALID_INPUT,
        f"dimensions: {dimensions} is not a cut model {variant.name!r} was trained for; "
        f"it takes {', '.join(str(n) for n in allowed)}",
        param="dimensions",
    )


def _cut_rows(vectors: npt.NDArray[np.float32], cut: int | None) -> npt.NDArray[np.float32]:
    """The first ``cut`` values of each row, renormalised to unit length (float32)."""
    if cut is None:
        return vectors
    kept = vectors[:, :cut].astype(np.float64)
    norms = np.linalg.norm(kept, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    cut_rows: npt.NDArray[np.float32] = (kept / norms).astype(np.float32)
    return cut_rows


def _encoded(
    row: npt.NDArray[np.float32], encoding: Literal["float", "base64"]
) -> list[float] | str:
    """A row as JSON numbers, or as base64 of its little-endian float32 bytes."""
    if encoding == "base64":
        return base64.b64encode(row.astype("<f4", copy=False).tobytes()).decode("ascii")
    values: list[float] = row.tolist()
    return values


def _model_of(variant: ServedVariant, settings: Settings) -> Model:
    return Model(
        id=variant.name,
        created=variant.created,
        dim=variant.dim,
        towers=list(variant.towers),
        matryoshka_dims=sorted(variant.matryoshka_dims),
        max_tokens=variant.max_tokens,
        max_inputs=settings.max_embed_inputs if "text" in variant.towers else None,
        max_image_inputs=settings.max_images_per_request if "image" in variant.towers else None,
    )

"""``POST /v1/score``: cosine similarity of given pairs (texts, images or stored items on each
side)."""

from __future__ import annotations

import time

import numpy as np
from fastapi import APIRouter, Depends

from service import stages
from service.images import ImagePayload, image_limits
from service.routes import JSON_BODY_ERRORS
from service.schemas import QueryInput, ScoreRequest, ScoreResponse, Timings
from service.state import ContextDep, StateDep, StoreDep, require_json
from service.store import LiveIndexStore, ServedVariant, normalised_query_vector

router = APIRouter(tags=["score"])


def _stored_side(
    store: LiveIndexStore, variant: ServedVariant, side: QueryInput, versions: set[str]
) -> np.ndarray:
    assert side.item is not None
    served = store.collection(variant, side.item.collection)
    versions.add(served.bundle_version)
    return store.stored_vector(served, store.row_of(served, side.item.id))


@router.post(
    "/v1/score",
    response_model=ScoreResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Cosine similarity of text/image/item pairs",
)
async def score(
    body: ScoreRequest, state: StateDep, store: StoreDep, context: ContextDep
) -> ScoreResponse:
    """One score per pair, in order: the inner product of the two L2-normalised embeddings.

    Every distinct text of the request is embedded in a single encoder call, every distinct
    image (same base64) decoded and embedded once; items use the bundle's stored vectors and
    vector sides the client's own embedding, normalised (422 for a wrong dimension, a
    non-finite number or zero norm). A
    side whose tower the variant lacks (422) and unknown items (404) are refused before anything
    is decoded or encoded; images are decoded and embedded before any text is encoded.
    """
    body.check_limits(state.settings)
    variant = store.resolve_variant(body.variant)
    sides = body.sides()
    for where, side in sides:
        if side.kind in ("text", "image"):
            store.require_tower(variant, side.kind, f"{where}.{side.kind}")

    lookup_started = time.perf_counter()
    versions: set[str] = set()
    stored = {
        index: _stored_side(store, variant, side, versions)
        for index, (_, side) in enumerate(sides)
        if side.item is not None
    }
    stored.update(
        {
            index: normalised_query_vector(side.vector, variant.dim, f"{where}.vector")
            for index, (where, side) in enumerate(sides)
            if side.vector is not None
        }
    )
    context.add_search_ms((time.perf_counter() - lookup_started) * 1000.0)

    # Each distinct image is decoded and embedded once (the first side holding it names it in
    # errors); each distinct text is encoded once: CxC pairs reuse the same captions heavily.
    first_where: dict[str, str] = {}
    for where, side in sides:
        if side.image is not None:
            first_where.setdefault(side.image, f"{where}.image")
    image_slot = {image: slot for slot, image in enumerate(first_where)}
    image_vectors = (
        await stages.embed_images(
            context,
            state.metrics,
            state.encode_pool,
            variant,
            [ImagePayload(where, image) for image, where in first_where.items()],
            image_limits(state.settings),
        )
        if first_where
        else np.empty((0, variant.dim), dtype=np.float32)
    )
    unique_texts = list(dict.fromkeys(side.text for _, side in sides if side.text is not None))
    text_slot = {text: slot for slot, text in enumerate(unique_texts)}
    text_vectors = (
        await stages.encode_texts(context, state.encode_pool, variant, unique_texts)
        if unique_texts
        else np.empty((0, variant.dim), dtype=np.float32)
    )

    def vector_of(index: int, side: QueryInput) -> np.ndarray:
        if side.text is not None:
            row: np.ndarray = text_vectors[text_slot[side.text]]
        elif side.image is not None:
            row = image_vectors[image_slot[side.image]]
        else:
            row = stored[index]
        return row

    vectors = np.stack([vector_of(index, side) for index, (_, side) in enumerate(sides)]).astype(
        np.float32, copy=False
    )
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

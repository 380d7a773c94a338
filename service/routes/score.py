"""``POST /v1/score``: cosine similarity of given pairs (texts or stored items on each side)."""

from __future__ import annotations

import time

import numpy as np
from fastapi import APIRouter, Depends

from service import stages
from service.routes import JSON_BODY_ERRORS
from service.schemas import QueryInput, ScoreRequest, ScoreResponse, Timings
from service.state import ContextDep, StateDep, StoreDep, require_json
from service.store import LiveIndexStore, ServedVariant

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
    summary="Cosine similarity of text/item pairs",
)
async def score(
    body: ScoreRequest, state: StateDep, store: StoreDep, context: ContextDep
) -> ScoreResponse:
    """One score per pair, in order: the inner product of the two L2-normalised embeddings.

    Every distinct text of the request is embedded in a single encoder call; items use the
    bundle's stored vectors. Unknown items are refused (404) before anything is encoded.
    """
    body.check_limits(state.settings)
    variant = store.resolve_variant(body.variant)
    sides = [side for pair in body.pairs for side in (pair.left, pair.right)]

    lookup_started = time.perf_counter()
    versions: set[str] = set()
    stored = {
        index: _stored_side(store, variant, side, versions)
        for index, side in enumerate(sides)
        if side.item is not None
    }
    context.add_search_ms((time.perf_counter() - lookup_started) * 1000.0)

    # Each distinct text is encoded once: CxC pairs reuse the same captions heavily.
    unique_texts = list(dict.fromkeys(side.text for side in sides if side.text is not None))
    text_slot = {text: slot for slot, text in enumerate(unique_texts)}
    encoded = (
        await stages.encode_texts(context, state.metrics, variant, unique_texts)
        if unique_texts
        else np.empty((0, variant.encoder.dim), dtype=np.float32)
    )
    vectors = np.stack(
        [
            stored[index] if side.text is None else encoded[text_slot[side.text]]
            for index, side in enumerate(sides)
        ]
    ).astype(np.float32, copy=False)
    scores = np.einsum("ij,ij->i", vectors[0::2], vectors[1::2])
    return ScoreResponse(
        scores=[float(value) for value in scores],
        variant=variant.name,
        bundle_version=",".join(sorted(versions)) if versions else None,
        timings_ms=Timings(
            encode=context.encode_ms or 0.0,
            search=context.search_ms or 0.0,
            total=context.elapsed_ms(),
        ),
    )

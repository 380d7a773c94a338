"""The pair phases: CxC correlations (STS / SIS / SITS) and BISON, scored with ``/v1/score``.

Correlations: every rated pair that can be referenced is scored (item references; a caption
side is its text when there is no ``captions`` collection; an image side is an upload when there
is no ``images`` collection), then the CxC Spearman bootstrap. BISON: (caption text, image) for
both images of every row that can be scored; accuracy, ties count ½.
"""

from __future__ import annotations

import logging
import time

from benchmarks.drivers.query_sides import PairSide, item_ref, text_query
from benchmarks.drivers.replay import ScoreReplay, replay_scores
from benchmarks.runs.quality.context import QualityContext
from evaluation.data.bison_rows import BisonPlan, plan_bison
from evaluation.data.task_plan import CORRELATION_TASKS
from evaluation.entries import bison_entry, correlation_entry
from formats.cxc import RatingKind

logger = logging.getLogger(__name__)

SCORE_CONCURRENCY = 4
"""Most ``/v1/score`` requests in flight (fewer when ``replay_concurrency`` is lower)."""


def _caption_side(context: QualityContext, key: str, text_of: dict[str, str]) -> PairSide:
    if context.view.has_captions:
        return item_ref(context.config.collection, key)
    return text_query(text_of[key])


async def _score(context: QualityContext, pairs: list[tuple[PairSide, PairSide]]) -> ScoreReplay:
    """Every pair's score from ``/v1/score``, within the run's batch and upload limits."""
    config = context.config
    return await replay_scores(
        context.client,
        pairs,
        batch_size=config.score_batch,
        concurrency=min(config.replay_concurrency, SCORE_CONCURRENCY),
        variant=config.variant,
        show_progress=config.show_progress,
        max_uploads=config.max_uploads_per_request,
        max_upload_bytes=config.max_upload_bytes,
    )


async def correlation_phase(context: QualityContext) -> None:
    """Each planned CxC rating file (STS, SIS, SITS, in that order)."""
    for name in CORRELATION_TASKS:
        if name in context.plan.run:
            await _correlation(context, RatingKind(name))


async def _correlation(context: QualityContext, kind: RatingKind) -> None:
    """One CxC rating file: score every pair that can be referenced, then the bootstrap."""
    config, results = context.config, context.results
    started = time.perf_counter()
    ratings = context.data.ratings[kind]
    text_of = {caption.key: caption.text for caption in context.data.captions}
    left_collection, right_collection = kind.collections

    def side(collection: str, item: str) -> PairSide | None:
        if collection == "captions":
            return _caption_side(context, item, text_of)
        return context.images.side(item)

    kept = []
    pairs: list[tuple[PairSide, PairSide]] = []
    for rating in ratings:
        left, right = side(left_collection, rating.item1), side(right_collection, rating.item2)
        if left is not None and right is not None:
            kept.append(rating)
            pairs.append((left, right))
    skipped = len(ratings) - len(kept)
    if skipped:
        logger.warning("%s: %d of %d pairs cannot be referenced", kind.value, skipped, len(ratings))
    scored = await _score(context, pairs)
    results.served_by.merge(scored.served_by)
    results.tasks[kind.value] = correlation_entry(
        kept,
        scored.scores,
        n_samples=config.bootstrap_samples,
        seed=config.seed,
        pairs_skipped=None if kind is RatingKind.STS else skipped,
    )
    results.durations_s[kind.value] = time.perf_counter() - started


async def bison_phase(context: QualityContext) -> None:
    """BISON: (caption text, image) for both images of each row; accuracy, ties count ½."""
    if "bison" not in context.plan.run:
        return
    results = context.results
    started = time.perf_counter()
    rows = context.data.bison or []
    plan: BisonPlan[PairSide] = plan_bison(rows, context.data.image_namer(), context.images.side)
    if plan.skipped:
        logger.warning(
            "bison: %s of %d rows skipped: %s", sum(plan.skipped.values()), plan.total, plan.skipped
        )
    captions = [text_query(text) for text in plan.captions]
    pairs: list[tuple[PairSide, PairSide]] = [
        *zip(captions, plan.true_sides, strict=True),
        *zip(captions, plan.other_sides, strict=True),
    ]
    scored = await _score(context, pairs)
    results.served_by.merge(scored.served_by)
    count = len(plan.rows)
    results.tasks["bison"] = bison_entry(
        scored.scores[:count], scored.scores[count:], plan.skipped, uploads=scored.uploads
    )
    results.durations_s["bison"] = time.perf_counter() - started

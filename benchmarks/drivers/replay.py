"""Query replay: send a task's queries and pairs to the live service, several requests in flight.

The replay keeps only what the metrics need — each query's first-positive rank per task, each
pair's score and, when asked, each query's first few result ids (``keep_top``, e.g. 15) — never
the full result lists (18k queries × 1,000 ids would not fit comfortably). Searches go in bulk
requests (``POST /v1/search/bulk``), pairs in ``POST /v1/score`` batches, both cut by
:func:`cut_requests`; requests run through a fixed pool of asyncio workers sharing one client;
results keep the input order. It also records which variants and bundle versions answered, and
counts answers that break the API's promises (the excluded query returned; scores out of order).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

import crisscross_client
from benchmarks.drivers.http_client import CrisscrossClient, JsonObject, search_body
from benchmarks.drivers.query_sides import ImageFile, PairSide, resolve_side
from evaluation.data.ground_truth import RetrievalTask
from evaluation.data.task_groups import first_ranks_of, group_queries

logger = logging.getLogger(__name__)

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


async def map_bounded(
    items: Sequence[ItemT],
    call: Callable[[ItemT], Awaitable[ResultT]],
    concurrency: int,
    on_done: Callable[[ItemT], object] | None = None,
) -> list[ResultT]:
    """Await ``call(item)`` for every item with at most ``concurrency`` in flight.

    Args:
        items: the inputs.
        call: the coroutine function applied to each input.
        concurrency: most calls in flight.
        on_done: called with each item whose call finished (e.g. to advance a progress bar).

    Returns:
        The results in input order. The first exception cancels the remaining work and
        propagates (inside an ``ExceptionGroup`` unwrapped to the first error).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    results: list[ResultT | None] = [None] * len(items)
    next_index = iter(range(len(items)))

    async def worker() -> None:
        for index in next_index:
            results[index] = await call(items[index])
            if on_done is not None:
                on_done(items[index])

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, max(1, len(items)))):
                group.create_task(worker())
    except ExceptionGroup as errors:
        raise errors.exceptions[0] from errors
    return results  # type: ignore[return-value]  # every slot was filled


@dataclass
class ServedBy:
    """Which encoder variants and bundle versions answered a replay's requests."""

    variants: set[str] = field(default_factory=set)
    bundle_versions: set[str] = field(default_factory=set)

    def add(self, variant: str | None, bundle_version: str | None) -> None:
        """Record one answer's variant and bundle version (``None`` is ignored)."""
        if variant is not None:
            self.variants.add(variant)
        if bundle_version is not None:
            self.bundle_versions.add(bundle_version)

    def merge(self, other: ServedBy) -> None:
        """Add everything ``other`` recorded."""
        self.variants |= other.variants
        self.bundle_versions |= other.bundle_versions


@dataclass
class RetrievalReplay:
    """What a retrieval replay returns.

    Attributes:
        first_ranks: task name → per query (in the task's query order) the 1-based rank of its
            first positive in the top ``k``, or ``None`` when beyond ``k``.
        served_by: the variants and bundle versions that answered.
        exclude_violations: answers that contained the excluded query id.
        order_violations: answers whose scores were not in non-increasing order.
        top_ids: query id → its first ``keep_top`` result ids in the service's order (empty
            unless ``keep_top`` was asked for): what R (eq. 1), NCS, SR and the false-negative
            view read.
        top_scores: query id → the scores of those ``top_ids`` (same order and length).
    """

    first_ranks: dict[str, list[int | None]]
    served_by: ServedBy
    exclude_violations: int = 0
    order_violations: int = 0
    top_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    top_scores: dict[str, tuple[float, ...]] = field(default_factory=dict)


DEEPEN_AT = 100
"""Where a retrieval replay's second page ends (its first ends at ``probe_k``, its last at
``k``): most queries the probe misses have a positive above it."""

BULK_BODY_BYTES = 16 * 2**20
"""Most JSON bytes of one bulk search request: half the service's default
``max_bulk_body_bytes`` (uploaded query images make bodies large)."""


def cut_requests(costs: Sequence[tuple[int, ...]], budgets: tuple[int, ...]) -> list[range]:
    """Cut consecutive items into requests, greedily, each within every budget.

    Args:
        costs: per item, what it uses of each budget (e.g. ``(1, uploads, body bytes)``).
        budgets: the most each request may use of each.

    Returns:
        Consecutive index ranges covering ``range(len(costs))``; an item over a budget on its
        own still gets a request (the service then refuses it and says why).
    """
    requests: list[range] = []
    start = 0
    used = [0] * len(budgets)
    for index, cost in enumerate(costs):
        if index > start and any(
            spent + more > budget for spent, more, budget in zip(used, cost, budgets, strict=True)
        ):
            requests.append(range(start, index))
            start, used = index, [0] * len(budgets)
        used = [spent + more for spent, more in zip(used, cost, strict=True)]
    if start < len(costs):
        requests.append(range(start, len(costs)))
    return requests


Ranked = tuple[dict[str, int | None], tuple[str, ...], tuple[float, ...]]
"""One query's first-positive rank per task, its first ``keep_top`` result ids and their
scores."""


async def replay_retrieval(
    client: CrisscrossClient,
    tasks: Sequence[RetrievalTask],
    query_of: Callable[[str], JsonObject],
    k: int,
    *,
    bulk_size: int = 256,
    max_uploads: int = 32,
    concurrency: int = 2,
    variant: str | None = None,
    show_progress: bool = True,
    collection: str | None = None,
    probe_k: int = 100,
    keep_top: int = 0,
    fields: Mapping[str, Any] | None = None,
) -> RetrievalReplay:
    """Search every query of ``tasks`` and score it against each task's positives.

    Tasks that share queries (t2t and t2t_cocaptions) cost one search per query. All tasks must
    share the query collection, target collection and ``exclude_query``. Searches go in bulk
    requests (``POST /v1/search/bulk``) of at most ``bulk_size`` searches, ``max_uploads``
    image uploads and :data:`BULK_BODY_BYTES` bytes; a search the service refuses fails the
    replay with its :class:`~crisscross_client.CrisscrossError`, naming the query.

    Each query is first asked for its top ``probe_k`` results; a query for which some task's
    first positive is not among them is asked for the next page (``offset``) down to
    :data:`DEEPEN_AT`, then, still missing one, for the page down to ``k``. The service's order
    (score descending, then bundle row) makes each page continue the ones above it, so the
    ranks are those of one search at ``k``, at a fraction of the results sent: most queries of
    a useful encoder find their positives in the first few.

    Args:
        client: an open client.
        tasks: the tasks to evaluate.
        query_of: query id → the ``query`` object sent (``text_query(...)``, ``item_ref(...)``).
        k: results asked for per query.
        bulk_size: most searches per bulk request (≤ the service's ``max_bulk_searches``).
        max_uploads: most image uploads per bulk request (≤ its ``max_images_per_request``).
        concurrency: bulk requests in flight.
        variant: encoder variant, or the service default.
        show_progress: draw a tqdm bar on stderr.
        collection: the service's name of the target collection, when it differs from the
            tasks' ``target_collection`` (``"captions"`` / ``"images"``).
        probe_k: results asked for first (clamped to ``k``; at least ``keep_top``).
        keep_top: keep each query's first ``keep_top`` result ids (≤ ``k``; the first request
            asks for at least that many).
        fields: more fields of every search (``mode``, ``window``, ``rerank``, ...; see
            :func:`~benchmarks.drivers.http_client.search_body`).
    """
    if probe_k < 1 or bulk_size < 1:
        raise ValueError("probe_k and bulk_size must be at least 1")
    if not tasks:
        return RetrievalReplay(first_ranks={}, served_by=ServedBy())
    first = tasks[0]
    for task in tasks[1:]:
        if (task.query_collection, task.target_collection, task.exclude_query) != (
            first.query_collection,
            first.target_collection,
            first.exclude_query,
        ):
            raise ValueError(f"tasks {first.name} and {task.name} cannot share a replay")
    queries = group_queries(tasks)
    served_by = ServedBy()
    counters = {"exclude": 0, "order": 0, "deepened": 0}

    def body(query: str, depth: int, offset: int = 0) -> JsonObject:
        return search_body(
            query_of(query),
            collection or first.target_collection,
            depth - offset,
            offset=offset,
            exclude=[query] if first.exclude_query else None,
            variant=variant,
            include_metadata=False,
            fields=fields,
        )

    def cost(search: JsonObject) -> tuple[int, int, int]:
        return 1, "image" in search["query"], len(json.dumps(search))

    def bulks(chunk: Sequence[str], depth: int, offset: int = 0) -> list[list[str]]:
        # bodies are built twice (measured here, sent later): uploads never pile up in memory
        costs = [cost(body(query, depth, offset)) for query in chunk]
        budgets = (bulk_size, max_uploads, BULK_BODY_BYTES)
        return [[chunk[index] for index in part] for part in cut_requests(costs, budgets)]

    async def ask_at(bulk: list[str], depth: int, offset: int = 0) -> dict[str, Ranked]:
        """Each query's ranks (counted from the top) in its results ``offset+1..depth``."""
        answers = await client.search_bulk([body(query, depth, offset) for query in bulk])
        ranked: dict[str, Ranked] = {}
        for query, answer in zip(bulk, answers, strict=True):
            if isinstance(answer, crisscross_client.CrisscrossError):
                failures = sum(
                    isinstance(other, crisscross_client.CrisscrossError) for other in answers
                )
                raise type(answer)(
                    f"query {query!r} ({failures} of {len(bulk)} in its bulk failed): "
                    f"{answer.message}",
                    status=answer.status,
                    code=answer.code,
                    request_id=answer.request_id,
                    method=answer.method,
                    url=answer.url,
                )
            served_by.add(answer.variant, answer.bundle_version)
            if first.exclude_query and query in answer.ids:
                counters["exclude"] += 1
            if any(later > earlier for earlier, later in pairwise(answer.scores)):
                counters["order"] += 1
            ids = answer.ids[: depth - offset]
            ranks = first_ranks_of(tasks, query, ids)
            ranked[query] = (
                {name: None if rank is None else offset + rank for name, rank in ranks.items()},
                tuple(ids[:keep_top]),
                tuple(float(score) for score in answer.scores[: min(keep_top, len(ids))]),
            )
        return ranked

    first_depth = min(max(probe_k, keep_top), k)
    depths = [first_depth, *(depth for depth in (DEEPEN_AT,) if first_depth < depth < k)]
    depths += [k] if first_depth < k else []

    async def ask(bulk: list[str]) -> list[Ranked]:
        ranked = await ask_at(bulk, first_depth)
        for above, depth in pairwise(depths):
            missed = [query for query in bulk if None in ranked[query][0].values()]
            counters["deepened"] += len(missed)
            for deeper in bulks(missed, depth, above):
                for query, (ranks, _, _) in (await ask_at(deeper, depth, above)).items():
                    found = {
                        name: rank if rank is not None else ranks.get(name)
                        for name, rank in ranked[query][0].items()
                    }
                    ranked[query] = found, ranked[query][1], ranked[query][2]
        return [ranked[query] for query in bulk]

    names = ", ".join(task.name for task in tasks)
    with tqdm(total=len(queries), desc=f"search ({names})", disable=not show_progress) as bar:
        answers = await map_bounded(
            bulks(queries, first_depth), ask, concurrency, lambda bulk: bar.update(len(bulk))
        )
    ranked = [entry for bulk in answers for entry in bulk]
    rank_of = {query: ranks for query, (ranks, _, _) in zip(queries, ranked, strict=True)}
    logger.info(
        "%s: %d queries, %d pages asked deeper (down to %s)",
        names,
        len(queries),
        counters["deepened"],
        ", ".join(map(str, depths[1:])) or "-",
    )
    if counters["exclude"]:
        logger.warning("%d answers contained their excluded query id", counters["exclude"])
    if counters["order"]:
        logger.warning("%d answers had scores out of order", counters["order"])
    return RetrievalReplay(
        first_ranks={
            task.name: [rank_of[query][task.name] for query in task.queries] for task in tasks
        },
        served_by=served_by,
        exclude_violations=counters["exclude"],
        order_violations=counters["order"],
        top_ids=(
            {query: top for query, (_, top, _) in zip(queries, ranked, strict=True)}
            if keep_top
            else {}
        ),
        top_scores=(
            {query: scores for query, (_, _, scores) in zip(queries, ranked, strict=True)}
            if keep_top
            else {}
        ),
    )


@dataclass
class ScoreReplay:
    """What a score replay returns: one score per pair (input order) and who answered.

    Attributes:
        scores: float64 ``[len(pairs)]`` in input order.
        served_by: the variants and bundle versions that answered.
        uploads: image sides sent as uploads (base64 file bytes).
        requests: ``POST /v1/score`` requests sent.
    """

    scores: npt.NDArray[np.float64]
    served_by: ServedBy
    uploads: int = 0
    requests: int = 0


def _upload_bytes(side: PairSide) -> int:
    return side.encoded_size if isinstance(side, ImageFile) else 0


def score_batches(
    pairs: Sequence[tuple[PairSide, PairSide]],
    batch_size: int,
    max_uploads: int = 32,
    max_upload_bytes: int = 900_000,
) -> list[range]:
    """Split pairs into ``/v1/score`` requests.

    A request holds at most ``batch_size`` pairs, at most ``max_uploads`` upload sides and at
    most ``max_upload_bytes`` of base64 image data — except that a single pair is always sent,
    whatever its size (the service then answers 413 if it is over its limit).

    Returns:
        Consecutive index ranges covering ``range(len(pairs))``.
    """
    if batch_size < 1 or max_uploads < 2 or max_upload_bytes < 1:
        raise ValueError("need batch_size ≥ 1, max_uploads ≥ 2, max_upload_bytes ≥ 1")
    costs = [
        (
            1,
            isinstance(left, ImageFile) + isinstance(right, ImageFile),
            _upload_bytes(left) + _upload_bytes(right),
        )
        for left, right in pairs
    ]
    return cut_requests(costs, (batch_size, max_uploads, max_upload_bytes))


async def replay_scores(
    client: CrisscrossClient,
    pairs: Sequence[tuple[PairSide, PairSide]],
    *,
    batch_size: int = 1024,
    concurrency: int = 4,
    variant: str | None = None,
    show_progress: bool = True,
    max_uploads: int = 32,
    max_upload_bytes: int = 900_000,
) -> ScoreReplay:
    """Score every ``(left, right)`` pair with ``POST /v1/score``.

    Sides are JSON request sides, or :class:`~benchmarks.drivers.query_sides.ImageFile` uploads
    that are read and base64-encoded only when their request is built. Requests are cut by
    :func:`score_batches`.

    Returns:
        ``scores``: float64 ``[len(pairs)]`` in input order, and the request/upload counts.
    """
    batches = score_batches(pairs, batch_size, max_uploads, max_upload_bytes)
    served_by = ServedBy()

    async def ask(batch: range) -> list[float]:
        body = [(resolve_side(pairs[i][0]), resolve_side(pairs[i][1])) for i in batch]
        answer = await client.score(body, variant=variant)
        served_by.add(answer.variant, answer.bundle_version)
        return answer.scores

    with tqdm(total=len(batches), desc="score pairs", disable=not show_progress) as bar:
        answers = await map_bounded(batches, ask, concurrency, lambda _: bar.update(1))
    scores = np.array([value for batch in answers for value in batch], dtype=np.float64)
    uploads = sum(isinstance(side, ImageFile) for pair in pairs for side in pair)
    return ScoreReplay(scores=scores, served_by=served_by, uploads=uploads, requests=len(batches))

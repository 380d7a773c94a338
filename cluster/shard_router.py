"""Fan a query out to every shard, check what comes back, merge the top-k with the tie rule.

Ray-free: shards are reached through a :class:`ShardClient` (Ray Serve handles in
:mod:`cluster.shard_deployment`, in-process searchers or fakes in tests). Every shard is asked
concurrently for its own top ``offset + k`` (global rows); each answer must arrive within the
shard deadline and pass :func:`parse_shard_answer`, else that shard is *missing* for the
request — a timeout, a dead actor, any exception, a malformed or mis-ordered answer alike; no
shard failure escapes as an exception of another kind. Because every shard ranks its rows by
(score descending, global row ascending) and rows are disjoint, the first ``offset + k`` of the
merged streams are the unsplit collection's, ties included.

The policy (:data:`cluster.router_settings.MissingShardsPolicy`) decides what a request with
missing shards gets: ``fail`` raises :class:`ShardsUnavailableError`; ``partial`` answers from
the shards that answered and says which are missing — unless fewer than
``min_shards_answered`` answered, which raises all the same.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from cluster.router_settings import MissingShardsPolicy

logger = logging.getLogger(__name__)


class ShardClient(Protocol):
    """How the router reaches its shards. Either call may raise anything or never return;
    the router bounds each with its deadline and turns every failure into a missing shard."""

    async def search(
        self, shard: str, queries: np.ndarray, depth: int, include_metadata: bool
    ) -> object:
        """Shard ``shard``'s answer (see :mod:`cluster.shard_searcher`) for ``queries``."""
        ...

    async def health(self, shard: str) -> object:
        """Shard ``shard``'s health report (a mapping)."""
        ...


@dataclass(frozen=True)
class ShardSpec:
    """What the router knows of a shard: its name and its rows ``[row_offset, row_offset +
    count)``."""

    name: str
    row_offset: int
    count: int


@dataclass(frozen=True, slots=True)
class RoutedHit:
    """One merged result; ``row`` is the global row, ``rank`` 1-based."""

    rank: int
    row: int
    item_id: str
    score: float
    metadata: Mapping[str, object] | None


@dataclass(frozen=True)
class RoutedAnswer:
    """The merged pages (one per query) and the shards that did not answer (sorted by name)."""

    pages: list[list[RoutedHit]]
    missing: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Whether some shard's rows are absent from the answer."""
        return bool(self.missing)


@dataclass(frozen=True)
class ShardStatus:
    """A shard's health as the router sees it."""

    name: str
    ok: bool
    detail: Mapping[str, object] = field(default_factory=dict)
    reason: str | None = None


class ShardsUnavailableError(Exception):
    """Too few shards answered for the policy; ``missing`` names them."""

    def __init__(self, missing: Sequence[str], total: int) -> None:
        self.missing = tuple(missing)
        self.total = total
        super().__init__(
            f"{len(self.missing)} of {total} shards did not answer in time: "
            f"{', '.join(self.missing)}"
        )


class BadShardAnswerError(ValueError):
    """A shard's answer does not have the shape, rows or order it must."""


@dataclass(frozen=True, slots=True)
class _Hit:
    score: float
    row: int
    item_id: str
    metadata: Mapping[str, object] | None


def parse_shard_answer(
    answer: object, spec: ShardSpec, queries: int, depth: int, include_metadata: bool
) -> list[list[_Hit]]:
    """Check a shard's raw answer and return its pages; :class:`BadShardAnswerError` when it is
    not ``queries`` pages of exactly ``min(depth, count)`` hits each, with finite scores, rows
    of the shard's range, string ids, and (score desc, row asc) order."""
    if not isinstance(answer, Mapping):
        raise BadShardAnswerError("not a mapping")
    if answer.get("shard") != spec.name:
        raise BadShardAnswerError(f"answered as shard {answer.get('shard')!r}")
    pages = answer.get("pages")
    if not isinstance(pages, list) or len(pages) != queries:
        raise BadShardAnswerError(f"expected {queries} pages")
    expected = min(depth, spec.count)
    end = spec.row_offset + spec.count
    parsed = []
    for page in pages:
        if not isinstance(page, Mapping):
            raise BadShardAnswerError("a page is not a mapping")
        scores, rows, ids = page.get("scores"), page.get("rows"), page.get("ids")
        metadata = page.get("metadata")
        columns = (scores, rows, ids) + ((metadata,) if include_metadata else ())
        if not all(isinstance(column, list) and len(column) == expected for column in columns):
            raise BadShardAnswerError(f"a page does not hold {expected} hits")
        assert isinstance(scores, list)
        assert isinstance(rows, list)
        assert isinstance(ids, list)
        hits: list[_Hit] = []
        for position in range(expected):
            score, row, item_id = scores[position], rows[position], ids[position]
            meta = metadata[position] if include_metadata and isinstance(metadata, list) else None
            if not isinstance(score, float) or not math.isfinite(score):
                raise BadShardAnswerError("a score is not a finite float")
            if (
                isinstance(row, bool)
                or not isinstance(row, int)
                or not spec.row_offset <= row < end
            ):
                raise BadShardAnswerError(f"row {row!r} is outside the shard's rows")
            if not isinstance(item_id, str):
                raise BadShardAnswerError("an id is not a string")
            if include_metadata and not isinstance(meta, Mapping):
                raise BadShardAnswerError("metadata is not a mapping")
            if hits and (-hits[-1].score, hits[-1].row) >= (-score, row):
                raise BadShardAnswerError("hits are not ordered by score, then row")
            hits.append(_Hit(score, row, item_id, meta))
        parsed.append(hits)
    return parsed


def merge_pages(shard_pages: Sequence[Sequence[_Hit]], k: int, offset: int) -> list[RoutedHit]:
    """Ranks ``offset + 1`` to ``offset + k`` of the union of the shards' ordered pages, by
    score descending then global row ascending."""
    merged = heapq.merge(*shard_pages, key=lambda hit: (-hit.score, hit.row))
    return [
        RoutedHit(rank, hit.row, hit.item_id, hit.score, hit.metadata)
        for rank, hit in enumerate(itertools.islice(merged, offset, offset + k), start=offset + 1)
    ]


class ShardRouter:
    """Fans queries out to ``shards`` through ``client`` and merges their answers."""

    def __init__(
        self,
        shards: Sequence[ShardSpec],
        client: ShardClient,
        *,
        deadline_s: float,
        policy: MissingShardsPolicy,
        min_shards_answered: int = 1,
    ) -> None:
        if not shards:
            raise ValueError("a router needs at least one shard")
        if not 1 <= min_shards_answered <= len(shards):
            raise ValueError(
                f"min_shards_answered={min_shards_answered} must be 1..{len(shards)} "
                "(the number of shards)"
            )
        self.shards = list(shards)
        self.client = client
        self.deadline_s = deadline_s
        self.policy = policy
        self.min_shards_answered = min_shards_answered

    @property
    def total_count(self) -> int:
        """Rows of the whole collection."""
        return sum(spec.count for spec in self.shards)

    async def search(
        self, queries: np.ndarray, k: int, offset: int = 0, include_metadata: bool = True
    ) -> RoutedAnswer:
        """Ranks ``offset + 1`` to ``offset + k`` of each query (float32 ``[n, d]``, unit rows)
        over every shard that answered. Raises :class:`ShardsUnavailableError` as the policy
        says; nothing else a shard does makes it raise."""
        depth = offset + k
        asks = [self._ask(spec, queries, depth, include_metadata) for spec in self.shards]
        answers = await asyncio.gather(*asks)
        pairs = zip(self.shards, answers, strict=True)
        missing = tuple(spec.name for spec, pages in pairs if pages is None)
        answered = [pages for pages in answers if pages is not None]
        if missing and (self.policy == "fail" or len(answered) < self.min_shards_answered):
            raise ShardsUnavailableError(missing, len(self.shards))
        merged = [
            merge_pages([pages[query] for pages in answered], k, offset)
            for query in range(len(queries))
        ]
        return RoutedAnswer(merged, missing)

    async def _ask(
        self, spec: ShardSpec, queries: np.ndarray, depth: int, include_metadata: bool
    ) -> list[list[_Hit]] | None:
        try:
            answer = await asyncio.wait_for(
                self.client.search(spec.name, queries, depth, include_metadata), self.deadline_s
            )
            return parse_shard_answer(answer, spec, len(queries), depth, include_metadata)
        except TimeoutError:
            logger.warning("shard %s missed its %.3f s deadline", spec.name, self.deadline_s)
        except Exception as exc:  # any failure of a shard makes it missing, never a 500
            logger.warning("shard %s is missing: %s: %s", spec.name, type(exc).__name__, exc)
        return None

    async def statuses(self, timeout_s: float) -> list[ShardStatus]:
        """Every shard's health, asked concurrently, each within ``timeout_s``."""
        return list(await asyncio.gather(*(self._health(spec, timeout_s) for spec in self.shards)))

    async def _health(self, spec: ShardSpec, timeout_s: float) -> ShardStatus:
        try:
            report: Any = await asyncio.wait_for(self.client.health(spec.name), timeout_s)
        except TimeoutError:
            return ShardStatus(spec.name, ok=False, reason=f"no answer within {timeout_s:.3f} s")
        except Exception as exc:  # a dead or failing shard is reported, not raised
            return ShardStatus(spec.name, ok=False, reason=f"{type(exc).__name__}: {exc}"[:500])
        if not isinstance(report, Mapping) or report.get("status") != "ok":
            return ShardStatus(spec.name, ok=False, reason="unexpected health answer")
        return ShardStatus(spec.name, ok=True, detail=dict(report))

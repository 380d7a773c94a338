"""A collection whose shards other processes hold, as the service's engine searches it.

:class:`ServedShards` is one :class:`service.engine.collection.sharded_collections.
ShardedCollection`: at start it asks every shard what it holds (:class:`cluster.shard_searcher.
ShardFacts`), then gives each search a :class:`ServedShardsView` — the engine's
:class:`~service.engine.collection.sharded_view.ShardedView` over one :class:`RemoteShard` per
shard. The planner and the page executor are the service's own: filters, keywords, hybrid
fusion, re-rank by the exact vectors, pages and bulk work on a sharded collection as on any
other, through the one app (:func:`service.http.app.create_app`).

What the view adds is how it asks: the calls of one step (every shard's filter, every shard's
candidates, the hits of every shard holding rows of the page) go out at once, each bounded by
the shard deadline. A shard that errs or misses the deadline is *missing* for the rest of the
search. The policy decides: ``fail`` raises :class:`service.exceptions.ShardsUnavailableError`
(503 ``shards_unavailable`` naming them); ``partial`` goes on without them — their rows are
absent and the answer lists them in ``missing_shards`` — unless fewer than
``min_shards_answered`` are left. What a search cannot do without (stored vectors for a re-rank,
ids, keyword texts, an item's row) needs every shard, under either policy.

Ray-free: shards are reached through a :class:`ShardCalls` (Ray Serve handles in
:mod:`cluster.shard_deployment`; in-process shards in tests).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from cluster.shard_searcher import ShardFacts
from cluster.shard_settings import ShardSettings
from cluster.shard_split import ShardEntry, ShardMap
from formats.field_types import FieldType
from service.engine.collection.collection_view import CollectionView, SearchedOneByOne
from service.engine.collection.knn import SearchHit
from service.engine.collection.live_view import LiveFields
from service.engine.collection.sharded_collections import ShardState
from service.engine.collection.sharded_view import LEFT_OUT, LeftOut, ShardedView
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import Filterable
from service.engine.rank.fusion import Leg
from service.engine.rank.lexical_index import LexicalIndexes
from service.engine.rank.search_params import EffectiveParams, SearchOverride, resolve_facts
from service.exceptions import ShardsUnavailableError
from storage.columns import Mask

logger = logging.getLogger(__name__)

T = TypeVar("T")

CONNECT_RETRY_S = 0.5
"""Pause between two attempts to learn what a shard holds, while it may still be loading."""


class ShardCalls(Protocol):
    """How the front door reaches its shards, by shard name."""

    def call(self, shard: str, method: str, args: tuple[object, ...], timeout_s: float) -> Any:
        """The shard's answer to view method ``method(*args)`` (or ``describe``), within
        ``timeout_s``; raises on a timeout or any failure. Blocking."""
        ...

    async def health(self, shard: str) -> object:
        """The shard's health report (a mapping with ``status: ok``)."""
        ...


class RemoteShard(SearchedOneByOne):
    """One shard in another process, as a view: its facts answered here, its rows asked for."""

    def __init__(
        self, facts: ShardFacts, calls: ShardCalls, deadline_s: float, fields: Filterable
    ) -> None:
        self.facts = facts
        self._calls = calls
        self._deadline_s = deadline_s
        self._filterable = fields

    def _ask(self, method: str, *args: object) -> Any:
        return self._calls.call(self.facts.shard, method, args, self._deadline_s)

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.facts.collection

    @property
    def version(self) -> str:
        """The shard bundle's version."""
        return self.facts.version

    @property
    def rows(self) -> int:
        """The shard's rows (all alive: a bundle)."""
        return self.facts.rows

    @property
    def filterable(self) -> Filterable:
        """The shard's fields as empty typed columns."""
        return self._filterable

    @property
    def fields(self) -> Mapping[str, FieldType]:
        """The shard's fields."""
        return self.facts.fields

    @property
    def live(self) -> bool:
        """A shard bundle takes no writes."""
        return False

    @property
    def remote(self) -> bool:
        """Searched in another process."""
        return True

    @property
    def missing(self) -> tuple[str, ...]:
        """One shard is answered whole or not at all."""
        return ()

    def params(self, override: SearchOverride | None, where: str) -> EffectiveParams:
        """The shard index's parameters under ``override``, checked here."""
        return resolve_facts(self.facts.index, override, where)

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """Every row without a filter or exclusions (a bundle's rows are all alive), else the
        shard's mask."""
        if node is None and not exclude:
            return None
        return cast("Mask | None", self._ask("keep", node, tuple(exclude)))

    def kept_count(self, keep: Mask | None) -> int:
        """Rows ``keep`` holds."""
        return self.facts.rows if keep is None else int(np.count_nonzero(keep))

    def top(
        self, query: np.ndarray, wanted: int, keep: Mask | None, params: EffectiveParams
    ) -> Leg:
        """The shard's best ``wanted`` kept rows."""
        return cast("Leg", self._ask("top", query, wanted, keep, params))

    def field_texts(self, field: str, start: int, stop: int) -> list[str | None]:
        """The shard's texts of rows ``start .. stop - 1``."""
        return cast("list[str | None]", self._ask("field_texts", field, start, stop))

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """BM25 with the shard's own statistics (a sharded view scores with the whole
        collection's instead)."""
        return cast("tuple[Leg, int]", self._ask("keyword_leg", field, terms, keep, depth))

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> np.ndarray:
        """The shard's stored vectors of ``rows``."""
        return cast("np.ndarray", self._ask("vectors_of", rows))

    def row_of(self, item_id: str) -> int | None:
        """The shard's row of ``item_id``."""
        return cast("int | None", self._ask("row_of", item_id))

    def ids_of(self, rows: npt.NDArray[np.int64]) -> list[str]:
        """The shard's ids of ``rows``."""
        return cast("list[str]", self._ask("ids_of", rows))

    def hits(self, leg: Leg, offset: int) -> list[SearchHit]:
        """The shard's hits of ``leg``'s rows."""
        return cast("list[SearchHit]", self._ask("hits", leg, offset))


@dataclass(frozen=True, kw_only=True)
class ServedShardsView(ShardedView):
    """A sharded view for one search whose shards are asked at once, under the policy (see the
    module docstring)."""

    source_version: str
    pool: ThreadPoolExecutor = field(compare=False, repr=False)
    partial: bool
    min_answered: int
    deadline_s: float
    retry_after_s: int
    left_out: set[int] = field(default_factory=set, compare=False)
    """The shards (by position) this search goes on without."""

    @property
    def version(self) -> str:
        """The version of the bundle the shards were cut from."""
        return self.source_version

    @property
    def remote(self) -> bool:
        """Its shards are in other processes."""
        return True

    @property
    def missing(self) -> tuple[str, ...]:
        """The shards this search went on without, in shard order."""
        return tuple(self._names[number] for number in sorted(self.left_out))

    @cached_property
    def _names(self) -> list[str]:
        return [cast("RemoteShard", shard).facts.shard for shard in self.shards]

    def keep(self, node: Filter | None, exclude: Collection[str]) -> Mask | None:
        """None without a filter or exclusions (every shard's rows are alive), without asking."""
        if node is None and not exclude and not self.left_out:
            return None
        return super().keep(node, exclude)

    def keyword_leg(
        self, field: str, terms: list[str], keep: Mask | None, depth: int
    ) -> tuple[Leg, int]:
        """BM25 over the rows of the shards still answering (the keyword index, kept by the
        front door, holds every shard's texts: made on first use, which needs them all)."""
        if self.left_out:
            keep = self._without_left_out(keep)
        return super().keyword_leg(field, terms, keep, depth)

    def _without_left_out(self, keep: Mask | None) -> Mask:
        mask = np.ones(self.rows, dtype=np.bool_) if keep is None else keep.copy()
        start = 0
        for number, shard in enumerate(self.shards):
            if number in self.left_out:
                mask[start : start + shard.rows] = False
            start += shard.rows
        return mask

    def _asked(self, calls: Sequence[tuple[int, Callable[[], T]]]) -> list[T | LeftOut]:
        """Every call at once; a shard that fails or misses its deadline is left out."""
        futures: list[Future[T] | None] = [
            None if number in self.left_out else self.pool.submit(call) for number, call in calls
        ]
        answers: list[T | LeftOut] = []
        for (number, _), future in zip(calls, futures, strict=True):
            if future is None:
                answers.append(LEFT_OUT)
                continue
            try:
                # The call bounds itself by the deadline; the margin only guards a stuck one.
                answers.append(future.result(timeout=self.deadline_s + 1.0))
            except Exception as exc:  # any failure of a shard makes it missing, never a 500
                logger.warning(
                    "shard %s is missing: %s: %s", self._names[number], type(exc).__name__, exc
                )
                self.left_out.add(number)
                answers.append(LEFT_OUT)
        return answers

    def _refuse(self, why: str) -> ShardsUnavailableError:
        missing = self.missing
        return ShardsUnavailableError(
            f"shards {', '.join(missing)} of {len(self.shards)} did not answer within "
            f"{self.deadline_s * 1000:.0f} ms: {why}",
            missing,
            self.retry_after_s,
        )

    def each(self, calls: Sequence[tuple[int, Callable[[], T]]]) -> list[T | LeftOut]:
        """The answers, :data:`LEFT_OUT` for the shards missing where the policy allows."""
        answers = self._asked(calls)
        if self.left_out:
            if not self.partial:
                raise self._refuse("the collection's policy is 'fail'")
            answered = len(self.shards) - len(self.left_out)
            if answered < self.min_answered:
                raise self._refuse(
                    f"{answered} answered, the policy needs at least {self.min_answered}"
                )
        return answers

    def every(self, calls: Sequence[tuple[int, Callable[[], T]]]) -> list[T]:
        """The answers; every shard asked must give one, under either policy."""
        answers = self._asked(calls)
        if any(isinstance(answer, LeftOut) for answer in answers):
            raise self._refuse("this step needs every shard that holds the rows asked for")
        return cast("list[T]", answers)


class ServedShards:
    """A sharded collection: its map, its shards reached through ``calls``, and the policy."""

    def __init__(
        self,
        shard_map: ShardMap,
        calls: ShardCalls,
        settings: ShardSettings,
        *,
        embeds_queries: bool = True,
    ) -> None:
        settings.check_shard_count(len(shard_map.shards))
        self.shard_map = shard_map
        self.embeds_queries = embeds_queries
        """Whether the service loads the variant (see :class:`ShardedCollection`)."""
        self._calls = calls
        self._settings = settings
        self._shards: list[RemoteShard] | None = None
        self._lexical = LexicalIndexes()
        # Each search asks every shard at once: threads for a few dozen searches in flight.
        self._pool = ThreadPoolExecutor(
            max_workers=min(64, 8 * len(shard_map.shards)), thread_name_prefix="shards"
        )

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.shard_map.collection

    @property
    def bundle(self) -> str:
        """The bundle the shards were cut from."""
        return self.shard_map.source_bundle

    @property
    def bundle_version(self) -> str:
        """That bundle's version."""
        return self.shard_map.source_version

    @property
    def variant(self) -> str:
        """The variant that embedded it."""
        return self.shard_map.variant_name

    @property
    def variant_fingerprint(self) -> str:
        """That variant's fingerprint."""
        return self.shard_map.variant_fingerprint

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        return self.shard_map.dim

    @property
    def rows(self) -> int:
        """Every shard's rows."""
        return self.shard_map.total_count

    @property
    def missing_shards(self) -> str:
        """The policy: ``fail`` or ``partial``."""
        return self._settings.missing_shards

    @property
    def shard_deadline_ms(self) -> int:
        """How long a search waits for each shard."""
        return self._settings.shard_deadline_ms

    def connect(self) -> None:
        """Ask every shard what it holds, retrying while shards load, until
        ``connect_timeout_s``; RuntimeError when one cannot say or holds other rows than the
        map names."""
        settings = self._settings
        give_up = time.monotonic() + settings.connect_timeout_s
        facts: dict[str, ShardFacts] = {}
        last_error: Exception | None = None
        while len(facts) < len(self.shard_map.shards):
            for entry in self.shard_map.shards:
                if entry.name in facts:
                    continue
                try:
                    facts[entry.name] = self._described(entry)
                except ValueError:
                    raise
                except Exception as exc:  # still loading, or down: asked again below
                    last_error = exc
            if len(facts) < len(self.shard_map.shards):
                if time.monotonic() > give_up:
                    waiting = [e.name for e in self.shard_map.shards if e.name not in facts]
                    raise RuntimeError(
                        f"shards {', '.join(waiting)} did not say what they hold within "
                        f"{settings.connect_timeout_s:.0f} s: {last_error}"
                    )
                time.sleep(CONNECT_RETRY_S)
        first = facts[self.shard_map.shards[0].name]
        fields = LiveFields.of(self.name, first.fields)
        self._shards = [
            RemoteShard(facts[entry.name], self._calls, settings.shard_deadline_s, fields)
            for entry in self.shard_map.shards
        ]
        logger.info(
            "sharded collection %s: %d shards, %d rows", self.name, len(self._shards), self.rows
        )

    def _described(self, entry: ShardEntry) -> ShardFacts:
        facts = self._calls.call(entry.name, "describe", (), self._settings.health_timeout_s)
        if not isinstance(facts, ShardFacts):
            raise RuntimeError(f"shard {entry.name} answered {type(facts).__name__}")
        if facts.collection != self.name or facts.rows != entry.count:
            raise ValueError(
                f"shard {entry.name} holds {facts.rows} rows of {facts.collection!r}; the map "
                f"names {entry.count} rows of {self.name!r}"
            )
        return facts

    def view(self) -> CollectionView:
        """A view of the shards for one search."""
        if self._shards is None:
            raise RuntimeError(f"sharded collection {self.name!r} is not connected yet")
        settings = self._settings
        return ServedShardsView(
            collection_name=self.name,
            shards=self._shards,
            lexical=self._lexical,
            source_version=self.bundle_version,
            pool=self._pool,
            partial=settings.missing_shards == "partial",
            min_answered=settings.min_shards_answered,
            deadline_s=settings.shard_deadline_s,
            retry_after_s=settings.retry_after_s,
        )

    async def states(self) -> list[ShardState]:
        """Every shard's state, asked at once, each within ``health_timeout_ms``."""
        return list(await asyncio.gather(*(self._state(e) for e in self.shard_map.shards)))

    async def _state(self, entry: ShardEntry) -> ShardState:
        timeout_s = self._settings.health_timeout_s
        version, reason = entry.version, None
        try:
            report: Any = await asyncio.wait_for(self._calls.health(entry.name), timeout_s)
        except TimeoutError:
            reason = f"no answer within {timeout_s:.3f} s"
        except Exception as exc:  # a dead or failing shard is reported, not raised
            reason = f"{type(exc).__name__}: {exc}"[:500]
        else:
            if not isinstance(report, Mapping) or report.get("status") != "ok":
                reason = "unexpected health answer"
            else:
                version = str(report.get("version", version))
        return ShardState(
            entry.name, entry.row_offset, entry.count, version, reason is None, reason
        )

    def ready(self, states: Sequence[ShardState]) -> bool:
        """Every shard up under ``fail``; at least ``min_shards_answered`` under ``partial``."""
        up = sum(state.ok for state in states)
        if self._settings.missing_shards == "fail":
            return up == len(states)
        return up >= self._settings.min_shards_answered

    def close(self) -> None:
        """Stop the fan-out threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)
